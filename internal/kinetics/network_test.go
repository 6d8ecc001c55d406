package kinetics

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/stiffprob"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
	"pgregory.net/rapid"
)

// hand is a problem's hand-written float64 functions and what the ad
// tests need of it.
type hand struct {
	name  string
	nw    *Network
	ad    func(u, p ad.Var, t float64) ad.Var
	u0    []float64 // a typical state: draws scale it
	rates []float32
	f     func(du, u []float64, p []float32, t float64)
	jac   func(J, u []float64, p []float32, t float64)
	jvp   func(jv, u, v []float64, p []float32, dp []float64, t float64)
	vjp   func(du, dp, w, u []float64, p []float32, t float64)
}

func hands() []hand {
	var r Robertson[float64]
	var pl stiffprob.Pollu[float64]
	return []hand{
		{"Robertson", RobertsonNetwork, RobertsonAD, []float64{0.5, 2e-5, 0.5}, RobertsonRates(), r.F, r.Jac, r.JVP, r.VJP},
		{"POLLU", PolluNetwork, PolluAD, stiffprob.PolluRef, stiffprob.PolluRates(), pl.F, pl.Jac, pl.JVP, pl.VJP},
	}
}

// absNetwork is nw with every stoichiometric coefficient made positive:
// its products at |u|, |v|, |w| bound the magnitudes of the terms of
// nw's, which set the rounding of each component.
func absNetwork(nw *Network) *Network {
	a := *nw
	a.sign, a.sign64 = slices.Clone(nw.sign), slices.Clone(nw.sign64)
	for i := range a.sign {
		a.sign[i], a.sign64[i] = 1, 1
	}
	return &a
}

func to32(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}

func to64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func abs32(x []float32) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(math.Abs(float64(v)))
	}
	return y
}

// close32 checks float32 results got against float64 ones want, each to
// 1e-5 of its magnitude mag (a few float32 roundings of the terms).
func close32(t *rapid.T, what string, got []float32, want []float64, mag []float32) {
	for i := range want {
		if e := math.Abs(float64(got[i]) - want[i]); !(e <= 1e-5*float64(mag[i])+1e-30) {
			t.Fatalf("%s[%d]: ad %.9g, hand-written %.17g: error %.3g, %.3g of the terms' magnitude %.3g",
				what, i, got[i], want[i], e, e/float64(mag[i]), mag[i])
		}
	}
}

// TestADMatchesHand checks the ad-written right-hand sides, through
// odead.Derivs in float32 with and without Replayable, against the
// hand-written float64 F, Jac, JVP and VJP at random states, directions
// and rate directions, to float32 rounding of the terms.
func TestADMatchesHand(t *testing.T) {
	for _, h := range hands() {
		for _, replay := range []bool{false, true} {
			var opts []odead.Option
			if replay {
				opts = append(opts, odead.Replayable())
			}
			n, np := h.nw.n, h.nw.r
			ad := odead.Derivs(h.ad, n, opts...)
			mag := odead.Derivs(absNetwork(h.nw).RHS, n)
			t.Run(h.name+map[bool]string{false: "", true: "/replayed"}[replay], func(t *testing.T) {
				rapid.Check(t, func(rt *rapid.T) {
					u32 := make([]float32, n)
					for i := range u32 {
						u32[i] = float32(h.u0[i] * rapid.Float64Range(0, 2).Draw(rt, "u"))
					}
					v32, w32 := to32(drawVec(rt, n, "v")), to32(drawVec(rt, n, "w"))
					dp32 := to32(drawVec(rt, np, "dp"))
					for i := range dp32 {
						dp32[i] *= h.rates[i]
					}
					u, v, w, dp, p := to64(u32), to64(v32), to64(w32), to64(dp32), h.rates
					au, av, aw, adp := abs32(u32), abs32(v32), abs32(w32), abs32(dp32)

					got, want, m := make([]float32, n), make([]float64, n), make([]float32, n)
					ad.F(got, u32, p, 0)
					h.f(want, u, p, 0)
					mag.F(m, au, p, 0)
					close32(rt, "F", got, want, m)

					gJ, wJ, mJ := make([]float32, n*n), make([]float64, n*n), make([]float32, n*n)
					ad.Jac(gJ, u32, p, 0)
					h.jac(wJ, u, p, 0)
					mag.Jac(mJ, au, p, 0)
					close32(rt, "Jac", gJ, wJ, mJ)

					for _, withP := range []bool{false, true} {
						d32, d, ad32 := []float32(nil), []float64(nil), []float32(nil)
						if withP {
							d32, d, ad32 = dp32, dp, adp
						}
						ad.JVP(got, u32, v32, p, d32, 0)
						h.jvp(want, u, v, p, d, 0)
						mag.JVP(m, au, av, p, ad32, 0)
						close32(rt, "JVP", got, want, m)

						gdp, wdp, mdp := []float32(nil), []float64(nil), []float32(nil)
						if withP {
							gdp, wdp, mdp = make([]float32, np), make([]float64, np), make([]float32, np)
						}
						clear(got)
						clear(want)
						clear(m)
						ad.VJP(got, gdp, w32, u32, p, 0)
						h.vjp(want, wdp, w, u, p, 0)
						mag.VJP(m, mdp, aw, au, p, 0)
						close32(rt, "VJP", got, want, m)
						if withP {
							close32(rt, "VJP dp", gdp, wdp, mdp)
						}
					}
					if err := ad.Err(); err != nil {
						rt.Fatal(err)
					}
				})
			})
		}
	}
}

func drawVec(t *rapid.T, n int, name string) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rapid.Float64Range(-1, 1).Draw(t, name)
	}
	return v
}

// TestPolluSparse checks that the ad recording's structural pattern is
// stiffprob's POLLU pattern, and that the sparse Jacobian of PolluAD,
// by colour-seeded forward sweeps, holds the hand-written JacSparse's
// values.
func TestPolluSparse(t *testing.T) {
	var pl stiffprob.Pollu[float64]
	p, u := stiffprob.PolluRates(), stiffprob.PolluRef
	pat, err := odead.Sparsity(PolluAD, to32(u), p, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := pl.Pattern()
	if !slices.Equal(pat.RowPtr, want.RowPtr) || !slices.Equal(pat.ColIdx, want.ColIdx) {
		t.Fatalf("ad pattern %v %v, want POLLU's %v %v", pat.RowPtr, pat.ColIdx, want.RowPtr, want.ColIdx)
	}
	prob := odead.Func(PolluAD, 20, odead.JacPattern(want), odead.Replayable())
	if _, ok := prob.JacStructure.(ode.SparseJacobian); !ok {
		t.Fatalf("JacStructure %v, want sparse", prob.JacStructure)
	}
	got, hand := make([]float32, want.NNZ()), make([]float64, want.NNZ())
	for range 2 { // recorded, then replayed
		prob.Jac(got, to32(u), p, 0)
		pl.JacSparse(hand, u, p, 0)
		for k := range hand {
			if math.Abs(float64(got[k])-hand[k]) > 1e-5*math.Abs(hand[k]) {
				t.Fatalf("entry %d: ad %g, hand-written %g", k, got[k], hand[k])
			}
		}
	}
}

// TestNetworkStoichiometry checks that a catalyst, in and out of a
// reaction, is left out of the scatter: Robertson's y3 in its second
// reaction, and the 2 y2 → y2 + y3 of its third, net −1.
func TestNetworkStoichiometry(t *testing.T) {
	nw := RobertsonNetwork
	if len(nw.from) != 6 {
		t.Errorf("Robertson scatters %d rates, want 6 (from %v to %v)", len(nw.from), nw.from, nw.to)
	}
	if !slices.Equal(nw.b, []int{3, 2, 1}) || !slices.Equal(nw.a, []int{0, 1, 1}) {
		t.Errorf("reactants a %v b %v, want [0 1 1] [3 2 1]", nw.a, nw.b)
	}
}

// TestNewNetworkErrors checks that a malformed network is an error naming
// what is wrong.
func TestNewNetworkErrors(t *testing.T) {
	for _, c := range []struct {
		n    int
		rs   []Reaction
		want string
	}{
		{0, []Reaction{{In: []int{0}}}, "0 species"},
		{2, nil, "0 reactions"},
		{2, []Reaction{{In: []int{0, 1, 1}}}, "3 reactants"},
		{2, []Reaction{{Out: []int{1}}}, "0 reactants"},
		{2, []Reaction{{In: []int{0}, Out: []int{2}}}, "species 2"},
		{2, []Reaction{{In: []int{-1}}}, "species -1"},
	} {
		_, err := NewNetwork(c.n, c.rs)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewNetwork(%d, %v): error %v, want one naming %q", c.n, c.rs, err, c.want)
		}
	}
}

// TestADAllocs checks that the replayed ad products allocate nothing once
// warm.
func TestADAllocs(t *testing.T) {
	for _, h := range hands() {
		n, np := h.nw.n, h.nw.r
		prob := odead.Derivs(h.ad, n, odead.Replayable())
		u, p := to32(h.u0), h.rates
		a, b, dp, J := make([]float32, n), make([]float32, n), make([]float32, np), make([]float32, n*n)
		for name, fn := range map[string]func(){
			"F":     func() { prob.F(a, u, p, 0) },
			"Jac":   func() { prob.Jac(J, u, p, 0) },
			"JVP":   func() { prob.JVP(a, u, u, p, nil, 0) },
			"VJP":   func() { prob.VJP(a, nil, u, u, p, 0) },
			"JVP+p": func() { prob.JVP(b, u, u, p, p, 0) },
			"VJP+p": func() { prob.VJP(b, dp, u, u, p, 0) },
		} {
			fn()
			if k := testing.AllocsPerRun(20, fn); k != 0 {
				t.Errorf("%s %s: %v allocations, want 0", h.name, name, k)
			}
		}
	}
}
