package kinetics

import (
	"fmt"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"pgregory.net/rapid"
)

// products64 are f's products recorded on a float64 tape.
type products64 struct {
	f, jv, du, dp []float64
}

// eval64 records f on a tape in float64, u a Param64 and the float32
// rates p converted on the way in by ParamFloat64 (p64) or a plain
// float32 Param that f must convert, and returns F, J·v + ∂F/∂p·dp (J·v
// alone without p64) and wᵀ·(∂F/∂u, ∂F/∂p), or the tape's error.
func eval64(f func(u, p ad.Var, t float64) ad.Var, p64 bool, u, v, w, dp []float64, p []float32) (products64, error) {
	n, np := len(u), len(p)
	tp := ad.NewTape()
	uv := tp.Param64(u)
	pv := tp.Param(p)
	var dpv ad.Var
	if p64 {
		pv = tp.ParamFloat64(p)
		dpv = tp.Const64(flat.Tensor64{Shape: []int{np}, Data: dp})
	}
	y := f(uv, pv, 0)
	jv, err := tp.JVPOf(y, []ad.Var{uv, pv}, []ad.Var{tp.Const64(flat.Tensor64{Shape: []int{n}, Data: v}), dpv})
	if err != nil {
		return products64{}, err
	}
	var out [2]ad.Var
	if err := tp.VJPOf(y, tp.Const64(flat.Tensor64{Shape: []int{n}, Data: w}), []ad.Var{uv, pv}, out[:]); err != nil {
		return products64{}, err
	}
	if y.Precision() != ad.Float64 {
		return products64{}, fmt.Errorf("RHS computed in %v, want float64 (u's)", y.Precision())
	}
	r := products64{f: y.Data64(), jv: jv.Data64(), du: out[0].Data64(), dp: out[1].Data64()}
	if !p64 {
		r.dp = to64(out[1].Data()) // a float32 Param's cotangent is float32
	}
	return r, nil
}

// TestADFloat64 checks RHS computed in float64 (eval64) against the
// hand-written float64 F, JVP and VJP to 1e-13 of the terms' magnitude
// (the absolute network's products at |u|, |v|, |w|, |dp|, also in
// float64). It is skipped while an op of RHS has no float64 kernel in ad.
func TestADFloat64(t *testing.T) {
	for _, h := range hands() {
		n, np := h.nw.n, h.nw.r
		abs := absNetwork(h.nw)
		for _, p64 := range []bool{true, false} {
			t.Run(h.name+map[bool]string{true: "/ParamFloat64", false: "/Param"}[p64], func(t *testing.T) {
				rapid.Check(t, func(rt *rapid.T) {
					u := make([]float64, n)
					for i := range u {
						u[i] = h.u0[i] * rapid.Float64Range(0, 2).Draw(rt, "u")
					}
					v, w, dp := drawVec(rt, n, "v"), drawVec(rt, n, "w"), drawVec(rt, np, "dp")
					for i := range dp {
						dp[i] *= float64(h.rates[i])
					}
					got, err := eval64(h.ad, p64, u, v, w, dp, h.rates)
					if err != nil {
						rt.Fatal(err)
					}
					mag, err := eval64(abs.RHS, p64, absv(u), absv(v), absv(w), absv(dp), h.rates)
					if err != nil {
						rt.Fatal(err)
					}
					var hdp []float64
					if p64 {
						hdp = dp
					}
					want, wdu, wdp := make([]float64, n), make([]float64, n), make([]float64, np)
					h.f(want, u, h.rates, 0)
					close64(rt, "F", got.f, want, mag.f, subnormal)
					h.jvp(want, u, v, h.rates, hdp, 0)
					close64(rt, "JVP", got.jv, want, mag.jv, subnormal)
					h.vjp(wdu, wdp, w, u, h.rates, 0)
					close64(rt, "VJP", got.du, wdu, mag.du, subnormal)
					if p64 {
						close64(rt, "VJP dp", got.dp, wdp, mag.dp, subnormal)
					} else {
						// float32 rounding, and float32's subnormals
						close64(rt, "VJP dp", got.dp, wdp, scaled(mag.dp, 1e6), 1e-44)
					}
				})
			})
		}
	}
}

func absv(x []float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = math.Abs(v)
	}
	return y
}

func scaled(x []float64, c float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = c * v
	}
	return y
}

// subnormal is the absolute floor of close64's float64 bounds: POLLU's
// states near 1e-300 make subnormal products, whose absolute rounding a
// bound relative to the terms' size does not cover (as stiffprob's
// TestPolluProducts allows).
const subnormal = 1e-290

// close64 checks got against want to 1e-13 of the terms' magnitude mag,
// plus tiny.
func close64(t *rapid.T, what string, got, want, mag []float64, tiny float64) {
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if e := math.Abs(got[i] - want[i]); !(e <= 1e-13*mag[i]+tiny) {
			t.Fatalf("%s[%d]: ad %.17g, hand-written %.17g: error %.3g, %.3g of the terms' magnitude %.3g",
				what, i, got[i], want[i], e, e/mag[i], mag[i])
		}
	}
}
