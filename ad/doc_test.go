package ad

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocListsEveryOp checks that the package comment names every op: each
// exported function that returns a Var, except those that are not ops.
func TestDocListsEveryOp(t *testing.T) {
	notOps := map[string]bool{"Apply": true, "GradVar": true, "JVPVar": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var doc string
	var ops []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			doc += f.Doc.Text()
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || notOps[fn.Name.Name] || fn.Type.Results == nil {
				continue
			}
			if id, ok := fn.Type.Results.List[0].Type.(*ast.Ident); ok && id.Name == "Var" {
				ops = append(ops, fn.Name.Name)
			}
		}
	}
	if len(ops) < 50 {
		t.Fatalf("found %d ops, want more: is the parse right?", len(ops))
	}
	for _, op := range ops {
		if !regexp.MustCompile(`\b` + op + `\b`).MatchString(doc) {
			t.Errorf("the package comment does not name the op %s", op)
		}
	}
}
