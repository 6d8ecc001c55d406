// Package pkgerr makes a package's errors with its prefix added once.
//
// A package holds one Package value. Its Errorf makes an Error that keeps
// the message without the prefix and adds the prefix in Error. An argument
// that is an error of the same package is formatted without its prefix. So
// nesting reads "ode: trajectory 3: max steps …", never "ode: trajectory
// 3: ode: …", and nothing is cut out of strings. An error of another
// package keeps its own prefix, unless the package adopts such errors
// (Adopt) and the error allows it (Unprefixed). errors.Is and errors.As
// reach every cause through %w.
//
// It is a leaf utility of internal/: it imports nothing of flatkit's and
// any package may use it. ad, layout, model, ode and optimisers do.
package pkgerr
