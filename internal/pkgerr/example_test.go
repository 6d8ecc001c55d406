package pkgerr_test

import (
	"errors"
	"fmt"

	"github.com/flatkit/flatkit/internal/pkgerr"
)

// An error of package ode wrapped in another of ode's keeps one prefix,
// and its causes stay reachable.
func ExamplePackage_Errorf() {
	ode := pkgerr.Package{Prefix: "ode: "}
	errSteps := errors.New("max steps 1000 reached")
	inner := ode.Errorf("t = 4.5: %w", errSteps)
	outer := ode.Errorf("trajectory 3: %w", inner)
	fmt.Println(outer)
	fmt.Println(errors.Is(outer, inner), errors.Is(outer, errSteps))
	fmt.Println(ode.Of(outer), pkgerr.Of(outer, "ad: "))
	// Output:
	// ode: trajectory 3: t = 4.5: max steps 1000 reached
	// true true
	// true false
}

// A package that adopts other packages' errors shows them without their
// prefix, unless their package keeps it.
func ExamplePackage_adopt() {
	ad := pkgerr.Package{Prefix: "ad: "}
	model := pkgerr.Package{Prefix: "model: ", Keep: true}
	ode := pkgerr.Package{Prefix: "ode: ", Adopt: true}
	fmt.Println(ode.Errorf("the right-hand side: %w", ad.Errorf("Slice: bad range")))
	fmt.Println(ode.Errorf("the right-hand side: %w", model.Errorf("Dense: bad shape")))
	// Output:
	// ode: the right-hand side: Slice: bad range
	// ode: the right-hand side: model: Dense: bad shape
}
