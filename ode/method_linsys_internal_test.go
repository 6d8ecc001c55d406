package ode

import (
	"fmt"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode/linalg"
)

// linsysIntegrator is an integrator for prob, whose options and counters
// the Jacobian code reads; it is not run.
func linsysIntegrator(t *testing.T, prob Problem[float64]) *Integrator[float64] {
	t.Helper()
	it, err := NewIntegrator(prob, Rodas5P(), Tol(1e-6, 1e-8))
	if err != nil {
		t.Fatal(err)
	}
	return it
}

// linsysState is a state away from u(0) with every Jacobian entry
// distinct: u_i = 1 + sin(2πx_i) + x_i/3, v_i = 3 − x_i².
func linsysState(b linsysBruss) []float64 {
	y := b.u0()
	for i := 1; i <= b.N; i++ {
		x := float64(i) / float64(b.N+1)
		y[2*(i-1)] += x / 3
		y[2*(i-1)+1] -= x * x
	}
	return y
}

// TestLinsysColouredFD: the coloured difference Jacobians, band and
// sparse, equal the dense one column by column (F_i reads only its
// stencil, so here they agree to the last bit; the test allows
// difference accuracy), and the analytic Jacobian to difference accuracy.
// They take 5 (band) and at most 6 (sparse) evaluations of F instead of
// 100.
func TestLinsysColouredFD(t *testing.T) {
	b := newLinsysBruss(50)
	n := 2 * b.N
	prob := b.problem()
	it := linsysIntegrator(t, prob)
	y := linsysState(b)
	f0 := make([]float64, n)
	b.f(f0, y, nil, 0)
	const h = 1e-3
	dense := make([]float64, n*n)
	je := newJacEval[float64](n)
	je.jacobianAt(it, dense, 0, y, f0, h)
	exact := make([]float64, n*n)
	b.jacDense(exact, y, nil, 0)
	scale := 0.0
	for _, v := range exact {
		scale = max(scale, math.Abs(v))
	}
	pat := b.pattern()
	for _, c := range []struct {
		name  string
		sj    *structJac[float64]
		evals int
	}{
		{"band", newBandJac[float64](n, 2, 2), 5},
		{"sparse", newSparseJac[float64](pat), 6},
	} {
		st := it.stats
		var fail lsFail
		if !c.sj.eval(it, 0, y, f0, h, &fail) {
			t.Fatalf("%s: %v", c.name, fail.kind)
		}
		evals := it.stats.FEvals - st.FEvals
		if evals > c.evals || it.stats.JacEvals != st.JacEvals+1 {
			t.Errorf("%s: %d evaluations of F and %d Jacobians, want ≤ %d and 1", c.name, evals, it.stats.JacEvals-st.JacEvals, c.evals)
		}
		for i := 0; i < n; i++ {
			for _, j := range c.sj.pat.Row(i) {
				got := c.sj.vals[c.sj.pos(i, j)]
				if d := math.Abs(got - dense[i*n+j]); d > 1e-12*scale {
					t.Errorf("%s: J[%d][%d] = %v, dense differences %v", c.name, i, j, got, dense[i*n+j])
				}
				if d := math.Abs(got - exact[i*n+j]); d > 1e-6*scale {
					t.Errorf("%s: J[%d][%d] = %v, analytic %v", c.name, i, j, got, exact[i*n+j])
				}
			}
		}
	}
	t.Logf("pattern: %d entries, %d colours", pat.NNZ(), newSparseJac[float64](pat).cj.groups())
}

// TestLinsysColouredJVP: with Problem.JVP and no Jac, the coloured sweeps
// give the analytic Jacobian to rounding, in every storage, and take no
// evaluation of F.
func TestLinsysColouredJVP(t *testing.T) {
	b := newLinsysBruss(50)
	n := 2 * b.N
	prob := b.problem()
	prob.JVP = b.jvp
	it := linsysIntegrator(t, prob)
	y := linsysState(b)
	f0 := make([]float64, n)
	b.f(f0, y, nil, 0)
	exact := make([]float64, n*n)
	b.jacDense(exact, y, nil, 0)
	check := func(name string, got func(i, j int) float64, pat *linalg.Pattern) {
		t.Helper()
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if pat != nil && !pat.Has(i, j) {
					continue
				}
				if g, w := got(i, j), exact[i*n+j]; math.Abs(g-w) > 1e-15*max(1, math.Abs(w)) {
					t.Errorf("%s: J[%d][%d] = %v, analytic %v", name, i, j, g, w)
				}
			}
		}
	}
	fe := it.stats.FEvals
	dense := make([]float64, n*n)
	je := newJacEval[float64](n)
	je.jacobianAt(it, dense, 0, y, f0, 1e-3)
	check("dense", func(i, j int) float64 { return dense[i*n+j] }, nil)
	pat := b.pattern()
	for _, sj := range []*structJac[float64]{newBandJac[float64](n, 2, 2), newSparseJac[float64](pat)} {
		var fail lsFail
		if !sj.eval(it, 0, y, f0, 1e-3, &fail) {
			t.Fatal(fail.failure())
		}
		check(map[bool]string{true: "band", false: "sparse"}[sj.band], func(i, j int) float64 { return sj.vals[sj.pos(i, j)] }, sj.pat)
	}
	if it.stats.FEvals != fe {
		t.Errorf("JVP Jacobians took %d evaluations of F, want 0", it.stats.FEvals-fe)
	}
}

// TestLinsysEntry: the position of an entry in band and sparse storage and
// back.
func TestLinsysEntry(t *testing.T) {
	b := newLinsysBruss(7)
	n := 2 * b.N
	for _, sj := range []*structJac[float64]{newBandJac[float64](n, 2, 2), newSparseJac[float64](b.pattern())} {
		for i := 0; i < n; i++ {
			for _, j := range sj.pat.Row(i) {
				if gi, gj := sj.entry(sj.pos(i, j)); gi != i || gj != j {
					t.Errorf("band %t: entry(pos(%d, %d)) = (%d, %d)", sj.band, i, j, gi, gj)
				}
			}
		}
	}
}

// TestLinsysDenseFill: DenseLU over a band or sparse structure solves
// W x = b as a dense LU of the same W does.
func TestLinsysDenseFill(t *testing.T) {
	b, y, J := linsysAt(20)
	n := 2 * b.N
	const c = 0.01
	W := shiftedDense(J, n, c)
	rhs := make([]float64, n)
	for i := range rhs {
		rhs[i] = math.Cos(float64(i))
	}
	pat := b.pattern()
	for _, sj := range []*structJac[float64]{newBandJac[float64](n, 2, 2), newSparseJac[float64](pat)} {
		if sj.band {
			b.jacBand(sj.vals, y, nil, 0)
		} else {
			b.jacSparse(pat)(sj.vals, y, nil, 0)
		}
		d := newDenseFill(sj)
		if k := d.FactorShifted(sj.vals, c); k >= 0 {
			t.Fatalf("singular at %d", k)
		}
		x := append([]float64(nil), rhs...)
		d.Solve(x)
		checkSolved(t, fmt.Sprintf("band %t", sj.band), W, x, rhs, 1e-12)
	}
}

// shiftedDense is W = I − c·J for the row-major n×n J.
func shiftedDense(J []float64, n int, c float64) []float64 {
	W := make([]float64, n*n)
	for i := range W {
		W[i] = -c * J[i]
	}
	for i := 0; i < n; i++ {
		W[i*n+i]++
	}
	return W
}

// TestLinsysShift: GMRES solves with the c given to shift, its
// preconditioner kept from the last factor; the direct systems keep the
// factored W and say so.
func TestLinsysShift(t *testing.T) {
	b, y, J := linsysAt(10)
	n := 2 * b.N
	f0 := make([]float64, n)
	b.f(f0, y, nil, 0)
	rhs := make([]float64, n)
	for i := range rhs {
		rhs[i] = math.Sin(float64(i + 1))
	}
	const c0, c1 = 0.01, 0.013
	for _, ls := range []LinearSolver{DenseLU{}, BandLU{}, GMRES{Restart: n, MaxRestarts: 2, Precond: BandPreconditioner{2, 2}}} {
		prob := b.problem()
		prob.JacStructure = BandJacobian{2, 2}
		prob.U0 = y
		prob.JVP = b.jvp
		it, err := NewIntegrator(prob, Rodas5PMethod{Linear: ls}, Tol(1e-10, 1e-10))
		if err != nil {
			t.Fatal(err)
		}
		sys := it.st.(*rosenbrock[float64]).lin.ls
		if !sys.jacobian(it, 0, it.u, f0, 1e-3) || !sys.factor(it, c0) {
			t.Fatal(sys.failure())
		}
		_, iterative := ls.(GMRES)
		if got := sys.shift(c1); got != iterative {
			t.Errorf("%v: shift reports %t, want %t", ls, got, iterative)
		}
		c := c0
		if iterative {
			c = c1
		}
		W := shiftedDense(J, n, c)
		x := append([]float64(nil), rhs...)
		if !sys.solve(it, x, it.u, f0, 1e-6) {
			t.Fatal(sys.failure())
		}
		checkSolved(t, fmt.Sprintf("%v with c=%g", ls, c), W, x, rhs, 1e-9)
	}
}

// linsysAt is the Brusselator of N points at linsysState, with its
// analytic Jacobian, row-major.
func linsysAt(N int) (b linsysBruss, y, J []float64) {
	b = newLinsysBruss(N)
	n := 2 * N
	y = linsysState(b)
	J = make([]float64, n*n)
	b.jacDense(J, y, nil, 0)
	return b, y, J
}

// checkSolved checks that W·x = rhs to tol in every component.
func checkSolved(t *testing.T, name string, W, x, rhs []float64, tol float64) {
	t.Helper()
	n := len(x)
	for i := 0; i < n; i++ {
		s := 0.0
		for j := 0; j < n; j++ {
			s += W[i*n+j] * x[j]
		}
		if math.Abs(s-rhs[i]) > tol {
			t.Errorf("%s: (W·x)[%d] = %v, want %v", name, i, s, rhs[i])
		}
	}
}
