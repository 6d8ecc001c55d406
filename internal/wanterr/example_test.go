package wanterr_test

import (
	"errors"
	"fmt"

	"github.com/flatkit/flatkit/internal/wanterr"
)

// printTB prints what a *testing.T would report.
type printTB struct{}

func (printTB) Helper() {}
func (printTB) Fatalf(format string, args ...any) {
	fmt.Printf("FATAL: "+format+"\n", args...)
}
func (printTB) Errorf(format string, args ...any) {
	fmt.Printf("ERROR: "+format+"\n", args...)
}

// In a test, t is the *testing.T; here a TB that prints shows what
// Mentions reports: each missing fragment, or the missing error.
func ExampleMentions() {
	var t printTB
	err := errors.New(`layout: "0.weight" has shape [3 4], want [4 3]`)
	wanterr.Mentions(t, err, `"0.weight"`, "[4 3]") // passes: reports nothing
	wanterr.Mentions(t, err, "bias")
	wanterr.Mentions(t, nil, "shape")
	// Output:
	// ERROR: error "layout: \"0.weight\" has shape [3 4], want [4 3]" does not mention "bias"
	// FATAL: no error, want one mentioning ["shape"]
}
