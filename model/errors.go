package model

import (
	"strconv"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/pkgerr"
)

// The package prefix. Every error of the package reads "model: " once,
// then where and what (internal/pkgerr). A container that names the
// failing layer's path ("model: 1.0: Dense(4, 5): …") puts the path after
// the prefix without cutting anything out of a string. Unlike ad's and
// optimisers' errors, a model error keeps its prefix inside another
// package's message (Keep): ode's ad right-hand side keeps the "model: "
// that says which package failed.
var errs = pkgerr.Package{Prefix: "model: ", Keep: true}

// errorf is fmt.Errorf for the package's errors: format has no prefix, and
// arguments that are errors of this package are formatted without theirs.
func errorf(format string, args ...any) error { return errs.Errorf(format, args...) }

// pathError is an error of the layer at a layout path inside containers
// ("1.0"), so the message names the layer the way the layout names its
// parameters: "model: 1.0: Conv: …", not "1: 0: Conv: …". A configuration
// error gets its "model: " from Layout; an error recorded while applying
// the layer (applied) carries it itself, once, before the path.
type pathError struct {
	path    string
	err     error
	applied bool
}

func (e *pathError) Error() string {
	if !e.applied {
		return e.path + ": " + e.err.Error()
	}
	// Text drops the prefix of a model error only: an ad op's keeps its own.
	return errs.Prefix + e.path + ": " + errs.Text(e.err)
}

func (e *pathError) Unwrap() error { return e.err }

// atIndex places err at child index i of a container, joining the index
// onto the path of an error that already has one.
func atIndex(i int, err error) error {
	if pe, ok := err.(*pathError); ok {
		return &pathError{path: strconv.Itoa(i) + "." + pe.path, err: pe.err, applied: pe.applied}
	}
	return &pathError{path: strconv.Itoa(i), err: err}
}

// nameFailure names child i of a container in the error x's tape
// recorded while the child was applied (clean: the tape had none
// before), as atIndex names a configuration error.
func nameFailure(x ad.Var, clean bool, i int) {
	t := x.Tape()
	if !clean || t == nil || t.Err() == nil {
		return
	}
	t.WrapErr(func(err error) error {
		pe := atIndex(i, err).(*pathError)
		pe.applied = true
		return pe
	})
}

// tapeClean reports whether x's tape has no error yet.
func tapeClean(x ad.Var) bool {
	t := x.Tape()
	return t != nil && t.Err() == nil
}
