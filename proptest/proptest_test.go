package proptest_test

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/proptest"
)

// recorder is a T that keeps what a checker reported.
type recorder struct {
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.fatal = true
	panic(r) // stop the checker as testing.T.FailNow would
}

func run(check func(proptest.T)) (r *recorder) {
	r = &recorder{}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	check(r)
	return r
}

func TestCheckRoundTripReports(t *testing.T) {
	type ok struct {
		W []float32 `flat:"shape=2"`
		B []float32
	}
	if r := run(func(t proptest.T) { proptest.CheckRoundTrip(t, &ok{B: []float32{1}}) }); len(r.errors) > 0 {
		t.Errorf("a good struct failed: %v", r.errors)
	}
	type bad struct{ W [2]float32 }
	r := run(func(t proptest.T) { proptest.CheckRoundTrip(t, &bad{}) })
	if !r.fatal || len(r.errors) != 1 || !strings.Contains(r.errors[0], "[2]float32") {
		t.Errorf("a struct that cannot destructure: got %v", r.errors)
	}
}

func TestCheckSaveLoadReportsMismatch(t *testing.T) {
	lay, err := layout.NewBuilder().Add("w", 3).Build()
	if err != nil {
		t.Fatal(err)
	}
	if r := run(func(t proptest.T) { proptest.CheckSaveLoad(t, lay, []float32{1, 2, 3}) }); len(r.errors) > 0 {
		t.Errorf("a good buffer failed: %v", r.errors)
	}
	r := run(func(t proptest.T) { proptest.CheckSaveLoad(t, lay, []float32{1, 2}) })
	if !r.fatal {
		t.Errorf("a buffer of the wrong length passed: %v", r.errors)
	}
}

func TestGenerators(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := proptest.LayoutSpecs().Draw(t, "layout")
		θ := proptest.Params(spec.Layout).Draw(t, "θ")
		if len(θ) != spec.Layout.Len() {
			t.Fatalf("Params drew %d values for a layout of %d", len(θ), spec.Layout.Len())
		}
		for _, x := range θ {
			if a := abs(x); a < 1.0/64 || a > 4 {
				t.Fatalf("Params drew %v, want ±[1/64, 4]", x)
			}
		}
		p := proptest.Structs().Draw(t, "struct")
		if _, err := layout.Of(p); err != nil {
			t.Fatalf("Structs drew a struct that does not destructure: %v", err)
		}
	})
}

func abs(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// A user's own struct, checked the way a user's test suite would.
type Kinetics struct {
	Rates  []float32 `flat:"shape=4"`
	Init   []float32 `flat:"shape=2"`
	Solver string
}

func TestUserStructRoundTrips(t *testing.T) {
	proptest.CheckRoundTrip(t, &Kinetics{Rates: []float32{1.5, 1, 3, 1}, Init: []float32{1, 1}})
}

// printT stands in for the *testing.T a real suite passes.
type printT struct{ failed bool }

func (p *printT) Helper()                   {}
func (p *printT) Errorf(f string, a ...any) { p.failed = true; fmt.Printf(f+"\n", a...) }
func (p *printT) Fatalf(f string, a ...any) { p.Errorf(f, a...); panic("fatal") }

func ExampleCheckRoundTrip() {
	t := &printT{}
	proptest.CheckRoundTrip(t, &Kinetics{Rates: []float32{1.5, 1, 3, 1}, Init: []float32{1, 1}})
	fmt.Println("failed:", t.failed)
	// Output: failed: false
}
