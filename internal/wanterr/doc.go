// Package wanterr checks, in the tests of any package, that a call failed
// and that its error says what it should. The text must mention every
// fragment: a name, a path, what came and what was wanted. It is a leaf
// utility: it imports nothing of flatkit's.
package wanterr
