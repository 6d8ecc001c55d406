package odead_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// Robertson's chemical kinetics written with ad ops: its exact Jacobian
// for the stiff methods, against ode's tests of the other sources.

// robertsonAD is Robertson written with ad ops (float32).
func robertsonAD(u, _ ad.Var, _ float64) ad.Var {
	y1, y2, y3 := ad.Slice(u, 0, 1), ad.Slice(u, 1, 2), ad.Slice(u, 2, 3)
	r1 := ad.Scale(y1, 0.04)
	r2 := ad.Scale(ad.Mul(y2, y3), 1e4)
	r3 := ad.Scale(ad.Square(y2), 3e7)
	return ad.Concat(0, ad.Sub(r2, r1), ad.Sub(ad.Sub(r1, r2), r3), r3)
}

// robertson and robertsonJac are Robertson in plain Go (float32), as
// ode's tests write it.
func robertson(du, u []float32, _ []float32, _ float64) {
	du[0] = -0.04*u[0] + 1e4*u[1]*u[2]
	du[1] = 0.04*u[0] - 1e4*u[1]*u[2] - 3e7*u[1]*u[1]
	du[2] = 3e7 * u[1] * u[1]
}

func robertsonJac(J, u []float32, _ []float32, _ float64) {
	J[0], J[1], J[2] = -0.04, 1e4*u[2], 1e4*u[1]
	J[3], J[4], J[5] = 0.04, -1e4*u[2]-6e7*u[1], -1e4*u[1]
	J[6], J[7], J[8] = 0, 6e7*u[1], 0
}

// robertsonRef1e5 is y(1e5): Test Set for IVP Solvers (Bari).
var robertsonRef1e5 = []float64{1.786592114216759e-02, 7.274751468464565e-08, 9.821340061103143e-01}

// robertsonBound bounds the weighted error of the solves, as
// robertsonBound in ode's tests (which says why).
const robertsonBound = 30

var stiffMethods = []ode.Method{ode.Rosenbrock23(), ode.Rodas5P()}

// TestJacobianFromFunc: Func's Jacobian from ad gives the solution within
// the tolerance, as the user's Jacobian and finite differences do (ode's
// TestJacobianSources; float32 state).
func TestJacobianFromFunc(t *testing.T) {
	prob := odead.Func(robertsonAD, 3)
	prob.U0, prob.T1 = []float32{1, 0, 0}, 1e5
	for _, m := range stiffMethods {
		sol, err := ode.Solve(context.Background(), prob, m, ode.Tol(1e-4, 1e-8))
		if err != nil {
			t.Fatalf("%s ad: %v", m.Name(), err)
		}
		u := sol.U[1]
		var s float64 // RMS of (u − ref)/(atol + rtol·|ref|): the solver's own norm
		for i, r := range robertsonRef1e5 {
			e := (float64(u[i]) - r) / (1e-8 + 1e-4*math.Abs(r))
			s += e * e
		}
		w := math.Sqrt(s / 3)
		st := sol.Stats
		t.Logf("%-12s ad: u = %v, weighted error %.3g; %d steps (%d rejected), %d f, %d J", m.Name(), u, w, st.Accepted, st.Rejected, st.FEvals, st.JacEvals)
		if w > robertsonBound {
			t.Errorf("%s ad float32: weighted error %.3g", m.Name(), w)
		}
	}
}

// Problem's F and Jac are Robertson's; parameters reach f; a failing f
// is reported up front by Problem, and by Func's Err.
func TestProblem(t *testing.T) {
	prob, err := odead.Problem(robertsonAD, []float32{1, 0, 0}, 0, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	J := make([]float32, 9)
	u := []float32{0.9, 2e-5, 0.1}
	prob.Jac(J, u, nil, 0)
	want := make([]float32, 9)
	robertsonJac(want, u, nil, 0)
	for i := range J {
		if d := math.Abs(float64(J[i] - want[i])); d > 1e-5*math.Abs(float64(want[i]))+1e-6 {
			t.Errorf("J[%d] = %g, want %g", i, J[i], want[i])
		}
	}
	du, dw := make([]float32, 3), make([]float32, 3)
	prob.F(du, u, nil, 0)
	robertson(dw, u, nil, 0)
	for i := range du {
		if d := math.Abs(float64(du[i] - dw[i])); d > 1e-6*math.Abs(float64(dw[i]))+1e-9 {
			t.Errorf("du[%d] = %g, want %g", i, du[i], dw[i])
		}
	}
	// Parameters reach f as a constant of shape [len(p)].
	decayAD := func(u, p ad.Var, _ float64) ad.Var { return ad.Neg(ad.Mul(p, u)) }
	pr, err := odead.Problem(decayAD, []float32{1}, 0, 1, []float32{2})
	if err != nil {
		t.Fatal(err)
	}
	sol, err := ode.Solve(context.Background(), pr, ode.Rodas5P(), ode.Tol(1e-5, 1e-7))
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(sol.U[1][0]); math.Abs(got-math.Exp(-2)) > 1e-5 {
		t.Errorf("u' = −pu, p = 2: u(1) = %g, want %g", got, math.Exp(-2))
	}
	// A wrong output size is reported up front, and by Func's Err.
	bad := func(u, _ ad.Var, _ float64) ad.Var { return ad.Slice(u, 0, 2) }
	if _, err := odead.Problem(bad, []float32{1, 0, 0}, 0, 1, nil); err == nil {
		t.Error("Problem accepted a function with 2 outputs for 3 states")
	} else {
		t.Log(err)
	}
	bp := odead.Func(bad, 3)
	copy(du, dw)
	bp.F(du, u, nil, 0)
	if du[0] != dw[0] || bp.Err() == nil {
		t.Errorf("Func with a failing f wrote %v (was %v), Err %v; want du untouched and an error", du, dw, bp.Err())
	}
	bp.U0, bp.T1 = []float32{1, 0, 0}, 1
	_, err = ode.Solve(context.Background(), bp, ode.Rodas5P())
	var oe *ode.Error
	if !errors.As(err, &oe) || oe.Code != ode.Failed || !errors.Is(err, bp.Err()) {
		t.Errorf("solve with a failing Func: %v, want Failed with Func's error", err)
	}
}

// Func's warm Integrator: the pooled tape is warm after the first solve
// (logged, not pinned).
func TestFuncWarmAllocs(t *testing.T) {
	for _, m := range stiffMethods {
		prob := odead.Func(robertsonAD, 3)
		u32 := []float32{1, 0, 0}
		prob.U0, prob.T1 = u32, 1e5
		it, err := ode.NewIntegrator(prob, m, ode.Tol(1e-4, 1e-8))
		if err != nil {
			t.Fatal(err)
		}
		run := func() {
			if err := it.Reinit(u32, 0, 1e5, nil); err != nil {
				t.Fatal(err)
			}
			if err := it.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		run()
		a := testing.AllocsPerRun(10, run)
		t.Logf("%s with Func: %.1f allocations per warm solve", m.Name(), a)
	}
}

// Func's F and Jac are shared by concurrent solves (as in an ensemble):
// each goroutine gets its own tape from the pool, and the results agree.
func TestFuncConcurrent(t *testing.T) {
	prob := odead.Func(robertsonAD, 3)
	prob.U0, prob.T1 = []float32{1, 0, 0}, 1e3
	const G = 4
	res := make([][]float32, G)
	errs := make([]error, G)
	done := make(chan int)
	for g := 0; g < G; g++ {
		go func() {
			defer func() { done <- g }()
			for rep := 0; rep < 3; rep++ {
				sol, err := ode.Solve(context.Background(), prob, ode.Rodas5P(), ode.Tol(1e-4, 1e-8))
				if err != nil {
					errs[g] = err
					return
				}
				res[g] = sol.U[1]
			}
		}()
	}
	for range G {
		<-done
	}
	for g := 0; g < G; g++ {
		if errs[g] != nil {
			t.Fatal(errs[g])
		}
		for i := range res[g] {
			if res[g][i] != res[0][i] {
				t.Errorf("goroutine %d: %v, goroutine 0: %v", g, res[g], res[0])
				break
			}
		}
	}
}

// The same with the right-hand side written with ad ops (float32, Func).
func BenchmarkRobertsonRodas5PFunc(b *testing.B) {
	prob := odead.Func(robertsonAD, 3)
	u0 := []float32{1, 0, 0}
	prob.U0, prob.T1 = u0, 1e5
	it, err := ode.NewIntegrator(prob, ode.Rodas5P(), ode.Tol(1e-4, 1e-8))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := it.Reinit(u0, 0, 1e5, nil); err != nil {
			b.Fatal(err)
		}
		if err := it.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(it.Stats().Accepted), "steps")
}
