// Package pkgerr makes a package's errors with its prefix added once: an
// Error carries its message without the prefix, Error() adds it, and
// Errorf formats an argument that is an Error of the same package without
// its prefix, so nesting reads "ode: trajectory 3: max steps …", never
// "ode: trajectory 3: ode: …", and nothing is cut out of strings. errors.Is
// and errors.As reach every cause through %w.
//
// It is a leaf utility of internal/: it imports nothing of flatkit's and
// any package may use it (ad, optimisers and ode do).
package pkgerr
