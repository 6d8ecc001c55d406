package pkgerr

import "fmt"

// Unprefixed is an error that can give its message without its package's
// prefix. A package that adopts such errors (Package.Adopt) shows them that
// way inside its own messages.
type Unprefixed interface {
	error
	Unprefixed() string
}

// Package makes the errors of one package. A package holds one Package
// value and makes every error of its own with Errorf.
type Package struct {
	// Prefix begins every error of the package: "ode: ".
	Prefix string
	// Keep makes the package's errors keep their prefix inside other
	// packages' messages: they have no Unprefixed method. model's errors
	// do, so that ode's message still says which package failed.
	Keep bool
	// Adopt shows every Unprefixed error without its prefix inside the
	// package's messages, not only the package's own. ode adopts ad's
	// errors: "ode: the ad right-hand side: Slice …", never "… ad: …".
	Adopt bool
}

// Errorf is fmt.Errorf for the package's errors; format has no prefix. An
// argument that Text shows without its prefix is formatted that way, and
// it stays reachable with errors.Is and errors.As through %w. Errorf
// modifies args.
func (p Package) Errorf(format string, args ...any) error {
	for i, a := range args {
		if err, ok := a.(error); ok {
			if msg, ok := p.bare(err); ok {
				args[i] = bare{err, msg}
			}
		}
	}
	e := &Error{p.Prefix, fmt.Errorf(format, args...)}
	if p.Keep {
		return &kept{e}
	}
	return e
}

// Text is err's message as the package's messages show it. An error the
// package made loses its prefix, and so does an Unprefixed one if the
// package adopts them. Any other error keeps its whole message.
func (p Package) Text(err error) string {
	if msg, ok := p.bare(err); ok {
		return msg
	}
	return err.Error()
}

// Of reports whether the package made err. An error that wraps one of the
// package's does not count.
func (p Package) Of(err error) bool {
	_, ok := p.own(err)
	return ok
}

// own returns err as an Error if the package made it.
func (p Package) own(err error) (*Error, bool) {
	switch e := err.(type) {
	case *Error:
		return e, e.Prefix == p.Prefix
	case *kept:
		return e.e, e.e.Prefix == p.Prefix
	}
	return nil, false
}

// bare returns err's message without its prefix, if Text leaves it out.
func (p Package) bare(err error) (string, bool) {
	if e, ok := p.own(err); ok {
		return e.Err.Error(), true
	}
	if u, ok := err.(Unprefixed); ok && p.Adopt {
		return u.Unprefixed(), true
	}
	return "", false
}

// Error is an error of the package whose prefix it holds. Err holds the
// message without the prefix and the chain of causes.
type Error struct {
	Prefix string
	Err    error
}

func (e *Error) Error() string { return e.Prefix + e.Err.Error() }

// Unprefixed is the message without the prefix.
func (e *Error) Unprefixed() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// kept is an Error of a package whose errors keep their prefix (Keep): it
// has no Unprefixed method.
type kept struct{ e *Error }

func (k *kept) Error() string { return k.e.Error() }
func (k *kept) Unwrap() error { return k.e.Err }

// bare shows an error without its prefix inside another message. It
// unwraps to the error itself.
type bare struct {
	err error
	msg string
}

func (b bare) Error() string { return b.msg }
func (b bare) Unwrap() error { return b.err }

// Errorf is Package{Prefix: prefix}.Errorf.
func Errorf(prefix, format string, args ...any) error {
	return Package{Prefix: prefix}.Errorf(format, args...)
}

// Of is Package{Prefix: prefix}.Of.
func Of(err error, prefix string) bool { return Package{Prefix: prefix}.Of(err) }
