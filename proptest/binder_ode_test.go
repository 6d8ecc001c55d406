package proptest_test

import (
	"context"
	"testing"

	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/ode"
)

// rates is a 100-leaf parameter struct: 10 blocks of 10 rate vectors.
type rates struct {
	Blocks [10]struct {
		A, B, C, D, E, F, G, H, I, J []float32
	}
}

// A layout.Binder restructures a struct local to an ODE right-hand side on
// every call without allocating: a warm Integrator's solve allocates
// nothing. (With layout.Restructure the struct escapes through its any:
// one allocation per call of F.)
func TestBinderInODERightHandSide(t *testing.T) {
	it, θ := binderIntegrator(t)
	run := func() {
		if err := it.Reinit([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0, 2, θ); err != nil {
			t.Fatal(err)
		}
		if err := it.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if a := testing.AllocsPerRun(20, run); a != 0 {
		t.Errorf("a solve whose F binds a 100-leaf struct allocates %v times, want 0", a)
	}
	if it.Stats().FEvals < 20 {
		t.Errorf("only %d evaluations of F", it.Stats().FEvals)
	}
}

func binderIntegrator(t testing.TB) (*ode.Integrator[float64], []float32) {
	var proto rates
	for i := range proto.Blocks {
		b := &proto.Blocks[i]
		for j, f := range []*[]float32{&b.A, &b.B, &b.C, &b.D, &b.E, &b.F, &b.G, &b.H, &b.I, &b.J} {
			*f = make([]float32, 1+j)
			(*f)[0] = 0.1 * float32(i+1)
		}
	}
	θ, lay, err := layout.Destructure(&proto)
	if err != nil {
		t.Fatal(err)
	}
	bind, err := layout.Bind[rates](lay, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := func(du, u []float64, p []float32, _ float64) {
		var r rates // local: with a Binder it stays on the stack
		if err := bind.Restructure(p, &r); err != nil {
			panic(err)
		}
		for i := range du {
			du[i] = -float64(r.Blocks[i].A[0]) * u[i]
		}
	}
	it, err := ode.NewIntegrator(ode.Problem[float64]{F: f, U0: make([]float64, 10), T1: 2, P: θ}, ode.Tsit5())
	if err != nil {
		t.Fatal(err)
	}
	return it, θ
}

// BenchmarkBinderInODESolve: one Tsit5 solve of 10 decays whose rates F
// reads by name from a 100-leaf struct restructured on every call.
func BenchmarkBinderInODESolve(b *testing.B) {
	it, θ := binderIntegrator(b)
	u0 := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	b.ReportAllocs()
	for b.Loop() {
		if err := it.Reinit(u0, 0, 2, θ); err != nil {
			b.Fatal(err)
		}
		if err := it.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
