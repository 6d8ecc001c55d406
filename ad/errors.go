package ad

import "github.com/flatkit/flatkit/internal/pkgerr"

// The package prefix. Every error of the package reads "ad: ", the op and
// what was wrong, once (internal/pkgerr). Its errors can give their message
// without the prefix (Unprefixed), so a package that reports a tape's error
// inside its own message (ode: "ode: ADProblem: the right-hand side at t=0:
// Slice …") never reads "ode: … ad: …". errors.Is and errors.As reach every
// cause through %w.

const prefix = "ad: "

// errorf is fmt.Errorf for the package's errors: format has no prefix, and
// arguments that are errors of this package are formatted without theirs.
func errorf(format string, args ...any) error { return pkgerr.Errorf(prefix, format, args...) }
