package ode

import (
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode/linalg"
	"pgregory.net/rapid"
)

// linsysRandom is F(u) = A·u + 0.1·sin(u) for a random sparse A with
// a diagonal: its Jacobian A + 0.1·diag(cos u) has A's pattern.
type linsysRandom struct {
	n   int
	pat *linalg.Pattern
	a   []float64 // A's values in pat's order
}

func drawLinsysRandom(rt *rapid.T, band bool) linsysRandom {
	n := rapid.IntRange(1, 40).Draw(rt, "n")
	var e []linalg.Entry
	if band {
		lo := rapid.IntRange(0, 4).Draw(rt, "lower")
		up := rapid.IntRange(0, 4).Draw(rt, "upper")
		p := linalg.BandPattern(n, lo, up)
		for i := 0; i < n; i++ {
			for _, j := range p.Row(i) {
				e = append(e, linalg.Entry{Row: i, Col: j})
			}
		}
	} else {
		k := rapid.IntRange(0, 4*n).Draw(rt, "entries")
		for x := 0; x < k; x++ {
			e = append(e, linalg.Entry{Row: rapid.IntRange(0, n-1).Draw(rt, "i"), Col: rapid.IntRange(0, n-1).Draw(rt, "j")})
		}
		for i := 0; i < n; i++ {
			e = append(e, linalg.Entry{Row: i, Col: i})
		}
	}
	p, err := linalg.NewPattern(n, n, e)
	if err != nil {
		rt.Fatal(err)
	}
	a := make([]float64, p.NNZ())
	for k := range a {
		a[k] = rapid.Float64Range(-3, 3).Draw(rt, "a")
	}
	return linsysRandom{n: n, pat: p, a: a}
}

func (r linsysRandom) f(du, u []float64, _ []float32, _ float64) {
	for i := 0; i < r.n; i++ {
		s := 0.1 * math.Sin(u[i])
		for k := r.pat.RowPtr[i]; k < r.pat.RowPtr[i+1]; k++ {
			s += r.a[k] * u[r.pat.ColIdx[k]]
		}
		du[i] = s
	}
}

func (r linsysRandom) jvp(jv, u, v []float64, _ []float32, _ []float64, _ float64) {
	for i := 0; i < r.n; i++ {
		s := 0.1 * math.Cos(u[i]) * v[i]
		for k := r.pat.RowPtr[i]; k < r.pat.RowPtr[i+1]; k++ {
			s += r.a[k] * v[r.pat.ColIdx[k]]
		}
		jv[i] = s
	}
}

// dense is J row-major.
func (r linsysRandom) dense(u []float64) []float64 {
	n := r.n
	J := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for k := r.pat.RowPtr[i]; k < r.pat.RowPtr[i+1]; k++ {
			J[i*n+r.pat.ColIdx[k]] += r.a[k]
		}
		J[i*n+i] += 0.1 * math.Cos(u[i])
	}
	return J
}

// TestLinsysRandomSolves: for random band and sparse Jacobians, every
// linear system that applies, with J from coloured JVPs or coloured
// differences, solves W x = b as a dense solve of the exact W does: to
// 1e-10 relative with JVPs, to 1e-6 with differences (1e-5 for GMRES's
// products, whose increments are of the tolerance's size), and GMRES to
// the 1e-10 weighted RMS of its residual (1e-8 absolute), each times the
// condition of W.
func TestLinsysRandomSolves(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		band := rapid.Bool().Draw(rt, "band")
		r := drawLinsysRandom(rt, band)
		n := r.n
		useJVP := rapid.Bool().Draw(rt, "jvp")
		c := rapid.Float64Range(0.01, 1).Draw(rt, "c")
		u := make([]float64, n)
		b := make([]float64, n)
		for i := range u {
			// Away from 0, where the difference increments √ε·|u_j| are
			// too small for a 1e-6 test.
			u[i] = rapid.Float64Range(0.5, 2).Draw(rt, "u")
			b[i] = rapid.Float64Range(-1, 1).Draw(rt, "b")
		}
		var s Structure = SparseJacobian{r.pat}
		solvers := []LinearSolver{DenseLU{}, BandLU{}, SparseLU{}, GMRES{Restart: 40, MaxRestarts: 3}}
		if band {
			lo, up := r.pat.Bandwidths()
			s = BandJacobian{lo, up}
			solvers = append(solvers, GMRES{MaxRestarts: 5, Precond: BandPreconditioner{lo, up}})
		}
		prob := Problem[float64]{F: r.f, U0: u, T1: 1, JacStructure: s}
		if useJVP {
			prob.JVP = r.jvp
		}
		// The exact answer, by a dense solve of the exact W.
		J := r.dense(u)
		W := shiftedDense(J, n, c)
		piv := make([]int, n)
		lu := append([]float64(nil), W...)
		if linalg.LUFactor(lu, n, piv, nil) >= 0 {
			rt.Skip("W singular")
		}
		// The sensitivity of x to relative errors in J and in W:
		// ‖W⁻¹‖·(c‖J‖ + ‖W‖).
		kappa := cond1(W, lu, n, piv) + cond1(J, lu, n, piv)*c
		if kappa > 1e6 {
			rt.Skip("W ill-conditioned")
		}
		want := append([]float64(nil), b...)
		linalg.LUSolve(lu, n, piv, want)
		f0 := make([]float64, n)
		r.f(f0, u, nil, 0)
		for _, ls := range solvers {
			it, err := NewIntegrator(prob, Rodas5PMethod{Linear: ls}, Tol(1e-6, 1e-6))
			if err != nil {
				rt.Fatalf("%v: %v", ls, err)
			}
			sys := it.st.(*rosenbrock[float64]).lin.ls
			if !sys.jacobian(it, 0, u, f0, 1e-3) || !sys.factor(it, c) {
				_, _, err := sys.failure()
				rt.Fatalf("%v: %v", ls, err)
			}
			x := append([]float64(nil), b...)
			// it.u is u: the products are at time it.t.
			if !sys.solve(it, x, it.u, f0, 1e-4) { // an absolute residual of about 1e-10
				_, _, err := sys.failure()
				rt.Fatalf("%v: %v", ls, err)
			}
			tol := 1e-10
			if !useJVP {
				tol = 1e-6
				if _, ok := ls.(GMRES); ok {
					// CVODE's difference quotient perturbs by the size of
					// the tolerance, here 1e-6, not by √ε.
					tol = 1e-5
				}
			}
			for i := range x {
				if math.Abs(x[i]-want[i]) > kappa*(tol*norm1(want)+1e-8) {
					rt.Fatalf("%v (jvp %t): x[%d] = %v, want %v (condition %.3g)", ls, useJVP, i, x[i], want[i], kappa)
				}
			}
		}
	})
}

// cond1 is ‖A‖₁·‖W⁻¹‖₁ for row-major A and the LU factors of W: the
// 1-norm condition number of W when A is W.
func cond1(A, lu []float64, n int, piv []int) float64 {
	norm := func(col func(j int) []float64) float64 {
		m := 0.0
		for j := 0; j < n; j++ {
			s := 0.0
			for _, v := range col(j) {
				s += math.Abs(v)
			}
			m = max(m, s)
		}
		return m
	}
	e := make([]float64, n)
	inv := norm(func(j int) []float64 {
		clear(e)
		e[j] = 1
		linalg.LUSolve(lu, n, piv, e)
		return e
	})
	w := make([]float64, n)
	return inv * norm(func(j int) []float64 {
		for i := range w {
			w[i] = A[i*n+j]
		}
		return w
	})
}

func norm1(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += math.Abs(v)
	}
	return s
}
