package proptest_test

import (
	"fmt"
	"testing"

	"github.com/flatkit/flatkit/internal/typecheck"
	"github.com/flatkit/flatkit/internal/wrongcube"
	"github.com/flatkit/flatkit/proptest"
)

// optionUse is one option, as a value and as Go source, with the checks it
// applies to.
type optionUse struct {
	src string
	opt any
	to  []string
}

var (
	fdChecks    = []string{"CheckGrad", "CheckJVP", "CheckHVP"}
	everyCheck  = append([]string{"CheckTranspose"}, fdChecks...)
	checkSource = map[string]string{
		"CheckGrad":      "proptest.CheckGrad(t, f, θ, %s)",
		"CheckJVP":       "proptest.CheckJVP(t, f, θ, %s)",
		"CheckHVP":       "proptest.CheckHVP(t, f, θ, %s)",
		"CheckTranspose": "proptest.CheckTranspose(t, f, θ, %s)",
	}
)

func optionUses() []optionUse {
	return []optionUse{
		{"proptest.Steps(1e-2, 5e-3)", proptest.Steps(1e-2, 5e-3), fdChecks},
		{"proptest.Tol(2e-2, 2e-3)", proptest.Tol(2e-2, 2e-3), fdChecks},
		{"proptest.TransposeTol(1e-4, 1e-6)", proptest.TransposeTol(1e-4, 1e-6), []string{"CheckTranspose"}},
		{"proptest.Exact()", proptest.Exact(), []string{"CheckTranspose"}},
		{"proptest.Directions(2)", proptest.Directions(2), everyCheck},
		{"proptest.FullUpTo(2)", proptest.FullUpTo(2), everyCheck},
		{"proptest.Option(nil)", proptest.Option(nil), everyCheck}, // skipped
		{"nil", nil, everyCheck}, // skipped
	}
}

// Every check runs with the options that apply to it, and a nil option is
// skipped. (The options' types keep the others out; see the test below.)
func TestADCheckersTakeOptionsThatApply(t *testing.T) {
	right := wrongcube.New(1, 1, 1)
	θ := []float32{0.25, -0.375, 0.5, 0.125} // dyadic, for Exact
	// The comma-ok assertions turn an untyped nil into a nil interface.
	checks := map[string]func(proptest.T, any){
		"CheckGrad": func(t proptest.T, o any) {
			fd, _ := o.(proptest.FDCheckOption)
			proptest.CheckGrad(t, cubeLoss(right), θ, fd)
		},
		"CheckJVP": func(t proptest.T, o any) {
			fd, _ := o.(proptest.FDCheckOption)
			proptest.CheckJVP(t, cubeMap(right), θ, fd)
		},
		"CheckHVP": func(t proptest.T, o any) {
			fd, _ := o.(proptest.FDCheckOption)
			proptest.CheckHVP(t, cubeLoss(right), θ, fd)
		},
		"CheckTranspose": func(t proptest.T, o any) {
			tr, _ := o.(proptest.TransposeCheckOption)
			proptest.CheckTranspose(t, scaledCopyMap(&scaledCopy{vjp: 1}), θ, tr)
		},
	}
	for _, u := range optionUses() {
		for _, name := range u.to {
			if r := run(func(t proptest.T) { checks[name](t, u.opt) }); len(r.errors) > 0 {
				t.Errorf("%s given to %s: %v, want no error", u.src, name, r.errors)
			}
		}
	}
}

// An option that does not apply to a check does not compile: each check
// with each option is type-checked against proptest's export data.
func TestOptionsThatDoNotApplyDoNotCompile(t *testing.T) {
	imp := typecheck.Importer(t, "github.com/flatkit/flatkit/proptest")
	var uses []typecheck.Use
	for _, u := range optionUses() {
		uses = append(uses, typecheck.Use{Src: u.src, To: u.to})
	}
	typecheck.Pairings(t, imp, everyCheck, uses, func(target, src string) string {
		return fileOf(fmt.Sprintf(checkSource[target], src))
	})
}

// fileOf is a Go file with the statement call in a function beside the
// variables it may use.
func fileOf(call string) string {
	src := `package p

import (
	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/proptest"
)

var (
	t proptest.T
	f func(ad.Var) ad.Var
	θ []float32
)

func _() { ` + call + ` }
`
	return src
}
