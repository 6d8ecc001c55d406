package odecheck_test

import (
	"errors"
	"fmt"

	"github.com/flatkit/flatkit/internal/odecheck"
	"github.com/flatkit/flatkit/ode"
)

// recorder is a T that prints what the checks report.
type recorder struct{}

func (recorder) Helper() {}
func (recorder) Errorf(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
}

func Example() {
	errBroken := errors.New("broken")
	failed := &ode.Error{Code: ode.Failed, Component: -1, Err: errBroken}
	odecheck.Cause(recorder{}, "a failed solve", failed, errBroken) // passes: prints nothing
	odecheck.Cause(recorder{}, "another error", errors.New("other"), errBroken)
	odecheck.Prefixed(recorder{}, failed, "ode: ", "broken", new(*ode.Error)) // passes
	// Output:
	// another error: other, want broken as the cause
}
