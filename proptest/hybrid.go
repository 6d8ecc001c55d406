package proptest

import (
	"context"
	"fmt"
	"math"
	"slices"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// Random hybrid problems: an ODECase (without a running cost or
// stiffness) with an event and, optionally, a dose at a known time, all
// written with ad ops in float64 (odead.Problem, AddEvent, AddSchedule):
//
//	event:  g(u, p) = u_J − C·p_K crosses 0  →  u_R ← −A·u_R + B·p_L
//	dose:   at t = TD,  u_D ← u_D + p_M
//
// C is drawn so that the plain solution crosses the level at a time
// inside the span, and cases whose firings are near-tangential (|ġ| small)
// or too many are dropped.

// HybridCase is a drawn hybrid problem with its loss.
type HybridCase struct {
	ODECase
	J, K    int     // the condition u_J − C·p_K
	C       float64 //
	R, L    int     // the reset u_R ← −A·u_R + B·p_L
	A, B    float64 //
	Dose    bool    // a dose at TD: u_D += p_M
	TD      float64 //
	D, M    int     //
	Firings int     // how many times the event fired at the drawn p
}

func (c HybridCase) String() string {
	s := fmt.Sprintf("%v; event u%d − %g·p%d → u%d ← %g·u%d + %g·p%d (%d firings)", c.ODECase, c.J, c.C, c.K, c.R, -c.A, c.R, c.B, c.L, c.Firings)
	if c.Dose {
		s += fmt.Sprintf("; dose u%d += p%d at t=%g", c.D, c.M, c.TD)
	}
	return s
}

// HybridCases draws small random hybrid problems with their losses: an
// ODECase's right-hand side with an event whose condition crosses inside
// the span and whose effect resets a state, and sometimes a dose at a
// known time. Cases whose event fires more than 4 times, or at a crossing
// where |ġ| < 0.05 (nearly tangential, where the event time's derivative
// is large), are dropped.
func HybridCases() *rapid.Generator[HybridCase] {
	return rapid.Custom(drawHybridCase).Filter(func(c HybridCase) bool { return c.Firings > 0 })
}

func drawHybridCase(t *rapid.T) HybridCase {
	base := drawODECase(t)
	base.Running, base.Stiff = false, 0
	c := HybridCase{ODECase: base}
	n, np := c.N, c.NP
	c.J = rapid.IntRange(0, n-1).Draw(t, "J")
	c.K = rapid.IntRange(0, np-1).Draw(t, "K")
	c.R = rapid.IntRange(0, n-1).Draw(t, "R")
	c.L = rapid.IntRange(0, np-1).Draw(t, "L")
	c.A = rapid.Float64Range(0.2, 0.9).Draw(t, "A")
	c.B = rapid.Float64Range(-0.5, 0.5).Draw(t, "B")
	// The level: the plain solution's u_J at a time inside the span.
	τ := c.T1 * rapid.Float64Range(0.15, 0.7).Draw(t, "tau")
	sol, err := ode.Solve(context.Background(), base.Problem64(), ode.Tsit5(), ode.Tol(1e-10, 1e-12), ode.SaveAt(τ))
	if err != nil {
		t.Skipf("the plain solve failed: %v", err)
	}
	c.C = sol.U[0][c.J] / float64(c.P[c.K])
	if c.Dose = rapid.Bool().Draw(t, "dose"); c.Dose {
		c.TD = c.T1 * rapid.Float64Range(0.1, 0.9).Draw(t, "TD")
		c.D = rapid.IntRange(0, n-1).Draw(t, "D")
		c.M = rapid.IntRange(0, np-1).Draw(t, "M")
	}
	c.wellPosed() // sets Firings, 0 for a case to drop
	return c
}

// wellPosed solves c and counts its firings into c.Firings, with ġ at
// each: it wants 1 to 4 firings, each with |ġ| ≥ 0.05 and at least
// T1/1000 from every save time and the dose, the condition at least 1e-3
// from 0 at the solve's steps but those next to a firing, and the
// solution within |u| ≤ 10;
// otherwise it leaves c.Firings 0.
func (c *HybridCase) wellPosed() bool {
	prob, err := c.Problem()
	if err != nil {
		return false
	}
	var firings, times []float64 // ġ and t at each
	f := prob.F
	eff := prob.Events[0].Effect
	du := make([]float64, c.N)
	prob.Events[0].Effect = func(u []float64, p []float32, t float64) bool {
		f(du, u, p, t)
		firings, times = append(firings, du[c.J]), append(times, t)
		return eff(u, p, t)
	}
	sol, err := ode.Solve(context.Background(), prob, ode.Tsit5(), ode.Tol(1e-10, 1e-12), ode.SaveEveryStep())
	if err != nil || len(firings) == 0 || len(firings) > 4 {
		return false
	}
	for _, g := range firings {
		if math.Abs(g) < 0.05 {
			return false
		}
	}
	// A firing next to a save time moves across it under the checker's
	// perturbations, which leave such directions out; with every one
	// left out nothing would be checked.
	for _, τ := range times {
		for _, s := range c.At {
			if math.Abs(τ-s) < 1e-3*c.T1 {
				return false
			}
		}
		// Nor next to the dose, which it would pass.
		if c.Dose && math.Abs(τ-c.TD) < 1e-3*c.T1 {
			return false
		}
	}
	cond := prob.Events[0].Cond
	for k, u := range sol.U {
		for _, v := range u {
			if math.Abs(v) > odeCaseBound {
				return false
			}
		}
		// Where the condition comes near 0 away from a firing (at the
		// start, or touching 0 without crossing), the checker's steps
		// make it fire there: the firing time jumps and the loss with
		// it, with the same count of firings.
		if g := cond(u, c.P, sol.T[k]); math.Abs(g) < 1e-3 {
			near := false
			for _, τ := range times {
				near = near || math.Abs(τ-sol.T[k]) <= 2*1e-3/0.05
			}
			if !near {
				return false
			}
		}
	}
	c.Firings = len(firings)
	return true
}

// rhs64 is the case's right-hand side written with ad ops in the state's
// precision (its constants by ScalarLike), for a float64 problem. It takes
// t as a Var, the forcing cos(t + i)/4 by ad ops, so that odead replays
// its recording instead of recording every call.
func (c ODECase) rhs64() func(u, p, t ad.Var) ad.Var {
	return func(u, p, t ad.Var) ad.Var {
		outs := make([]ad.Var, c.N)
		for i := range outs {
			forcing := ad.Scale(ad.Cos(ad.Add(t, ad.ScalarLike(t, float64(i)))), 0.25)
			outs[i] = ad.Add(ad.Scale(ad.Slice(u, i, i+1), -odeDamping), forcing)
		}
		c.addTermsAD(outs, u, p, false)
		return ad.Concat(0, outs...)
	}
}

// Problem is the case as a float64 problem written with ad ops, with its
// event and dose (odead.Problem, odead.AddEvent, odead.AddSchedule).
func (c HybridCase) Problem() (ode.Problem[float64], error) {
	prob, err := odead.Problem(c.rhs64(), slices.Clone(c.U0), 0, c.T1, slices.Clone(c.P))
	if err != nil {
		return prob, err
	}
	cond := func(u, p, _ ad.Var) ad.Var {
		return ad.Sub(ad.Slice(u, c.J, c.J+1), ad.Scale(ad.Slice(p, c.K, c.K+1), c.C))
	}
	reset := func(u, p, _ ad.Var) ad.Var {
		return c.replace(u, c.R, ad.Add(ad.Scale(ad.Slice(u, c.R, c.R+1), -c.A), ad.Scale(ad.Slice(p, c.L, c.L+1), c.B)))
	}
	if err := odead.AddEvent(&prob, cond, reset); err != nil {
		return prob, err
	}
	if c.Dose {
		dose := func(u, p, _ ad.Var) ad.Var {
			return c.replace(u, c.D, ad.Add(ad.Slice(u, c.D, c.D+1), ad.Slice(p, c.M, c.M+1)))
		}
		if err := odead.AddSchedule(&prob, []float64{c.TD}, dose); err != nil {
			return prob, err
		}
	}
	return prob, nil
}

// replace is u with element i replaced by v, of shape [1].
func (c HybridCase) replace(u ad.Var, i int, v ad.Var) ad.Var {
	parts := make([]ad.Var, 0, 3)
	if i > 0 {
		parts = append(parts, ad.Slice(u, 0, i))
	}
	parts = append(parts, v)
	if i+1 < c.N {
		parts = append(parts, ad.Slice(u, i+1, c.N))
	}
	return ad.Concat(0, parts...)
}
