package proptest_test

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

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
		{"proptest.Steps(1e-2)", proptest.Steps(1e-2), fdChecks},
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
	imp := exportImporter(t, "github.com/flatkit/flatkit/proptest")
	for _, u := range optionUses() {
		for _, name := range everyCheck {
			src := fmt.Sprintf(checkSource[name], u.src)
			err := typeCheck(imp, src)
			switch applies := slices.Contains(u.to, name); {
			case applies && err != nil:
				t.Errorf("%s does not compile: %v", src, err)
			case !applies && err == nil:
				t.Errorf("%s compiles; want a type error", src)
			case !applies && !strings.Contains(err.Error(), "does not implement"):
				t.Errorf("%s: %v; want a type error saying the option does not implement the check's option interface", src, err)
			}
		}
	}
}

// typeCheck type-checks the statement call in a function beside the
// variables it may use.
func typeCheck(imp types.Importer, call string) error {
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
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		return err
	}
	_, err = (&types.Config{Importer: imp}).Check("p", fset, []*ast.File{file}, nil)
	return err
}

// exportImporter is an importer of pkg and its dependencies from the
// export data that the go command builds for them.
func exportImporter(t *testing.T, pkg string) types.Importer {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build export data: %v", err)
	}
	out, err := exec.Command(goCmd, "list", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -export %s: %v", pkg, err)
	}
	files := map[string]string{}
	for line := range strings.Lines(string(out)) {
		path, file, _ := strings.Cut(strings.TrimSpace(line), "=")
		files[path] = file
	}
	return importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		file, ok := files[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
}
