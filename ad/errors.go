package ad

import "fmt"

// The package prefix. Every error of the package reads "ad: ", the op and
// what was wrong, once. An error made here (by errorf) can give its
// message without the prefix (Unprefixed): errorf formats a nested error of
// the package that way, and a package that reports a tape's error inside
// its own message (ode: "ode: ADProblem: the right-hand side at t=0:
// Slice …") does the same, so a message never reads "ad: … ad: …" or
// "ode: … ad: …". errors.Is and errors.As reach every cause through %w.

// pkgError is an error made by errorf: err holds the message without the
// prefix and the chain of causes.
type pkgError struct{ err error }

func (e *pkgError) Error() string { return "ad: " + e.err.Error() }

// Unprefixed is the message without the "ad: " prefix, for a package that
// reports it inside a message of its own.
func (e *pkgError) Unprefixed() string { return e.err.Error() }

func (e *pkgError) Unwrap() error { return e.err }

// bare shows an error of this package without its prefix, inside another
// of its messages; it unwraps to the error itself.
type bare struct{ e *pkgError }

func (b bare) Error() string { return b.e.Unprefixed() }
func (b bare) Unwrap() error { return b.e }

// errorf is fmt.Errorf for the package's errors: format has no prefix, and
// arguments that are errors of this package are formatted without theirs.
func errorf(format string, args ...any) error {
	for i, a := range args {
		if e, ok := a.(*pkgError); ok {
			args[i] = bare{e}
		}
	}
	return &pkgError{fmt.Errorf(format, args...)}
}
