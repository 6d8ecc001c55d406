package sir

import (
	"math"
	"testing"
)

// JVP matches central differences of F in u and p, and VJP is its
// transpose: wᵀ(J v) = (wᵀJ) v in several directions.
func TestProducts(t *testing.T) {
	u := []float64{0.7, 0.2}
	p := []float32{0.5, 0.1}
	dirs := [][4]float64{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}, {0.3, -0.7, 0.2, 0.9}}
	for _, d := range dirs {
		v, dp := []float64{d[0], d[1]}, []float64{d[2], d[3]}
		jv := make([]float64, 2)
		JVP(jv, u, v, p, dp, 0)
		// F is quadratic in u and linear in p: a central difference of F
		// with p moved in float64 is exact up to rounding.
		const h = 1e-6
		fd := make([]float64, 2)
		for _, s := range []float64{1, -1} {
			up := []float64{u[0] + s*h*v[0], u[1] + s*h*v[1]}
			b, g := float64(p[0])+s*h*dp[0], float64(p[1])+s*h*dp[1]
			fd[0] += s * (-b * up[0] * up[1]) / (2 * h)
			fd[1] += s * (b*up[0]*up[1] - g*up[1]) / (2 * h)
		}
		for i := range jv {
			if math.Abs(jv[i]-fd[i]) > 1e-8 {
				t.Errorf("direction %v: JVP[%d] = %v, differences %v", d, i, jv[i], fd[i])
			}
		}
		w := []float64{0.4, -1.3}
		du, dpw := make([]float64, 2), make([]float64, 2)
		VJP(du, dpw, w, u, p, 0)
		lhs := w[0]*jv[0] + w[1]*jv[1]
		rhs := du[0]*v[0] + du[1]*v[1] + dpw[0]*dp[0] + dpw[1]*dp[1]
		if math.Abs(lhs-rhs) > 1e-14 {
			t.Errorf("direction %v: wᵀ(Jv) = %v, (wᵀJ)v = %v", d, lhs, rhs)
		}
	}
}
