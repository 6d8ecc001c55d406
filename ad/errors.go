package ad

import (
	"fmt"
	"slices"

	"github.com/flatkit/flatkit/internal/pkgerr"
)

// The package prefix. Every error of the package reads "ad: ", the op and
// what was wrong, once (internal/pkgerr). Its errors can give their message
// without the prefix (Unprefixed). So a package that reports a tape's error
// inside its own message never reads "odead: … ad: …". odead's reads
// "odead: Problem: the right-hand side at t=0: Slice …". errors.Is and
// errors.As reach every cause through %w.
var errs = pkgerr.Package{Prefix: "ad: "}

// errorf is fmt.Errorf for the package's errors: format has no prefix, and
// arguments that are errors of this package are formatted without theirs.
func errorf(format string, args ...any) error { return errs.Errorf(format, args...) }

func (v Var) failedOn(op string) Var {
	if v.t == nil {
		panic("ad: " + op + " of the zero Var")
	}
	if v.t.err == nil {
		v.t.check(op, v)
	}
	return v.t.failed()
}

func errRank(op string, s []int) error {
	return errorf("%s: rank of %v exceeds %d", op, s, maxRank)
}

// axisWant says which axes a shape of the given rank has, for an error
// (negative axes count from the end); a scalar has none.
func axisWant(rank int, each bool) string {
	switch {
	case rank == 0:
		return "no axis: a scalar has none"
	case each:
		return fmt.Sprintf("%d ≤ axis < %d for each", -rank, rank)
	}
	return fmt.Sprintf("%d ≤ axis < %d", -rank, rank)
}

func errAxis(op string, axes, s []int) error {
	// Copies, so that the callers' variadic axes need not escape.
	return errorf("%s: axes %v out of range for shape %v, want %s", op, slices.Clone(axes), slices.Clone(s), axisWant(len(s), true))
}
