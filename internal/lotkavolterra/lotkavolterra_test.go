package lotkavolterra

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// The float64 instances give the generic functions' bits.
func TestFloat64Instances(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		draw := func(n int, label string) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = rapid.Float64Range(-3, 3).Draw(rt, label)
			}
			return v
		}
		p := make([]float32, 4)
		for i := range p {
			p[i] = rapid.Float32Range(0.1, 3).Draw(rt, "p")
		}
		u, v, w, dp := draw(2, "u"), draw(2, "v"), draw(2, "w"), draw(4, "dp")
		same := func(what string, a, b []float64) {
			for i := range a {
				if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
					rt.Fatalf("%s[%d]: %v, want %v", what, i, a[i], b[i])
				}
			}
		}
		a, b := make([]float64, 2), make([]float64, 2)
		F64(a, u, p, 0)
		F(b, u, p, 0)
		same("F64", a, b)
		for _, d := range [][]float64{nil, dp} {
			JVP64(a, u, v, p, d, 0)
			JVP(b, u, v, p, d, 0)
			same("JVP64", a, b)
		}
		da, db := draw(2, "du"), []float64(nil)
		db = append(db, da...)
		pa, pb := draw(4, "dpacc"), []float64(nil)
		pb = append(pb, pa...)
		VJP64(da, pa, w, u, p, 0)
		VJP(db, pb, w, u, p, 0)
		same("VJP64 du", da, db)
		same("VJP64 dp", pa, pb)
		ja, jb := make([]float64, 8), make([]float64, 8)
		Jac64(ja, u, p, 0)
		Jac(jb, u, p, 0)
		same("Jac64", ja[:4], jb[:4])
		ParamJac64(ja, u, p, 0)
		ParamJac(jb, u, p, 0)
		same("ParamJac64", ja, jb)
	})
}
