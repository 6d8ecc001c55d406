package typecheck_test

import (
	"fmt"
	"go/importer"
	"strings"

	"github.com/flatkit/flatkit/internal/typecheck"
)

func Example() {
	imp := importer.Default()
	ok := typecheck.Check(imp, `package p; import "strings"; var _ string = strings.ToUpper("a")`)
	bad := typecheck.Check(imp, `package p; import "strings"; var _ int = strings.ToUpper("a")`)
	fmt.Println(ok == nil, bad != nil && strings.Contains(bad.Error(), "cannot use"))
	// Output: true true
}
