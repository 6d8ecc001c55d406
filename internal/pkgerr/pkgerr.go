package pkgerr

import "fmt"

// Unprefixed is an error that can give its message without its package's
// prefix.
type Unprefixed interface {
	error
	Unprefixed() string
}

// Error is an error of the package whose prefix it holds ("ode: "); Err
// holds the message without it and the chain of causes.
type Error struct {
	Prefix string
	Err    error
}

func (e *Error) Error() string { return e.Prefix + e.Err.Error() }

// Unprefixed is the message without the prefix, for a message of its own
// package or of one that reports it inside its own words.
func (e *Error) Unprefixed() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// Bare shows an error without its prefix inside another's message; it
// unwraps to the error itself.
type Bare struct{ E Unprefixed }

func (b Bare) Error() string { return b.E.Unprefixed() }
func (b Bare) Unwrap() error { return b.E }

// Errorf is fmt.Errorf for the errors of the package with prefix: format
// has no prefix, and arguments that are Errors of the same package are
// formatted without theirs (args is modified). Errors of other packages
// keep their own prefix.
func Errorf(prefix, format string, args ...any) error {
	for i, a := range args {
		if e, ok := a.(*Error); ok && e.Prefix == prefix {
			args[i] = Bare{e}
		}
	}
	return &Error{prefix, fmt.Errorf(format, args...)}
}

// Of reports whether err is an Error made with prefix (not one wrapping
// it).
func Of(err error, prefix string) bool {
	e, ok := err.(*Error)
	return ok && e.Prefix == prefix
}
