package ad

import "github.com/flatkit/flatkit/internal/pkgerr"

// The package prefix. Every error of the package reads "ad: ", the op and
// what was wrong, once (internal/pkgerr). Its errors can give their message
// without the prefix (Unprefixed). So a package that reports a tape's error
// inside its own message never reads "ode: … ad: …". ode's reads "ode:
// ADProblem: the right-hand side at t=0: Slice …". errors.Is and errors.As
// reach every cause through %w.
var errs = pkgerr.Package{Prefix: "ad: "}

// errorf is fmt.Errorf for the package's errors: format has no prefix, and
// arguments that are errors of this package are formatted without theirs.
func errorf(format string, args ...any) error { return errs.Errorf(format, args...) }
