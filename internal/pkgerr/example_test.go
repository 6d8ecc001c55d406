package pkgerr_test

import (
	"errors"
	"fmt"

	"github.com/flatkit/flatkit/internal/pkgerr"
)

// An error of package ode wrapped in another of ode's keeps one prefix,
// and its causes stay reachable.
func ExampleErrorf() {
	errSteps := errors.New("max steps 1000 reached")
	inner := pkgerr.Errorf("ode: ", "t = 4.5: %w", errSteps)
	outer := pkgerr.Errorf("ode: ", "trajectory 3: %w", inner)
	fmt.Println(outer)
	fmt.Println(errors.Is(outer, inner), errors.Is(outer, errSteps))
	fmt.Println(pkgerr.Of(outer, "ode: "), pkgerr.Of(outer, "ad: "))
	// Output:
	// ode: trajectory 3: t = 4.5: max steps 1000 reached
	// true true
	// true false
}
