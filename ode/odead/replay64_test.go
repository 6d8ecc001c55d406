package odead_test

import (
	"math"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/bitwise"
	"github.com/flatkit/flatkit/ode/odead"
)

// TestDerivs64ReadsPInPlace: a float64 replay, whose ParamFloat64 holds
// a converted copy of p, sees p changed in place between calls, −0
// against 0 (1/k tells them apart) and NaN included: its F, JVP and VJP
// are a fresh recording's, bit for bit. It guards any shortcut that skips
// converting an unchanged p.
func TestDerivs64ReadsPInPlace(t *testing.T) {
	const n = 4
	f := func(u, p ad.Var, _ float64) ad.Var {
		k := ad.Convert(p, u.Precision())
		return ad.Add(ad.Mul(chainAD(u, p, 0), k), ad.Div(ad.ScalarLike(u, 1), k))
	}
	rep := odead.Derivs64(f, n, odead.Replayable())
	rec := odead.Derivs64(f, n)
	p := []float32{1, 2, 3, 4}
	u, v, w := []float64{0.3, 0.7, 1.1, 0.2}, []float64{1, -1, 0.5, 2}, []float64{0.4, 1, -2, 1}
	dp := []float64{0.1, 0.2, 0.3, 0.4}
	for call, change := range []func(){
		func() {}, func() {}, func() { p[2] = 5 }, func() { p[1] = 0 }, func() { p[1] = float32(math.Copysign(0, -1)) },
		func() { p[1] = 0 }, func() { p[0] = float32(math.NaN()) }, func() { p[0] = 1 },
	} {
		change()
		a, b := make([]float64, n), make([]float64, n)
		check := func(what string) {
			if !bitwise.Equal(a, b) {
				t.Fatalf("call %d, p %v: %s replayed %v, recorded %v", call, p, what, a, b)
			}
		}
		rep.F(a, u, p, 0)
		rec.F(b, u, p, 0)
		check("F")
		rep.JVP(a, u, v, p, dp, 0)
		rec.JVP(b, u, v, p, dp, 0)
		check("JVP")
		clear(a)
		clear(b)
		rep.VJP(a, nil, w, u, p, 0)
		rec.VJP(b, nil, w, u, p, 0)
		check("VJP")
	}
}
