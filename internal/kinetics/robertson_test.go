package kinetics

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode"
	"pgregory.net/rapid"
)

// TestRobertsonF checks F at a state where it is known exactly:
// u = (1, 1e-4, 0.5) gives the rates 0.04, 0.5 and 0.3.
func TestRobertsonF(t *testing.T) {
	var r Robertson[float64]
	du := make([]float64, 3)
	r.F(du, []float64{1, 1e-4, 0.5}, RobertsonRates(), 0)
	p := RobertsonRates()
	r1, r2, r3 := float64(p[0]), float64(p[1])*1e-4*0.5, float64(p[2])*1e-8
	want := []float64{0.46, -0.76, 0.3}
	for i, w := range want {
		if math.Abs(du[i]-w) > 1e-7*(r1+r2+r3) { // p rounded to float32
			t.Errorf("du[%d] = %.17g, want %g", i, du[i], w)
		}
	}
}

// drawRobertson draws a state of Robertson's scales: y1, y3 in [0, 1],
// y2 in [0, 4e-5].
func drawRobertson(t *rapid.T) []float64 {
	return []float64{rapid.Float64Range(0, 1).Draw(t, "y1"), rapid.Float64Range(0, 4e-5).Draw(t, "y2"),
		rapid.Float64Range(0, 1).Draw(t, "y3")}
}

// TestRobertsonJacobian checks Jac against central differences of F in
// random directions, and ParamJac against central differences in p
// (through a float64 copy of F, since p is float32).
func TestRobertsonJacobian(t *testing.T) {
	var r Robertson[float64]
	p := RobertsonRates()
	rapid.Check(t, func(rt *rapid.T) {
		u, v := drawRobertson(rt), drawVec(rt, 3, "v")
		v[1] *= 4e-5 // y2's scale
		J, Jp := make([]float64, 9), make([]float64, 9)
		r.Jac(J, u, p, 0)
		r.ParamJac(Jp, u, p, 0)
		h := 1e-3
		up, um := make([]float64, 3), make([]float64, 3)
		for i := range u {
			up[i], um[i] = u[i]+h*v[i], u[i]-h*v[i]
		}
		fp, fm := make([]float64, 3), make([]float64, 3)
		r.F(fp, up, p, 0)
		r.F(fm, um, p, 0)
		for i := range 3 {
			jv, mag := 0.0, 0.0
			for j := range 3 {
				jv += J[i*3+j] * v[j]
				mag += math.Abs(J[i*3+j] * v[j])
			}
			// F is quadratic: the central difference is exact but for
			// rounding.
			fd := (fp[i] - fm[i]) / (2 * h)
			if math.Abs(jv-fd) > 1e-9*mag+1e-12 {
				rt.Fatalf("row %d: J·v = %.15g, central difference %.15g", i, jv, fd)
			}
		}
		// F is linear in p: ∂F/∂p·dp = F with the rates dp.
		dp := []float32{float32(rapid.Float64Range(-1, 1).Draw(rt, "dp")), float32(rapid.Float64Range(-1, 1).Draw(rt, "dp")) * 1e4,
			float32(rapid.Float64Range(-1, 1).Draw(rt, "dp")) * 3e7}
		f := make([]float64, 3)
		r.F(f, u, dp, 0)
		for i := range 3 {
			jp, mag := 0.0, 0.0
			for k := range 3 {
				jp += Jp[i*3+k] * float64(dp[k])
				mag += math.Abs(Jp[i*3+k] * float64(dp[k]))
			}
			if math.Abs(jp-f[i]) > 1e-14*mag+1e-290 { // subnormal products round coarsely
				rt.Fatalf("row %d: ∂F/∂p·dp = %.17g, F with the rates dp %.17g", i, jp, f[i])
			}
		}
	})
}

// TestRobertsonProducts checks JVP and VJP against Jac and ParamJac, and
// the transpose identity ⟨w, J·(v, dp)⟩ = ⟨Jᵀw, (v, dp)⟩.
func TestRobertsonProducts(t *testing.T) {
	var r Robertson[float64]
	p := RobertsonRates()
	rapid.Check(t, func(rt *rapid.T) {
		u, v, w, dp := drawRobertson(rt), drawVec(rt, 3, "v"), drawVec(rt, 3, "w"), drawVec(rt, 3, "dp")
		J, Jp := make([]float64, 9), make([]float64, 9)
		r.Jac(J, u, p, 0)
		r.ParamJac(Jp, u, p, 0)
		jv, jvu := make([]float64, 3), make([]float64, 3)
		r.JVP(jv, u, v, p, dp, 0)
		r.JVP(jvu, u, v, p, nil, 0)
		vj, vjp := make([]float64, 3), make([]float64, 3)
		r.VJP(vj, vjp, w, u, p, 0)
		vju := make([]float64, 3)
		r.VJP(vju, nil, w, u, p, 0)
		for i := range 3 {
			var a, b, m, at, bt, mt float64 // J·v, Jp·dp, Jᵀw, Jpᵀw with magnitudes
			for j := range 3 {
				a += J[i*3+j] * v[j]
				b += Jp[i*3+j] * dp[j]
				m += math.Abs(J[i*3+j]*v[j]) + math.Abs(Jp[i*3+j]*dp[j])
				at += J[j*3+i] * w[j]
				bt += Jp[j*3+i] * w[j]
				mt += math.Abs(J[j*3+i]*w[j]) + math.Abs(Jp[j*3+i]*w[j])
			}
			const tol, tiny = 1e-14, 1e-290
			if math.Abs(jvu[i]-a) > tol*m+tiny || math.Abs(jv[i]-a-b) > tol*m+tiny {
				rt.Fatalf("row %d: JVP %.17g (dp nil %.17g), Jac and ParamJac give %.17g (%.17g)", i, jv[i], jvu[i], a+b, a)
			}
			if math.Abs(vj[i]-at) > tol*mt+tiny || vju[i] != vj[i] || math.Abs(vjp[i]-bt) > tol*mt+tiny {
				rt.Fatalf("column %d: VJP %.17g, %.17g (dp nil %.17g), Jac and ParamJac give %.17g, %.17g", i, vj[i], vjp[i], vju[i], at, bt)
			}
		}
		lhs, rhs, mag := 0.0, 0.0, 0.0
		for i := range 3 {
			lhs += w[i] * jv[i]
			rhs += vj[i]*v[i] + vjp[i]*dp[i]
			mag += math.Abs(w[i]*jv[i]) + math.Abs(vj[i]*v[i]) + math.Abs(vjp[i]*dp[i])
		}
		if math.Abs(lhs-rhs) > 1e-14*mag+1e-290 {
			rt.Fatalf("⟨w, J·(v, dp)⟩ = %.17g, ⟨Jᵀw, (v, dp)⟩ = %.17g", lhs, rhs)
		}
	})
}

// TestRobertsonGradientReference solves cvsRoberts_ASAi_dns with the
// hand-written products: G = ∫₀^{4e7} y3 dt and dG/dp reproduce the
// CVODES reference (ode's sens_robertson_test.go) by an adjoint, which
// calls VJP, and by forward sensitivities, which call JVP.
func TestRobertsonGradientReference(t *testing.T) {
	const refG = 3.99825282e7
	refP := []float64{7.683773e5, -3.068921, 5.114890e-4}
	var r Robertson[float64]
	prob := ode.Problem[float64]{F: r.F, Jac: r.Jac, JVP: r.JVP, VJP: r.VJP, U0: r.U0(), T1: 4e7, P: RobertsonRates()}
	loss := ode.Loss[float64]{
		Running:         func(u []float64, _ []float32, _ float64) float64 { return u[2] },
		RunningGradient: func(du, _, _ []float64, _ []float32, _ float64) { du[2] += 1 },
	}
	for _, s := range []ode.Sensitivity{ode.InterpolatingAdjoint{}, ode.ForwardSensitivity{}} {
		g, err := ode.Gradient(context.Background(), prob, ode.Rodas5P(), loss, s,
			ode.TolPerComponent(1e-8, []float64{1e-10, 1e-16, 1e-8}), ode.MaxSteps(1e6))
		if err != nil {
			t.Fatalf("%s: %v", s.Name(), err)
		}
		e := math.Abs(g.Value-refG) / refG
		for i, w := range refP {
			e = max(e, math.Abs(g.P[i]-w)/math.Abs(w))
		}
		if e > 1e-6 {
			t.Errorf("%s: G = %.9g, dG/dp = %.7g: max relative error %.3g against the reference, want ≤ 1e-6", s.Name(), g.Value, g.P, e)
		}
	}
}

// TestRobertsonAllocs checks that the hand-written functions allocate
// nothing.
func TestRobertsonAllocs(t *testing.T) {
	var r Robertson[float64]
	p, u := RobertsonRates(), []float64{0.5, 1e-5, 0.5}
	a, b, J := make([]float64, 3), make([]float64, 3), make([]float64, 9)
	for name, fn := range map[string]func(){
		"F":   func() { r.F(a, u, p, 0) },
		"Jac": func() { r.Jac(J, u, p, 0) },
		"JVP": func() { r.JVP(a, u, u, p, b, 0) },
		"VJP": func() { r.VJP(a, b, u, u, p, 0) },
	} {
		if n := testing.AllocsPerRun(10, fn); n != 0 {
			t.Errorf("%s: %v allocations, want 0", name, n)
		}
	}
}
