package stiffprob

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestBruss1DParamsIsBruss1D checks that at P() the parametrised
// Brusselator is Bruss1D: the same F and Jacobians in every storage at
// random states, to rounding. So Bruss1D's own checks carry over.
func TestBruss1DParamsIsBruss1D(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 9).Draw(rt, "N")
		b, q := NewBruss1D[float64](n), NewBruss1DParams[float64](n)
		u := drawBrussState(rt, b.U0())
		p := q.P()
		same := func(what string, got, want []float64) {
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-13*(1+math.Abs(want[i])) {
					rt.Fatalf("%s[%d] = %.17g, want Bruss1D's %.17g", what, i, got[i], want[i])
				}
			}
		}
		d := 2 * n
		g, w := make([]float64, 5*d+d*d), make([]float64, 5*d+d*d)
		q.F(g[:d], u, p, 0)
		b.F(w[:d], u, nil, 0)
		same("F", g[:d], w[:d])
		q.Jac(g, u, p, 0)
		b.Jac(w, u, nil, 0)
		same("Jac", g, w)
		q.JacBand(g, u, p, 0)
		b.JacBand(w, u, nil, 0)
		same("JacBand", g[:5*d], w[:5*d])
		q.JacSparse(g, u, p, 0)
		b.JacSparse(w, u, nil, 0)
		same("JacSparse", g[:b.Pattern().NNZ()], w[:b.Pattern().NNZ()])
	})
}

// TestBruss1DParamsDerivatives checks, at random states and parameters:
// the Jacobians in each storage against central differences of F in u
// and against each other; JVP's parameter part against central
// differences of F in p, exact as F is affine in p (steps of ½, exact in
// float32); and VJP as JVP's transpose, ⟨w, JVP(v, dp)⟩ = ⟨VJP(w), (v, dp)⟩.
func TestBruss1DParamsDerivatives(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 7).Draw(rt, "N")
		extra := rapid.IntRange(0, 4).Draw(rt, "extra")
		b := NewBruss1DParamsExtra[float64](n, extra)
		b.es = 0.25 // the extra parameters' terms large enough to check
		d, np := 2*n, 3+extra
		u := drawBrussState(rt, b.U0())
		p := []float32{
			float32(rapid.IntRange(1, 8).Draw(rt, "A")) / 4,
			float32(rapid.IntRange(1, 16).Draw(rt, "B")) / 4,
			float32(rapid.IntRange(1, 8).Draw(rt, "50α")) / 4,
		}
		for range extra {
			p = append(p, float32(rapid.IntRange(-8, 8).Draw(rt, "extra p"))/4)
		}
		vec := func(name string, k int) []float64 {
			x := make([]float64, k)
			for i := range x {
				x[i] = rapid.Float64Range(-1, 1).Draw(rt, name)
			}
			return x
		}
		v, w, dp := vec("v", d), vec("w", d), vec("dp", np)

		J, Jb, Js := make([]float64, d*d), make([]float64, 5*d), make([]float64, b.Pattern().NNZ())
		b.Jac(J, u, p, 0)
		b.JacBand(Jb, u, p, 0)
		b.JacSparse(Js, u, p, 0)
		pat := b.Pattern()
		k := 0
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				band := 0.0
				if j-i >= -2 && j-i <= 2 {
					band = Jb[i*5+j-i+2]
				} else if J[i*d+j] != 0 {
					rt.Fatalf("J[%d,%d] = %g outside the band", i, j, J[i*d+j])
				}
				if band != J[i*d+j] {
					rt.Fatalf("band J[%d,%d] = %g, dense %g", i, j, band, J[i*d+j])
				}
			}
			for _, j := range pat.Row(i) {
				if Js[k] != J[i*d+j] {
					rt.Fatalf("sparse J[%d,%d] = %g, dense %g", i, j, Js[k], J[i*d+j])
				}
				k++
			}
		}

		// J·v by Jac, by JVP without dp, and by central differences of F.
		jv, fd, fp, fm := make([]float64, d), make([]float64, d), make([]float64, d), make([]float64, d)
		b.JVP(jv, u, v, p, nil, 0)
		const h = 1e-6
		up, um := make([]float64, d), make([]float64, d)
		for i := range u {
			up[i], um[i] = u[i]+h*v[i], u[i]-h*v[i]
		}
		b.F(fp, up, p, 0)
		b.F(fm, um, p, 0)
		for i := 0; i < d; i++ {
			var jvi float64
			for j := 0; j < d; j++ {
				jvi += J[i*d+j] * v[j]
			}
			fd[i] = (fp[i] - fm[i]) / (2 * h)
			scale := 1 + math.Abs(jvi)
			if math.Abs(jv[i]-jvi) > 1e-12*scale*float64(d) || math.Abs(fd[i]-jvi) > 1e-6*scale*float64((n+1)*(n+1)) {
				rt.Fatalf("(J·v)[%d]: JVP %.15g, Jac %.15g, central differences %.15g", i, jv[i], jvi, fd[i])
			}
		}

		// ∂F/∂p·dp: JVP with dp minus without, against F's exact differences in p.
		jvp := make([]float64, d)
		b.JVP(jvp, u, v, p, dp, 0)
		for kk := range np {
			pp, pm := append([]float32(nil), p...), append([]float32(nil), p...)
			pp[kk] += 0.5
			pm[kk] -= 0.5
			b.F(fp, u, pp, 0)
			b.F(fm, u, pm, 0)
			for i := range fd {
				if kk == 0 {
					fd[i] = 0
				}
				fd[i] += (fp[i] - fm[i]) * dp[kk] // step 1: the difference is the derivative
			}
		}
		for i := range fd {
			if got := jvp[i] - jv[i]; math.Abs(got-fd[i]) > 1e-9*(1+math.Abs(fd[i])) {
				rt.Fatalf("(∂F/∂p·dp)[%d] = %.15g, differences of F %.15g", i, got, fd[i])
			}
		}

		// ParamJac·dp is that same part.
		Jp := make([]float64, d*np)
		b.ParamJac(Jp, u, p, 0)
		for i := range fd {
			var s float64
			for kk := range np {
				s += Jp[i*np+kk] * dp[kk]
			}
			if math.Abs(s-fd[i]) > 1e-9*(1+math.Abs(fd[i])) {
				rt.Fatalf("(ParamJac·dp)[%d] = %.15g, differences of F %.15g", i, s, fd[i])
			}
		}

		// Transpose: ⟨w, J·v + Fp·dp⟩ = ⟨Jᵀw, v⟩ + ⟨Fpᵀw, dp⟩; VJP adds.
		du, dq := make([]float64, d), make([]float64, np)
		du[0], dq[0] = 1, 1 // VJP adds into what is there
		b.VJP(du, dq, w, u, p, 0)
		du[0], dq[0] = du[0]-1, dq[0]-1
		var lhs, rhs, mag float64
		for i := range w {
			lhs += w[i] * jvp[i]
			rhs += du[i] * v[i]
			mag += math.Abs(w[i] * jvp[i])
		}
		for kk := range dq {
			rhs += dq[kk] * dp[kk]
		}
		if math.Abs(lhs-rhs) > 1e-12*(1+mag) {
			rt.Fatalf("⟨w, JVP(v, dp)⟩ = %.15g, ⟨VJP(w), (v, dp)⟩ = %.15g", lhs, rhs)
		}
		du2 := make([]float64, d)
		du2[0] = 1
		b.VJP(du2, nil, w, u, p, 0)
		du2[0]--
		for i := range du {
			if du2[i] != du[i] {
				rt.Fatalf("VJP with nil dp: du[%d] = %g, with dp %g", i, du2[i], du[i])
			}
		}
	})
}

// drawBrussState draws a state about u0: each component scaled by up to
// ±30 % and shifted by up to ±0.1.
func drawBrussState(rt *rapid.T, u0 []float64) []float64 {
	u := make([]float64, len(u0))
	for i := range u {
		u[i] = u0[i]*(1+rapid.Float64Range(-0.3, 0.3).Draw(rt, "scale")) + rapid.Float64Range(-0.1, 0.1).Draw(rt, "shift")
	}
	return u
}
