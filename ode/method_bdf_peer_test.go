package ode_test

import (
	"testing"

	"github.com/flatkit/flatkit/internal/stiffprob"
	"github.com/flatkit/flatkit/ode"
)

// TestBDFSegmentsLikeCVODE holds BDF to CVODE 6.4's counts, segment by
// segment, on the two problems of the stiff benchmark that restart
// (rtol 1e-6, atol 1e-8): MEDAKZO (N = 200, band, difference-quotient
// Jacobian) restarted at t = 5, and the 2-D Brusselator (N = 32, sparse
// LU, exact Jacobian) restarted at t = 1.1. A segment is a Reinit of the
// same integrator, as the peer's CVodeReInit.
//
// CVODE's counts are per segment because CVodeReInit zeroes them: the
// peer (shared/peers/cvode_stiff_bench.c) prints those of the last
// segment alone, so its nsteps is to be read beside the bench's
// last_segment, not beside its whole-solve nsteps.
//
// The Brusselator runs twice. With stiffprob's Segments the forcing is
// off throughout [0, 1.1], and CVODE's counts are those of the peer with
// its F given the same switch. The peer's own F takes the forcing from
// t ≥ 1.1, and CVODE's step onto a stop time rounds t_n onto it, so its
// first segment evaluates F forced at t = 1.1 (14 times, with 5 more
// error test failures) and its second starts from a state that has seen
// the forcing; BDF with the forcing from t (P nil) takes those steps too.
//
// CVODE's nfe leaves out the evaluations of its difference-quotient
// Jacobian (5 each for a band of width 5); Stats.FEvals counts them.
func TestBDFSegmentsLikeCVODE(t *testing.T) {
	type counts struct{ steps, nfe, nje, lus, nni, netf int }
	b2 := stiffprob.NewBruss2D[float64](32)
	med := stiffprob.Medakzo[float64]{N: 200}
	cases := []struct {
		name  string
		prob  ode.Problem[float64]
		segs  []stiffprob.Segment
		dqNFE int // evaluations of F per difference-quotient Jacobian
		cvode []counts
	}{
		{"MEDAKZO N=200 band", ode.Problem[float64]{F: med.F, U0: med.U0(), JacStructure: ode.BandJacobian{Lower: 2, Upper: 2}},
			med.Segments(), 5, []counts{{679, 749, 12, 58, 746, 6}, {392, 507, 7, 45, 504, 9}}},
		{"Bruss2D N=32 sparse", ode.Problem[float64]{F: b2.F, Jac: b2.JacSparse, U0: b2.U0(),
			JacStructure: ode.SparseJacobian{Pattern: b2.Pattern()}},
			b2.Segments(), 0, []counts{{162, 204, 4, 34, 201, 3}, {297, 407, 6, 60, 404, 25}}},
		{"Bruss2D N=32 sparse, forced from t", ode.Problem[float64]{F: b2.F, Jac: b2.JacSparse, U0: b2.U0(),
			JacStructure: ode.SparseJacobian{Pattern: b2.Pattern()}},
			[]stiffprob.Segment{{T0: 0, T1: 1.1}, {T0: 1.1, T1: 11.5}}, 0, []counts{{173, 227, 4, 43, 224, 8}, {302, 390, 6, 46, 387, 18}}},
	}
	for _, c := range cases {
		prob := c.prob
		prob.T0, prob.T1, prob.P = c.segs[0].T0, c.segs[0].T1, c.segs[0].P
		it, err := ode.NewIntegrator(prob, ode.BDF(), ode.Tol(1e-6, 1e-8))
		if err != nil {
			t.Fatal(err)
		}
		u := prob.U0
		for k, s := range c.segs {
			if err := it.Reinit(u, s.T0, s.T1, s.P); err != nil {
				t.Fatal(err)
			}
			if err := it.Run(bg); err != nil {
				t.Fatalf("%s, segment [%g, %g]: %v", c.name, s.T0, s.T1, err)
			}
			st := it.Stats()
			got := counts{st.Accepted, st.FEvals - c.dqNFE*st.JacEvals, st.JacEvals, st.LUs, st.NewtonIters, st.ErrTestFails}
			if got != c.cvode[k] {
				t.Errorf("%s, segment [%g, %g]: steps, f, J, LUs, Newton, error test failures %v, CVODE's %v",
					c.name, s.T0, s.T1, got, c.cvode[k])
			}
			u = it.U()
		}
	}
}
