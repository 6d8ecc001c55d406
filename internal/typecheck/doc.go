// Package typecheck type-checks small Go files against flatkit's packages
// from tests. ode, proptest and model use it to show that an option given
// to a call it does not apply to is a compile error, which a run-time test
// cannot show. It imports nothing of flatkit's.
package typecheck
