package odead_test

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// A right-hand side that takes t as a Var is replayed by default, and the
// replay recomputes what depends on t: u' = −u + sin(t) gives the bits of
// the same function recorded at every call.
func TestTimeVarReplayedByDefault(t *testing.T) {
	calls := 0
	forced := func(u, _, tv ad.Var) ad.Var { calls++; return ad.Add(ad.Neg(u), ad.Sin(tv)) }
	replayed := odead.Func64(forced, 1)
	fresh := odead.Func64(func(u, p, tv ad.Var) ad.Var { return forced(u, p, tv) }, 1, odead.RecordEachCall())
	du1, du2 := make([]float64, 1), make([]float64, 1)
	for _, tt := range []float64{0, 0.5, 2, 0.5, 7} {
		u := []float64{0.25}
		replayed.F(du1, u, nil, tt)
		fresh.F(du2, u, nil, tt)
		if want := -0.25 + math.Sin(tt); du1[0] != du2[0] || math.Abs(du1[0]-want) > 1e-15 {
			t.Errorf("t=%g: replayed %v, recorded %v, want %v", tt, du1[0], du2[0], want)
		}
	}
	if calls != 5+1 {
		t.Errorf("f was called %d times for 5 calls of each problem, want 6 (5 recorded, 1 replayed 4 times)", calls)
	}
	u := []float64{0.25}
	if allocs := testing.AllocsPerRun(100, func() { replayed.F(du1, u, nil, 3) }); allocs != 0 {
		t.Errorf("a replayed F allocates %v times per call, want 0", allocs)
	}
	// And a solve: the exact solution of u' = −u + sin t, u(0) = 0, is
	// (sin t − cos t + e^−t)/2.
	replayed.U0, replayed.T1 = []float64{0}, 5
	sol, err := ode.Solve(context.Background(), replayed, ode.Tsit5(), ode.Tol(1e-10, 1e-12))
	if err != nil {
		t.Fatal(err)
	}
	got, want := sol.U[len(sol.U)-1][0], (math.Sin(5)-math.Cos(5)+math.Exp(-5))/2
	if math.Abs(got-want) > 1e-8 {
		t.Errorf("u(5) = %.12g, want %.12g", got, want)
	}
}

// An f that reads t's value to choose its ops is found value-dependent by
// ad and recorded at every call: the switch at t = 1 is taken.
func TestTimeVarReadByGoIsNotReplayed(t *testing.T) {
	switched := func(u, _, tv ad.Var) ad.Var {
		if tv.Item64() > 1 {
			return ad.Scale(u, -2)
		}
		return ad.Neg(u)
	}
	prob := odead.Func64(switched, 1)
	du := make([]float64, 1)
	for _, c := range []struct{ t, want float64 }{{0, -1}, {0.5, -1}, {2, -2}, {0.5, -1}, {3, -2}} {
		prob.F(du, []float64{1}, nil, c.t)
		if du[0] != c.want {
			t.Errorf("t=%g: du = %v, want %v", c.t, du[0], c.want)
		}
	}
}
