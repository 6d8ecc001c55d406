package ode

import (
	"context"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// stiffRest is a staggered system whose rest is stiffer than its state:
// u' = −u and s' = −λs, with the state's J = −1 the only one BDF
// factors. The staggered iteration on s with M = 1 + γ diverges once
// γλ is large, so steps fail on the rest's convergence and are retried
// smaller, as CVODES retries a step whose sensitivities did not
// converge.
type stiffRest struct{ lambda float64 }

func (r stiffRest) stateRHS(du, u []float64, _ []float32, _ float64) { du[0] = -u[0] }

func (r stiffRest) sensRHS(dY, Y []float64, _ []float32, _ float64) { dY[1] = -r.lambda * Y[1] }

func (r stiffRest) sensWeights(w []float64, Y []float64) {}

func TestBDFStaggeredRestFailsAndRecovers(t *testing.T) {
	sys := stiffRest{lambda: 50}
	prob := Problem[float64]{
		F: func(dY, Y []float64, p []float32, t float64) {
			sys.stateRHS(dY[:1], Y[:1], p, t)
			sys.sensRHS(dY, Y, p, t)
		},
		Jac:          func(J, u []float64, _ []float32, _ float64) { J[0] = -1 },
		U0:           []float64{1, 1},
		T0:           0,
		T1:           5,
		JacStructure: augJacobian{Inner: DenseJacobian{}, Blocks: 2, Coupling: augCoupleNone},
	}
	it, err := NewIntegrator(prob, BDF(), Tol(1e-4, 1e-8))
	if err != nil {
		t.Fatal(err)
	}
	b := it.st.(*bdf[float64])
	if !b.stagger(sys, 1, 1) {
		t.Fatal("stagger refused the block system")
	}
	if err := it.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := it.Stats()
	u := it.U()
	eu := math.Abs(u[0]-math.Exp(-5)) / math.Exp(-5)
	t.Logf("u(5) = %.8g (rel err %.2e), s(5) = %.3g; %+v", u[0], eu, u[1], st)
	if st.NewtonFails == 0 {
		t.Errorf("no convergence failures: the test no longer exercises the rest's failure")
	}
	if eu > 1e-3 || math.Abs(u[1]) > 1e-6 {
		t.Errorf("u(5) = %g (want %g to 1e-3), s(5) = %g (want |s| ≤ 1e-6)", u[0], math.Exp(-5), u[1])
	}
}

// The staggered corrector refuses a linear system that is not a block
// system of the state's size.
func TestBDFStaggerWantsBlockSystem(t *testing.T) {
	prob := Problem[float64]{F: func(du, u []float64, _ []float32, _ float64) { du[0], du[1] = -u[0], -u[1] },
		U0: []float64{1, 1}, T1: 1}
	it, err := NewIntegrator(prob, BDF())
	if err != nil {
		t.Fatal(err)
	}
	if it.st.(*bdf[float64]).stagger(stiffRest{1}, 1, 1) {
		t.Error("stagger accepted a dense system")
	}
}

// TestBDFStaggeredRandomStiff: on random small stiff problems with band
// and sparse Jacobians, ForwardSensitivity by BDF's staggered corrector —
// with Jac or coloured JVPs, a direct solver or GMRES with a band
// preconditioner, the sensitivities in the error test or not — agrees
// with a tight dense adjoint (Rodas5P, rtol 1e-11) to 1e4 times its rtol.
func TestBDFStaggeredRandomStiff(t *testing.T) {
	ctx := context.Background()
	loss := Loss[float64]{At: []float64{0.5, 1}, Point: func(_ int, _ float64, u, dl []float64) float64 {
		var g float64
		for i, v := range u {
			g += v * v / 2
			dl[i] = v
		}
		return g
	}}
	rapid.Check(t, func(rt *rapid.T) {
		band := rapid.Bool().Draw(rt, "band")
		r := drawStiffRandom(rt, band)
		lo, up := r.pat.Bandwidths()
		var s Structure = SparseJacobian{Pattern: r.pat}
		if band {
			s = BandJacobian{Lower: lo, Upper: up}
		}
		m := BDFMethod{}
		if rapid.Bool().Draw(rt, "gmres") {
			m.Linear = GMRES{Precond: BandPreconditioner{Lower: lo, Upper: up}}
		}
		fs := ForwardSensitivity{NoErrorControl: rapid.Bool().Draw(rt, "noErrorControl")}
		const tol = 1e-8
		want, err := Gradient(ctx, r.problem(nil), Rodas5P(), loss, InterpolatingAdjoint{}, Tol(1e-11, 1e-13), MaxSteps(1e6))
		if err != nil {
			rt.Fatalf("reference: %v", err)
		}
		prob := r.problem(s)
		if rapid.Bool().Draw(rt, "noJac") {
			prob.Jac = nil
		}
		got, err := Gradient(ctx, prob, m, loss, fs, Tol(tol, tol/100), MaxSteps(1e6))
		if err != nil {
			rt.Fatalf("%v, %v: %v", m, s, err)
		}
		cat := func(g *GradientResult[float64]) []float64 { return append(append([]float64(nil), g.P...), g.U0...) }
		a, b := cat(got), cat(want)
		var d, w float64
		for i := range b {
			d += (a[i] - b[i]) * (a[i] - b[i])
			w += b[i] * b[i]
		}
		if e := math.Sqrt(d / max(w, 1e-300)); e > 1e4*tol {
			rt.Fatalf("%v, %v, %+v: gradient differs from the dense adjoint's by %.3g > %g (dL/dp %v, want %v)",
				m, s, fs, e, 1e4*tol, got.P, want.P)
		}
	})
}
