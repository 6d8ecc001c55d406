package stiffprob

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestPolluCombineT checks that polluCombineT is the transpose of
// polluCombine: g[k] is S_ik for the i-th unit vector w.
func TestPolluCombineT(t *testing.T) {
	for i := range 20 {
		var w [20]float64
		var g [26]float64
		w[i] = 1
		polluCombineT(&g, &w)
		for k := 1; k < 26; k++ {
			if g[k] != polluStoich[k][i] {
				t.Errorf("Sᵀe_%d at reaction %d = %g, want S = %g", i, k, g[k], polluStoich[k][i])
			}
		}
	}
}

// TestPolluRates checks that F with p = PolluRates() is F with the Test
// Set's float64 rates, to the rounding of the rates to float32 (6e-8 of
// the terms Σ_k |S_ik r_k| of each row: F cancels near equilibrium).
func TestPolluRates(t *testing.T) {
	var pl Pollu[float64]
	for _, u := range [][]float64{pl.U0(), PolluRef} {
		a, b := make([]float64, 20), make([]float64, 20)
		pl.F(a, u, nil, 0)
		pl.F(b, u, PolluRates(), 0)
		for i := range a {
			mag := 0.0
			for k := 1; k < 26; k++ {
				mag += math.Abs(polluStoich[k][i] * polluK[k] * polluMass((*[20]float64)(u), k))
			}
			if math.Abs(a[i]-b[i]) > 1e-7*mag {
				t.Errorf("f_%d: %g with the float64 rates, %g with PolluRates (terms %g)", i, a[i], b[i], mag)
			}
		}
	}
}

// drawState draws a state near POLLU's: each component of PolluRef
// scaled by a factor in [0.5, 1.5] and shifted by up to 0.1.
func drawState(t *rapid.T, name string) []float64 {
	u := make([]float64, 20)
	for i := range u {
		u[i] = PolluRef[i]*rapid.Float64Range(0.5, 1.5).Draw(t, name) + rapid.Float64Range(-0.1, 0.1).Draw(t, name)
	}
	return u
}

func drawVec(t *rapid.T, n int, name string) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rapid.Float64Range(-1, 1).Draw(t, name)
	}
	return v
}

// TestPolluProducts checks JVP and VJP, with and without the rates as
// parameters: the state parts against Jac·v and Jacᵀw, the parameter part
// of JVP against F itself (F is linear in the rates, so ∂F/∂p·dp is F
// with the rates dp), and the transpose identity ⟨w, J·(v, dp)⟩ =
// ⟨Jᵀw, (v, dp)⟩ over states and rates at once.
func TestPolluProducts(t *testing.T) {
	var pl Pollu[float64]
	for _, p := range [][]float32{nil, PolluRates()} {
		rapid.Check(t, func(rt *rapid.T) {
			u, v, w := drawState(rt, "u"), drawVec(rt, 20, "v"), drawVec(rt, 20, "w")
			var dp []float64
			dp32 := make([]float32, 25)
			if p != nil {
				dp = make([]float64, 25)
				for i := range dp {
					dp32[i] = float32(rapid.Float64Range(-1, 1).Draw(rt, "dp")) * p[i]
					dp[i] = float64(dp32[i])
				}
			}
			J := make([]float64, 400)
			pl.Jac(J, u, p, 0)
			jv, jvu, vj, dpw := make([]float64, 20), make([]float64, 20), make([]float64, 20), make([]float64, len(dp))
			pl.JVP(jvu, u, v, p, nil, 0)
			pl.JVP(jv, u, v, p, dp, 0)
			pl.VJP(vj, dpw, w, u, p, 0)
			fp := make([]float64, 20)
			if p != nil {
				pl.F(fp, u, dp32, 0)
			}
			// mag bounds the size of the terms of each row, which sets
			// its rounding.
			for i := range 20 {
				want, mag := 0.0, 0.0
				for j := range 20 {
					want += J[i*20+j] * v[j]
					mag += math.Abs(J[i*20+j] * v[j])
				}
				if math.Abs(jvu[i]-want) > 1e-13*mag+1e-290 {
					rt.Fatalf("p=%d: (J·v)_%d = %.17g, Jac gives %.17g", len(p), i, jvu[i], want)
				}
				if math.Abs(jv[i]-jvu[i]-fp[i]) > 1e-13*(mag+math.Abs(jv[i])+math.Abs(fp[i]))+1e-290 {
					rt.Fatalf("p=%d: (∂F/∂p·dp)_%d = %.17g, F with the rates dp gives %.17g", len(p), i, jv[i]-jvu[i], fp[i])
				}
				want, mag = 0, 0
				for j := range 20 {
					want += J[j*20+i] * w[j]
					mag += math.Abs(J[j*20+i] * w[j])
				}
				if math.Abs(vj[i]-want) > 1e-13*mag+1e-290 {
					rt.Fatalf("p=%d: (Jᵀw)_%d = %.17g, Jac gives %.17g", len(p), i, vj[i], want)
				}
			}
			lhs, rhs, mag := 0.0, 0.0, 0.0
			for i := range 20 {
				lhs += w[i] * jv[i]
				rhs += vj[i] * v[i]
				mag += math.Abs(w[i]*jv[i]) + math.Abs(vj[i]*v[i])
			}
			for k := range dp {
				rhs += dpw[k] * dp[k]
				mag += math.Abs(dpw[k] * dp[k])
			}
			if math.Abs(lhs-rhs) > 1e-12*mag+1e-290 {
				rt.Fatalf("p=%d: ⟨w, J·(v, dp)⟩ = %.17g, ⟨Jᵀw, (v, dp)⟩ = %.17g", len(p), lhs, rhs)
			}
		})
	}
}

// TestPolluProductsAdd checks that VJP adds into du and dp, and that JVP
// overwrites jv.
func TestPolluProductsAdd(t *testing.T) {
	var pl Pollu[float64]
	p := PolluRates()
	u, w := PolluRef, make([]float64, 20)
	for i := range w {
		w[i] = float64(i%3) - 1
	}
	du0, dp0 := make([]float64, 20), make([]float64, 25)
	pl.VJP(du0, dp0, w, u, p, 0)
	du1, dp1 := make([]float64, 20), make([]float64, 25)
	for i := range du1 {
		du1[i] = 1
	}
	for i := range dp1 {
		dp1[i] = 2
	}
	pl.VJP(du1, dp1, w, u, p, 0)
	for i := range du0 {
		if du1[i] != du0[i]+1 {
			t.Errorf("du[%d] = %g after adding into 1, want %g", i, du1[i], du0[i]+1)
		}
	}
	for i := range dp0 {
		if dp1[i] != dp0[i]+2 {
			t.Errorf("dp[%d] = %g after adding into 2, want %g", i, dp1[i], dp0[i]+2)
		}
	}
	jv := make([]float64, 20)
	for i := range jv {
		jv[i] = math.NaN()
	}
	pl.JVP(jv, u, w, p, nil, 0)
	for i, x := range jv {
		if math.IsNaN(x) {
			t.Errorf("jv[%d] left as it was", i)
		}
	}
}

// TestPolluAllocs checks that the products and JacSparse allocate nothing.
func TestPolluAllocs(t *testing.T) {
	var pl Pollu[float64]
	p, u := PolluRates(), PolluRef
	v, out, dp, J := make([]float64, 20), make([]float64, 20), make([]float64, 25), make([]float64, pl.Pattern().NNZ())
	for name, fn := range map[string]func(){
		"JVP":       func() { pl.JVP(out, u, v, p, dp, 0) },
		"VJP":       func() { pl.VJP(out, dp, v, u, p, 0) },
		"JacSparse": func() { pl.JacSparse(J, u, p, 0) },
	} {
		if a := testing.AllocsPerRun(10, fn); a != 0 {
			t.Errorf("%s: %v allocations, want 0", name, a)
		}
	}
}
