package ode

import (
	"math"
	"testing"
)

// TestBDFShiftCurrentGamma: with γ 20 % below the γ̄ of the last setup
// (no new setup is due; without a preconditioner there is none, and γ is
// 20 % below the last step's), BDF with GMRES solves with the current γ,
// so on y' = −λy, where one GMRES iteration solves exactly, Newton's
// correction is exact to rounding. A direct solver keeps M of γ̄ and
// scales its correction by 2/(1 + γ/γ̄), which leaves a residual within
// Newton's tolerance but far above rounding: the case tells the two
// apart.
func TestBDFShiftCurrentGamma(t *testing.T) {
	const lambda = 1000.0
	f := func(du, u []float64, _ []float32, _ float64) {
		for i, v := range u {
			du[i] = -lambda * v
		}
	}
	jvp := func(jv, _, v []float64, _ []float32, _ []float64, _ float64) {
		for i, x := range v {
			jv[i] = -lambda * x
		}
	}
	for _, c := range []struct {
		name  string
		ls    LinearSolver
		exact bool
	}{
		{"GMRES", GMRES{}, true},
		{"GMRES band-preconditioned", GMRES{Precond: BandPreconditioner{0, 0}}, true},
		{"DenseLU", DenseLU{}, false},
	} {
		prob := Problem[float64]{F: f, JVP: jvp, U0: []float64{1, 2, 3}, T1: 1}
		if c.ls != (DenseLU{}) {
			prob.JacStructure = MatrixFreeJacobian{}
		}
		it, err := NewIntegrator(prob, BDFMethod{Linear: c.ls}, Tol(1e-6, 1e-8))
		if err != nil {
			t.Fatal(err)
		}
		b := it.st.(*bdf[float64])
		for b.nst < 5 || b.nflag != bdfFirstCall || b.nst >= b.nstlp+bdfMSBP-1 {
			if err := it.Step(); err != nil {
				t.Fatal(err)
			}
		}
		b.qprime = b.q
		// GMRES without a preconditioner has no setup and no γ̄: its
		// step is 0.8 times the last.
		g := b.gammap
		if b.noSetup {
			g = b.gamma
		}
		h := 0.8 * g / b.rl1
		if d := b.attempt(it, h); d > 1 {
			t.Fatalf("%s: the attempt at h=%g failed: %g", c.name, h, d)
		}
		if !b.noSetup && math.Abs(b.gamrat-0.8) > 1e-12 {
			t.Fatalf("%s: γ/γ̄ = %g, want 0.8 (a setup ran)", c.name, b.gamrat)
		}
		// The corrector's residual acor − γF(z0 + acor) + z1/l1, relative
		// to acor.
		var r, a float64
		for i := range b.acor {
			y := b.z[0][i] + b.acor[i]
			g := b.acor[i] + b.gamma*lambda*y + b.rl1*b.z[1][i]
			r = max(r, math.Abs(g))
			a = max(a, math.Abs(b.acor[i]))
		}
		rel := r / a
		t.Logf("%s: relative residual %.3g", c.name, rel)
		if c.exact && rel > 1e-12 {
			t.Errorf("%s: relative residual %.3g, want rounding (solved with the current γ)", c.name, rel)
		}
		if !c.exact && rel < 1e-9 {
			t.Errorf("%s: relative residual %.3g, want the stale M's (the test does not discriminate)", c.name, rel)
		}
	}
}

// reducedSpy is a gmresSys that counts the reduced solutions BDF accepts.
type reducedSpy struct {
	*gmresSys[float64]
	accepted int
}

func (s *reducedSpy) reduced() bool {
	r := s.gmresSys.reduced()
	if r {
		s.accepted++
	}
	return r
}

// TestBDFAcceptsReducedResidual: GMRES with one Krylov vector and no
// restart often stops short of its tolerance with a smaller residual.
// BDF takes such a solution at the first Newton iteration (CVODE's
// SUNLS_RES_REDUCED) through reducedSolver, and the solve still ends at
// the dense solution within the tolerance.
func TestBDFAcceptsReducedResidual(t *testing.T) {
	br := newLinsysBruss(10)
	prob := br.problem()
	refIt, err := NewIntegrator(prob, BDF(), Tol(1e-8, 1e-10))
	if err != nil {
		t.Fatal(err)
	}
	if err := refIt.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	var spy *reducedSpy
	it := runGMRESSpy(t, prob, func(g *gmresSys[float64]) linSys[float64] {
		spy = &reducedSpy{gmresSys: g}
		return spy
	})
	st := it.Stats()
	t.Logf("%d reduced solutions accepted; %+v", spy.accepted, st)
	if spy.accepted == 0 {
		t.Errorf("no reduced solution accepted (%d linear failures)", st.LinearFails)
	}
	if e := maxAbsDiff(it.U(), refIt.U()); e > 1e-4 {
		t.Errorf("max error %.3g against the dense BDF at rtol 1e-8, want ≤ 1e-4", e)
	}
}

// runGMRESSpy solves prob, matrix-free, by BDF with GMRES of one Krylov
// vector at rtol 1e-6, its gmresSys wrapped by spy.
func runGMRESSpy(t *testing.T, prob Problem[float64], spy func(*gmresSys[float64]) linSys[float64]) *Integrator[float64] {
	t.Helper()
	prob.JacStructure = MatrixFreeJacobian{}
	it, err := NewIntegrator(prob, BDFMethod{Linear: GMRES{Restart: 1}}, Tol(1e-6, 1e-8))
	if err != nil {
		t.Fatal(err)
	}
	b := it.st.(*bdf[float64])
	b.ls = spy(b.ls.(*gmresSys[float64]))
	if err := it.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	return it
}

// setupSpy is a gmresSys that counts the setups BDF asks of it.
type setupSpy struct {
	*gmresSys[float64]
	setups int
}

func (s *setupSpy) jacobian(it *Integrator[float64], t float64, u, f0 []float64, h float64) bool {
	s.setups++
	return s.gmresSys.jacobian(it, t, u, f0, h)
}

func (s *setupSpy) factor(it *Integrator[float64], c float64) bool {
	s.setups++
	return s.gmresSys.factor(it, c)
}

// TestBDFGMRESWithoutSetup: GMRES without a preconditioner has nothing to
// set up, so BDF never calls jacobian or factor, and a failed Newton
// iteration fails its attempt at once, as in CVODE, which has no lsetup
// then: at most bdfMaxCor Newton iterations per attempt. Retrying with a
// "fresh" setup would repeat the same iteration (it did, and cost the 2-D
// Brusselator a third more Newton and linear iterations than CVODE's).
// With one Krylov vector the 1-D Brusselator's Newton iterations fail
// often.
func TestBDFGMRESWithoutSetup(t *testing.T) {
	var spy *setupSpy
	it := runGMRESSpy(t, newLinsysBruss(10).problem(), func(g *gmresSys[float64]) linSys[float64] {
		spy = &setupSpy{gmresSys: g}
		return spy
	})
	st := it.Stats()
	t.Logf("%d attempts; %+v", it.attempts, st)
	if st.NewtonFails == 0 {
		t.Fatalf("no Newton failure: the case does not test the retry")
	}
	if spy.setups != 0 {
		t.Errorf("%d calls of jacobian or factor, want none", spy.setups)
	}
	if st.NewtonIters > bdfMaxCor*it.attempts {
		t.Errorf("%d Newton iterations in %d attempts, want at most %d each (no retry)", st.NewtonIters, it.attempts, bdfMaxCor)
	}
}

// TestBDFSmallFirstResidual: when the first Newton residual is already
// below an iterative solver's tolerance, it is the correction itself, as
// in CVODE's cvLsSolve, not zero: an attempt a million times shorter than
// the step BDF chose has such a residual, and its correction and error
// estimate are those of the residual, not 0.
func TestBDFSmallFirstResidual(t *testing.T) {
	const lambda = 3.0
	f := func(du, u []float64, _ []float32, _ float64) {
		for i, v := range u {
			du[i] = -lambda * v * v
		}
	}
	prob := Problem[float64]{F: f, U0: []float64{1, 2, 3}, T1: 1, JacStructure: MatrixFreeJacobian{}}
	it, err := NewIntegrator(prob, BDFMethod{Linear: GMRES{}}, Tol(1e-6, 1e-8))
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 8; k++ {
		if err := it.Step(); err != nil {
			t.Fatal(err)
		}
	}
	b := it.st.(*bdf[float64])
	b.complete(it)
	h := 1e-6 * b.hprime
	b.qprime = b.q
	it.lastDt = h
	iters := it.stats.LinearIters
	if d := b.attempt(it, h); !(d <= 1) {
		t.Fatalf("the attempt at h=%g failed: %g", h, d)
	}
	if it.stats.LinearIters != iters {
		t.Fatalf("%d linear iterations: the residual was not below the tolerance", it.stats.LinearIters-iters)
	}
	var e float64
	for i, a := range b.acor {
		y := b.z[0][i]
		want := -b.gamma*lambda*y*y - b.rl1*b.z[1][i]
		e = max(e, math.Abs(a-want))
		if want == 0 {
			t.Fatalf("the residual of component %d is 0: the case does not discriminate", i)
		}
	}
	if e > 0 {
		t.Errorf("the correction differs from the first residual by %.3g, want it equal", e)
	}
	if !(b.dsm > 0) {
		t.Errorf("error estimate %g, want > 0 (the residual's)", b.dsm)
	}
}
