package layout

import (
	"errors"
	"strconv"

	"github.com/flatkit/flatkit/internal/pkgerr"
)

// ErrUnknownPath is the cause (PathError.Err) when a path names nothing in
// the layout: no leaf, tied path or group, or, for Restructure, no leaf for
// a field of the struct.
var ErrUnknownPath = errors.New("unknown path")

// ErrShape is the cause (PathError.Err) when a path holds a leaf of another
// shape or size than the call was given: a struct field's tag or length in
// Restructure, a tensor of a file in LoadInto.
var ErrShape = errors.New("wrong shape")

// PathError is the error of a path the caller got wrong: one the layout does
// not hold, or one whose leaf has another shape than what came. Callers that
// branch on it use errors.As, and errors.Is with ErrUnknownPath or ErrShape:
//
//	var pe *layout.PathError
//	if errors.As(err, &pe) && errors.Is(err, layout.ErrUnknownPath) {
//		// pe.Path is not in the layout; pe.Want lists paths near it
//	}
//
// View, Range, Sub, Restructure, RestructureInPlace, Bind and LoadInto
// return one (Find reports a missing path by its boolean). Its message is
// the package prefix, Op, the quoted Path, the cause, what came and what
// was wanted:
//
//	layout: View "encoder.wieght": unknown path, want a path such as encoder.bias, encoder.weight
//	layout: LoadInto "0.weight": wrong shape: tensor "0.weight" of the file has [3 4], want [4 3]
type PathError struct {
	Op   string // the exported function or method: "View", "Restructure", "LoadInto", …
	Path string // the layout path, or the struct field's path ("Blocks.3.W")
	Err  error  // the cause: ErrUnknownPath, ErrShape, or nil
	Got  string // what came, if the cause does not say it all: `tensor "0.weight" of the file has [3 4]`
	Want string // what was wanted: "[4 3]", "a path such as encoder.bias"
}

func (e *PathError) Error() string {
	s := errs.Prefix
	if e.Op != "" {
		s += e.Op + " "
	}
	s += strconv.Quote(e.Path) + ":"
	sep := " "
	if e.Err != nil {
		s += sep + e.Err.Error()
		sep = ": "
	}
	if e.Got != "" {
		s += sep + e.Got
		sep = ", "
	} else if e.Err != nil {
		sep = ", "
	}
	if e.Want != "" {
		s += sep + "want " + e.Want
	}
	return s
}

// Unwrap returns the cause, for errors.Is.
func (e *PathError) Unwrap() error { return e.Err }

// The package prefix. Every error of the package reads "layout: " once,
// then the exported function and what was wrong (internal/pkgerr).
// Functions below the exported ones return errors without it, and the
// exported function adds it with wrap or errorf. A layout error keeps its
// prefix inside another package's message (Keep): "optimisers: Freeze:
// layout: Range …".
var errs = pkgerr.Package{Prefix: "layout: ", Keep: true}

// errorf is fmt.Errorf for the package's errors: format has no prefix, and
// arguments that are errors of this package are formatted without theirs.
func errorf(format string, args ...any) error { return errs.Errorf(format, args...) }

// wrap makes an error from inside the package an error of the exported
// function op. A *PathError takes op (its Error adds the prefix) and keeps
// its type; an empty op adds the prefix alone.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if pe, ok := err.(*PathError); ok {
		if pe.Op == "" {
			pe.Op = op
		}
		return pe
	}
	if op == "" {
		return errorf("%w", err)
	}
	return errorf("%s: %w", op, err)
}
