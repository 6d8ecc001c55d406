package optimisers

import "github.com/flatkit/flatkit/internal/pkgerr"

// Errors. Every error of the package reads "optimisers: " and then where it
// happened and what was wrong ("optimisers: Chain: rule 1: Adam: Beta1 =
// 1.5, want 0 ≤ Beta1 < 1"). The prefix is added once (internal/pkgerr): an
// error made here carries its message without the prefix, Error adds it,
// and errorf, given such an error as an argument (a rule's Validate error
// inside a Chain, say), formats the message without it. So nothing is
// stripped from strings, and errors.Is and errors.As still reach every
// cause through the %w verbs.

const prefix = "optimisers: "

// errorf is fmt.Errorf for the package's errors: format has no prefix, and
// arguments that are errors of this package are formatted without theirs.
// Errors of other packages keep their own prefix ("optimisers: Freeze:
// layout: Range …").
func errorf(format string, args ...any) error { return pkgerr.Errorf(prefix, format, args...) }
