// Package bitwise compares float slices bit for bit. It serves the tests
// that pin results as identical: on any number of goroutines, replayed or
// recorded anew, resumed or run through. Unlike ==, it tells −0 from +0
// and a NaN from another NaN. It is a leaf utility any package may use.
package bitwise
