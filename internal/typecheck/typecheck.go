package typecheck

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
)

// T is the part of *testing.T that Importer uses.
type T interface {
	Helper()
	Skipf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Importer is an importer of pkg and its dependencies from the export data
// that the go command builds for them. Without a go command it skips the
// test.
func Importer(t T, pkg string) types.Importer {
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

// Check parses and type-checks src, one file of a package, with imp. It
// returns the first syntax or type error, or nil.
func Check(imp types.Importer, src string) error {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		return err
	}
	_, err = (&types.Config{Importer: imp}).Check("p", fset, []*ast.File{file}, nil)
	return err
}

// A Use is a snippet, such as an option, and the targets, such as the
// calls, that it must compile with.
type Use struct {
	Src string
	To  []string
}

// Errorer is the part of *testing.T that Pairings uses.
type Errorer interface {
	Helper()
	Errorf(format string, args ...any)
}

// Pairings type-checks file(target, use.Src) for every target and use. The
// file must compile where use.To lists the target. Elsewhere it must fail
// with "does not implement": the use is not of the target's interface.
func Pairings(t Errorer, imp types.Importer, targets []string, uses []Use, file func(target, src string) string) {
	t.Helper()
	for _, u := range uses {
		for _, target := range targets {
			src := file(target, u.Src)
			err := Check(imp, src)
			switch applies := slices.Contains(u.To, target); {
			case applies && err != nil:
				t.Errorf("%s does not compile: %v", src, err)
			case !applies && err == nil:
				t.Errorf("%s compiles; want a type error", src)
			case !applies && !strings.Contains(err.Error(), "does not implement"):
				t.Errorf("%s: %v; want a type error saying the option does not implement the interface %s takes", src, err, target)
			}
		}
	}
}
