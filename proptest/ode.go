package proptest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/funcopt"
	"github.com/flatkit/flatkit/ode"
)

// Random ODE problems and a checker of ODE gradients. A drawn problem is a
// small system of the form
//
//	u_i' = Σ_r s_r·p_{k_r}·φ_r(u_{a_r})·ψ_r(u_{b_r}) − u_i/2 + cos(t + i)/4
//
// with φ, ψ ∈ {1, x, tanh, sin} (never x·x, so the solution grows at most
// exponentially over the short span), written two ways: float64 Go code
// with exact JVP, VJP and Jac, and ad ops (for odead.Problem). The forcing
// keeps the state from resting at an equilibrium, where the steps an
// adaptive solve takes say nothing about the gradient's accuracy. Its loss is
// non-separable over 1–3 save times, with an optional running cost.

// ODETerm is one term s·p_K·φ(u_A)·ψ(u_B) of output Out.
type ODETerm struct {
	Out, K, A, B int
	Sign         float64
	Phi, Psi     int // 0: 1, 1: x, 2: tanh x, 3: sin x
}

// ODECase is a drawn problem with its loss.
type ODECase struct {
	N, NP   int
	Terms   []ODETerm
	U0      []float64
	P       []float32
	T1      float64
	At      []float64
	Weights []float64 // the loss's per-component weights
	Running bool      // the loss has the running cost p_0·u_0²
	// Stiff, if > 0, adds the diffusion Stiff·(u_{i−1} − 2u_i + u_{i+1})
	// to u_i', without flux at the ends (u_{−1} = u_0, u_n = u_{n−1}):
	// eigenvalues down to −4·Stiff, a stiff problem for Stiff ≫ 1/T1
	// (StiffODECases). It keeps the mean, so the gradient does not vanish
	// with the fast modes.
	Stiff float64
}

const odeDamping = 0.5

func odeForcing(i int, t float64) float64 { return math.Cos(t+float64(i)) / 4 }

func odeFactor(kind int, x float64) (v, d float64) {
	switch kind {
	case 1:
		return x, 1
	case 2:
		th := math.Tanh(x)
		return th, 1 - th*th
	case 3:
		return math.Sin(x), math.Cos(x)
	}
	return 1, 0
}

func odeFactorAD(kind int, x ad.Var) ad.Var {
	switch kind {
	case 1:
		return x
	case 2:
		return ad.Tanh(x)
	case 3:
		return ad.Sin(x)
	}
	return ad.Var{}
}

var odeFactorNames = []string{"1", "x", "tanh", "sin"}

func (c ODECase) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "n=%d p=%v u0=%v T1=%g At=%v running=%v:", c.N, c.P, c.U0, c.T1, c.At, c.Running)
	if c.Stiff > 0 {
		fmt.Fprintf(&b, " u' += %g·(diffusion);", c.Stiff)
	}
	for _, r := range c.Terms {
		fmt.Fprintf(&b, " u%d' += %+g·p%d·%s(u%d)·%s(u%d);", r.Out, r.Sign, r.K, odeFactorNames[r.Phi], r.A, odeFactorNames[r.Psi], r.B)
	}
	return b.String()
}

// odeCaseBound is how large |u| may grow over a drawn case's span. A term
// such as 1.5·u·(2 − sin u) grows |u| by e⁹ over the span; the gradient is
// then so ill-conditioned that float32 solves disagree by far more than the
// tolerance asks (the methods are right, the problem is not a test of them).
const odeCaseBound = 10

// ODECases draws small random ODE problems with their losses, keeping those
// whose solution stays within |u| ≤ 10 over the span. A term such as
// 1.5·u·(2 − sin u) can grow |u| by e⁹, and the gradient is then too
// ill-conditioned to test the methods.
func ODECases() *rapid.Generator[ODECase] {
	return rapid.Custom(drawODECase).Filter(ODECase.bounded)
}

// bounded reports whether a float64 solve of c stays within odeCaseBound
// at every step.
func (c ODECase) bounded() bool {
	m := ode.Tsit5()
	if c.Stiff > 0 {
		m = ode.Rodas5P()
	}
	sol, err := ode.Solve(context.Background(), c.Problem64(), m, ode.Tol(1e-6, 1e-8), ode.SaveEveryStep())
	if err != nil {
		return false
	}
	for _, u := range sol.U {
		for _, v := range u {
			if math.Abs(v) > odeCaseBound {
				return false
			}
		}
	}
	return true
}

func drawODECase(t *rapid.T) ODECase {
	n := rapid.IntRange(1, 3).Draw(t, "n")
	np := rapid.IntRange(1, 4).Draw(t, "np")
	c := ODECase{N: n, NP: np}
	drawODECaseTerms(t, &c, func(_ int, label string) int { return rapid.IntRange(0, n-1).Draw(t, label) })
	drawODECaseRest(t, &c)
	return c
}

// drawODECaseTerms draws n to 2n+1 terms, term r of output r mod n,
// reading the states read(out, "a") and read(out, "b").
func drawODECaseTerms(t *rapid.T, c *ODECase, read func(out int, label string) int) {
	n, np := c.N, c.NP
	nt := rapid.IntRange(n, 2*n+1).Draw(t, "terms")
	for r := 0; r < nt; r++ {
		term := ODETerm{
			Out:  r % n,
			K:    rapid.IntRange(0, np-1).Draw(t, "k"),
			A:    read(r%n, "a"),
			B:    read(r%n, "b"),
			Sign: float64(2*rapid.IntRange(0, 1).Draw(t, "sign") - 1),
			Phi:  rapid.IntRange(0, 3).Draw(t, "phi"),
			Psi:  rapid.IntRange(0, 3).Draw(t, "psi"),
		}
		if term.Phi == 1 && term.Psi == 1 {
			term.Psi = 2
		}
		c.Terms = append(c.Terms, term)
	}
}

// drawODECaseRest draws a case's initial state, weights, parameters, span
// and loss, after its terms.
func drawODECaseRest(t *rapid.T, c *ODECase) {
	n, np := c.N, c.NP
	for i := 0; i < n; i++ {
		c.U0 = append(c.U0, rapid.Float64Range(-1.5, 1.5).Draw(t, "u0"))
		c.Weights = append(c.Weights, rapid.Float64Range(0.2, 2).Draw(t, "w"))
	}
	for k := 0; k < np; k++ {
		c.P = append(c.P, float32(rapid.Float64Range(0.5, 1.5).Draw(t, "p")))
	}
	c.T1 = rapid.Float64Range(0.5, 2).Draw(t, "T1")
	na := rapid.IntRange(1, 3).Draw(t, "saves")
	for j := 0; j < na; j++ {
		c.At = append(c.At, c.T1*rapid.Float64Range(0.2, 1).Draw(t, "at"))
	}
	if rapid.Bool().Draw(t, "atT1") {
		c.At[len(c.At)-1] = c.T1
	}
	c.Running = rapid.Bool().Draw(t, "running")
}

// Problem64 is the case as a float64 problem with exact JVP, VJP and Jac.
func (c ODECase) Problem64() ode.Problem[float64] {
	n := c.N
	f := func(du, u []float64, p []float32, t float64) {
		for i := range du {
			du[i] = -odeDamping*u[i] + odeForcing(i, t)
		}
		odeDiffuse(du, u, c.Stiff)
		for _, r := range c.Terms {
			a, _ := odeFactor(r.Phi, u[r.A])
			b, _ := odeFactor(r.Psi, u[r.B])
			du[r.Out] += r.Sign * float64(p[r.K]) * a * b
		}
	}
	jvp := func(jv, u, v []float64, p []float32, dp []float64, t float64) {
		for i := range jv {
			jv[i] = -odeDamping * v[i]
		}
		odeDiffuse(jv, v, c.Stiff)
		for _, r := range c.Terms {
			a, da := odeFactor(r.Phi, u[r.A])
			b, db := odeFactor(r.Psi, u[r.B])
			pk := float64(p[r.K])
			d := pk * (da*v[r.A]*b + a*db*v[r.B])
			if dp != nil {
				d += dp[r.K] * a * b
			}
			jv[r.Out] += r.Sign * d
		}
	}
	vjp := func(du, dp, w, u []float64, p []float32, t float64) {
		for i := range du {
			du[i] -= odeDamping * w[i]
		}
		odeDiffuse(du, w, c.Stiff) // symmetric
		for _, r := range c.Terms {
			a, da := odeFactor(r.Phi, u[r.A])
			b, db := odeFactor(r.Psi, u[r.B])
			s := r.Sign * w[r.Out]
			pk := float64(p[r.K])
			du[r.A] += s * pk * da * b
			du[r.B] += s * pk * a * db
			if dp != nil {
				dp[r.K] += s * a * b
			}
		}
	}
	jac := func(J, u []float64, p []float32, t float64) {
		clear(J)
		for i := 0; i < n; i++ {
			J[i*n+i] = -odeDamping
			if i > 0 {
				J[i*n+i-1] = c.Stiff
				J[i*n+i] -= c.Stiff
			}
			if i+1 < n {
				J[i*n+i+1] = c.Stiff
				J[i*n+i] -= c.Stiff
			}
		}
		for _, r := range c.Terms {
			a, da := odeFactor(r.Phi, u[r.A])
			b, db := odeFactor(r.Psi, u[r.B])
			s := r.Sign * float64(p[r.K])
			J[r.Out*n+r.A] += s * da * b
			J[r.Out*n+r.B] += s * a * db
		}
	}
	return ode.Problem[float64]{F: f, JVP: jvp, VJP: vjp, Jac: jac,
		U0: append([]float64(nil), c.U0...), T1: c.T1, P: append([]float32(nil), c.P...)}
}

// odeDiffuse adds k·(x_{i−1} − 2x_i + x_{i+1}) to d_i, without flux at
// the ends. The operator is symmetric: the VJP takes it too.
func odeDiffuse(d, x []float64, k float64) {
	if k == 0 {
		return
	}
	n := len(x)
	for i := range n {
		var s float64
		if i > 0 {
			s += x[i-1] - x[i]
		}
		if i+1 < n {
			s += x[i+1] - x[i]
		}
		d[i] += k * s
	}
}

// RHS is the case's right-hand side written with ad ops, for odead.Problem.
func (c ODECase) RHS() func(u, p ad.Var, t float64) ad.Var {
	return func(u, p ad.Var, t float64) ad.Var {
		outs := make([]ad.Var, c.N)
		for i := range outs {
			outs[i] = ad.Add(ad.Scale(ad.Slice(u, i, i+1), -odeDamping), u.Tape().Scalar(float32(odeForcing(i, t))))
		}
		if c.Stiff > 0 {
			for i := range outs {
				ui := ad.Slice(u, i, i+1)
				if i > 0 {
					outs[i] = ad.Add(outs[i], ad.Scale(ad.Sub(ad.Slice(u, i-1, i), ui), c.Stiff))
				}
				if i+1 < c.N {
					outs[i] = ad.Add(outs[i], ad.Scale(ad.Sub(ad.Slice(u, i+1, i+2), ui), c.Stiff))
				}
			}
		}
		c.addTermsAD(outs, u, p, true)
		return ad.Concat(0, outs...)
	}
}

// addTermsAD adds the case's terms, written with ad ops, into outs; with
// f32 each sign is rounded to float32 first, as the float32 RHS takes it.
func (c ODECase) addTermsAD(outs []ad.Var, u, p ad.Var, f32 bool) {
	for _, r := range c.Terms {
		sign := r.Sign
		if f32 {
			sign = float64(float32(sign))
		}
		term := ad.Scale(ad.Slice(p, r.K, r.K+1), sign)
		if f := odeFactorAD(r.Phi, ad.Slice(u, r.A, r.A+1)); !f.IsZero() {
			term = ad.Mul(term, f)
		}
		if f := odeFactorAD(r.Psi, ad.Slice(u, r.B, r.B+1)); !f.IsZero() {
			term = ad.Mul(term, f)
		}
		outs[r.Out] = ad.Add(outs[r.Out], term)
	}
}

// Loss is the case's loss for state type F:
//
//	L = Σ_i Σ_j w_j u_j(t_i)²/2 + (Σ_i Σ_j u_j(t_i))²/10 [+ ∫ p_0 u_0² dt]
//
// (the second term couples all save times).
func Loss[F ode.Float](c ODECase) ode.Loss[F] {
	l := ode.Loss[F]{At: append([]float64(nil), c.At...)}
	l.Saved = func(ts []float64, us, dl [][]F) float64 {
		var v, s float64
		for _, u := range us {
			for j, x := range u {
				xf := float64(x)
				v += c.Weights[j] * xf * xf / 2
				s += xf
			}
		}
		v += s * s / 10
		for i, u := range us {
			for j, x := range u {
				dl[i][j] = F(c.Weights[j]*float64(x) + s/5)
			}
		}
		return v
	}
	if c.Running {
		l.Running = func(u []F, p []float32, t float64) float64 {
			x := float64(u[0])
			return float64(p[0]) * x * x
		}
		l.RunningGradient = func(du, dp, u []F, p []float32, t float64) {
			x := float64(u[0])
			du[0] += F(2 * float64(p[0]) * x)
			if dp != nil {
				dp[0] += F(x * x)
			}
		}
	}
	return l
}

// ODEOption adjusts CheckODEGradient: its tolerances, its steps and the
// options of its solves. A value ≤ 0 keeps the default. It is a type of its
// own, so that a derivative check's option cannot be given to
// CheckODEGradient, nor an ODEOption to a derivative check.
type ODEOption func(*odeCheckConfig)

type odeCheckConfig struct {
	tol, agree float64
	steps      int
	fdTol      float64
	fdParams   int
	opts       []ode.GradientOption
}

// ODETol sets the rtol of the adaptive solves (default 1e-8; atol is
// rtol/100). The sensitivity methods must agree with DiscreteAdjoint of
// the same adaptive solve within ODEAgree·rtol, relative to the largest
// gradient component.
func ODETol(rtol float64) ODEOption { return func(c *odeCheckConfig) { c.tol = rtol } }

// ODEAgree sets how many times ODETol's rtol the sensitivity methods may
// differ by (default 50). An adaptive solve's global error is not bounded
// by its rtol, and each method carries its own: over 320 000 random
// problems (ODECases) at rtol 1e-8 the methods agreed within 28× rtol
// with DP5, 17× with Tsit5 and 6.5× with Vern7, and DiscreteAdjoint with
// DP5 was itself up to 28× rtol from a reference solved at rtol 1e-13. A
// wrong derivative rule is off by far more than 50× rtol.
func ODEAgree(k float64) ODEOption { return func(c *odeCheckConfig) { c.agree = k } }

// ODESteps sets the number of fixed steps of the finite-difference check
// (default 64).
func ODESteps(n int) ODEOption { return func(c *odeCheckConfig) { c.steps = n } }

// ODEFDTol sets the tolerance of the finite-difference check, relative to
// the largest gradient component (default 1e-6 for float64 states, 3e-3
// for float32). A float32 solve's rounding, about ε₃₂·|L|/δ, is in its
// finite differences: with these defaults, 2 300 random ad problems and
// 2 300 networks were up to 3.2e-4 and 8.5e-4 from DiscreteAdjoint
// (medians 2.2e-5 and 5.8e-5). In a case 4.7e-4 apart, DiscreteAdjoint
// was within 2e-7 of the float64 gradient and the finite differences
// 1.2e-3 off in one component.
func ODEFDTol(tol float64) ODEOption { return func(c *odeCheckConfig) { c.fdTol = tol } }

// ODEFDParams limits the finite differences to n coordinates of p, evenly
// spaced (networks have hundreds). By default, or with n ≤ 0, every
// coordinate is checked.
func ODEFDParams(n int) ODEOption { return func(c *odeCheckConfig) { c.fdParams = n } }

// ODEOptions adds options to every solve of the check, after its own: a
// MaxSteps, or a vector tolerance (which replaces ODETol's).
func ODEOptions(opts ...ode.GradientOption) ODEOption {
	opts = slices.Clone(opts)
	return func(c *odeCheckConfig) { c.opts = append(c.opts, opts...) }
}

// CheckODEGradient checks the gradient of loss through a solve of prob with
// method m, in two ways:
//
//   - With m explicit, or a Rosenbrock method and prob.VJP set:
//     DiscreteAdjoint of a fixed-step solve (ODESteps) against finite
//     differences of the same fixed-step solve, coordinate by coordinate
//     in u0 and p (central differences with Richardson extrapolation, on
//     the steps actually taken). The step in an element x of p is
//     2⁻⁶·max(|x|, 1) for a float32 problem; for float64, about 2⁻¹⁰ of
//     x's binade, a power of two that keeps x + δ in that binade.
//   - Every sensitivity method that prob supports (ForwardSensitivity needs
//     JVP; InterpolatingAdjoint, with and without checkpoints, and
//     GaussAdjoint (its backward solve at a tenth of ODETol: its error
//     test sees λ alone) need VJP; DiscreteAdjoint needs VJP and an m other
//     than BDF) against the others on the adaptive solve at rtol ODETol,
//     with steps landing on the save times (TStops): against
//     DiscreteAdjoint when it applies, else against ForwardSensitivity.
//     ForwardSensitivity builds its right-hand side from VJP rows or Jac
//     and ParamJac when it can, so with prob.JVP set it also runs once on
//     prob without VJP and ParamJac ("JVP columns"), so that a wrong JVP
//     cannot pass unused.
//     A problem that supports fewer than two methods is a fatal error:
//     there would be nothing to compare.
//
// Each comparison is ‖a − b‖∞ ≤ tol·max(‖b‖∞, 1e-2) over (dL/dp, dL/du0).
func CheckODEGradient[F ode.Float](t T, prob ode.Problem[F], m ode.Method, loss ode.Loss[F], opts ...ODEOption) {
	t.Helper()
	ctx := context.Background()
	isF32 := F(1)+F(0x1p-30) == F(1)
	c := funcopt.Collect(opts)
	fdTol := 1e-6
	if isF32 {
		fdTol = 3e-3
	}
	tol, agree, fdTol := orDefault(c.tol, 1e-8), orDefault(c.agree, 50), orDefault(c.fdTol, fdTol)
	discrete := hasDiscreteAdjoint(m)
	// An explicit m needs VJP here (DiscreteAdjoint's error says so); a
	// Rosenbrock m without it is left to the count of methods below.
	if discrete && (isExplicit(m) || prob.VJP != nil) {
		h := math.Abs(prob.T1-prob.T0) / float64(orDefault(c.steps, 64))
		opts := append(slices.Clone(c.opts), ode.FixedStep(h))
		checkDiscreteAgainstFD(t, prob, m, loss, opts, fdTol, isF32, c.fdParams)
	}
	// Steps land on the save times, so that no method's figure rests on
	// the interpolant (whose error and derivative are an order worse).
	solveOpts := append([]ode.GradientOption{ode.Tol(tol, tol/100), ode.TStops(loss.At...)}, c.opts...)
	var ref []float64
	var refName string
	type method struct {
		name string
		s    ode.Sensitivity
		prob ode.Problem[F]
	}
	methods := []method{}
	add := func(s ode.Sensitivity, p ode.Problem[F], suffix string) {
		methods = append(methods, method{s.Name() + suffix, s, p})
	}
	if discrete && prob.VJP != nil {
		add(ode.DiscreteAdjoint{}, prob, "")
	}
	if prob.JVP != nil {
		add(ode.ForwardSensitivity{}, prob, "")
		if prob.VJP != nil || prob.ParamJac != nil {
			columns := prob
			columns.VJP, columns.ParamJac = nil, nil
			add(ode.ForwardSensitivity{}, columns, " (JVP columns)")
		}
	}
	if prob.VJP != nil {
		add(ode.InterpolatingAdjoint{}, prob, "")
		add(ode.InterpolatingAdjoint{Checkpoints: 4}, prob, " (4 checkpoints)")
		// GaussAdjoint's backward error test sees λ alone (μ is a
		// quadrature beside it), so its steps can span a fast forward
		// transient in a running cost's forcing: at the default tolerance
		// its dL/du0 was ~1900× rtol off on a stiff case with states near
		// 1e-5 (TestODEGradientsOfRandomStiffProblems, seed
		// 6806448695243162543), against 2e-10 at a tenth of it.
		add(ode.GaussAdjoint{AdjointTol: ode.Tolerance{Rel: tol / 10, Abs: tol / 1000}}, prob, " (AdjointTol rtol/10)")
	}
	if len(methods) < 2 {
		// Only reachable with BDF (any other m needed VJP for
		// DiscreteAdjoint above): one method, or none, checks nothing.
		have := "no sensitivity method"
		if len(methods) == 1 {
			have = "only " + methods[0].name
		}
		t.Fatalf("CheckODEGradient: with %s this problem supports %s, so there is nothing to check it against; want Problem.VJP too (odead.Derivs and odead.Problem give JVP and VJP)", m.Name(), have)
		return
	}
	grad := func(s method, opts []ode.GradientOption) ([]float64, bool) {
		g, err := ode.Gradient(ctx, s.prob, m, loss, s.s, opts...)
		if err != nil {
			t.Fatalf("CheckODEGradient: %s with %s: %v", s.name, m.Name(), err)
			return nil, false
		}
		return flatGrad(g), true
	}
	// A gap between two methods that is their discretisation errors
	// shrinks with the tolerance; a wrong derivative's does not. So a gap
	// above agree·tol is an error unless at tol/10 it is at most a third
	// of itself. Rosenbrock23's gradients converge slowly (their gap grew
	// as tol^0.7 on a stiff case with states near 1e-5, 1400× rtol apart at
	// 1e-8: TestODEGradientsOfRandomStiffProblems, seed
	// 15859786200120937719), while a JVP off by 1e-4 keeps its gap
	// (TestCheckODEGradientCatchesWrongRulesStiff).
	tighter := append([]ode.GradientOption{ode.Tol(tol/10, tol/1000), ode.TStops(loss.At...)}, c.opts...)
	var refMethod method
	for _, s := range methods {
		v, ok := grad(s, solveOpts)
		if !ok {
			return
		}
		if ref == nil {
			ref, refName, refMethod = v, s.name, s
			continue
		}
		e := relInf(v, ref)
		if e <= agree*tol {
			continue
		}
		v10, ok1 := grad(s, tighter)
		ref10, ok2 := grad(refMethod, tighter)
		if !ok1 || !ok2 {
			return
		}
		if e10 := relInf(v10, ref10); e10 <= e/3 {
			logf(t, "CheckODEGradient: %s and %s (%s) differ by %.3g relative at rtol %g and %.3g at rtol %g: a discretisation gap, not a wrong derivative",
				s.name, refName, m.Name(), e, tol, e10, tol/10)
			continue
		}
		t.Errorf("CheckODEGradient: %s and %s (%s, rtol %g) differ by %.3g relative (> %g), and as much at rtol %g:\n  %s %v\n  %s %v",
			s.name, refName, m.Name(), tol, e, agree*tol, tol/10, s.name, v, refName, ref)
	}
}

// logf logs through t when it can (testing.T and rapid.T can).
func logf(t T, format string, args ...any) {
	if l, ok := t.(interface{ Logf(string, ...any) }); ok {
		l.Logf(format, args...)
	}
}

// orDefault is v, or def if v ≤ 0 (an option not given).
func orDefault[N int | float64](v, def N) N {
	if v > 0 {
		return v
	}
	return def
}

// isExplicit reports whether m is an explicit method: not BDF nor a
// Rosenbrock method (whose Name is theirs whatever their settings).
func isExplicit(m ode.Method) bool {
	switch m.Name() {
	case "Rosenbrock23", "Rodas5P", "BDF":
		return false
	}
	return true
}

// hasDiscreteAdjoint reports whether DiscreteAdjoint goes through m's
// steps: every method but BDF (whose Name is its own whatever its
// settings).
func hasDiscreteAdjoint(m ode.Method) bool {
	return m.Name() != "BDF"
}

// flatGrad is (dL/dp, dL/du0) in float64.
func flatGrad[F ode.Float](g *ode.GradientResult[F]) []float64 {
	v := make([]float64, 0, len(g.P)+len(g.U0))
	for _, x := range g.P {
		v = append(v, float64(x))
	}
	for _, x := range g.U0 {
		v = append(v, float64(x))
	}
	return v
}

// paramStep is a finite-difference step for the float32 parameter p. For
// float64 states, a power of two about 2⁻¹⁰ of |p|, made smaller while p +
// δ would reach the next binade (where float32's spacing doubles), so that
// p ± δ and p ± δ/2 are exact. For float32 states the loss's own rounding
// (~ε₃₂·|L|) divided by δ dominates, so the step is 2⁻⁶·max(|p|, 1)
// whatever p's size (a network's weights near 0 move the loss as much as
// large ones), and the step actually taken is measured instead.
// along is the function d ↦ (value(), the step taken) with xs[j] moved
// to xs[j] + d (rounded to X) while value runs, then restored: the
// perturbation a finite difference along one element of θ or u0 makes.
func along[X ode.Float](xs []X, j int, value func() float64) func(d float64) (float64, float64) {
	x := xs[j]
	return func(d float64) (float64, float64) {
		xs[j] = x + X(d)
		step := float64(xs[j]) - float64(x)
		v := value()
		xs[j] = x
		return v, step
	}
}

func paramStep(p float32, isF32 bool) float64 {
	a := math.Abs(float64(p))
	if isF32 {
		return 0x1p-6 * max(a, 1)
	}
	if a == 0 {
		return 0x1p-10
	}
	_, e := math.Frexp(a) // a < 2^e
	δ := math.Ldexp(1, e-10)
	for a+δ >= math.Ldexp(1, e) && δ > math.Ldexp(1, e-20) {
		δ /= 2
	}
	return δ
}

// relInf is ‖a − b‖∞ / max(‖b‖∞, 1e-2): gradients below 1e-2 are compared
// absolutely.
func relInf(a, b []float64) float64 {
	var d, s float64
	for i := range b {
		d = max(d, math.Abs(a[i]-b[i]))
		s = max(s, math.Abs(b[i]))
	}
	return d / max(s, 1e-2)
}

func checkDiscreteAgainstFD[F ode.Float](t T, prob ode.Problem[F], m ode.Method, loss ode.Loss[F], opts []ode.GradientOption, fdTol float64, isF32 bool, fdParams int) {
	t.Helper()
	ctx := context.Background()
	gs, err := ode.NewGradientSolver(prob, m, ode.DiscreteAdjoint{}, opts...)
	if err != nil {
		t.Fatalf("CheckODEGradient: %v", err)
		return
	}
	g, err := gs.GradientFor(ctx, prob, loss)
	if err != nil {
		t.Fatalf("CheckODEGradient: DiscreteAdjoint with %s, fixed steps: %v", m.Name(), err)
		return
	}
	all := flatGrad(g)
	coords := make([]int, 0, len(prob.P))
	for k := range prob.P {
		coords = append(coords, k)
	}
	if fdParams > 0 && fdParams < len(coords) {
		coords = coords[:0]
		for j := 0; j < fdParams; j++ {
			coords = append(coords, j*len(prob.P)/fdParams)
		}
	}
	adj := make([]float64, 0, len(coords)+len(prob.U0))
	for _, k := range coords {
		adj = append(adj, all[k])
	}
	adj = append(adj, all[len(prob.P):]...)
	value := func(pr ode.Problem[F]) float64 {
		g, err := gs.GradientFor(ctx, pr, loss)
		if err != nil {
			t.Fatalf("CheckODEGradient: a perturbed solve failed: %v", err)
			return math.NaN()
		}
		return g.Value
	}
	// D(δ) = (L(+a) − L(−b))/(a + b), a ≈ b ≈ δ the steps actually taken
	// (p ± δ rounded to float32), extrapolated: R(δ) = (4D(δ/2) − D(δ))/3.
	richardson := func(at func(δ float64) (float64, float64), δ float64) float64 {
		lp, a := at(δ)
		lm, b := at(-δ)
		d1 := (lp - lm) / (a - b)
		lp, a = at(δ / 2)
		lm, b = at(-δ / 2)
		d2 := (lp - lm) / (a - b)
		return richardson(d1, d2, 2)
	}
	// The starting step suits the loss's rounding, not its curvature: a
	// loss that bends sharply (dL/du0 = 50 on L ≈ 1) is off by 1e-3 at
	// δ = 2⁻⁶. So the step shrinks by 4, at most four times, until R
	// changes by at most a tenth of the tolerance. The estimate kept is
	// the smaller-step one of the two consecutive R whose change, or the
	// rounding the smaller step lets through (8ε|L|/δ), is least. A single
	// stray R does not decide: a stiff fixed-step solve's loss had a jump
	// of ~4e-11 in u0 that put R(3e-4) 2e-6 off while R(1.2e-3) and
	// R(8e-5) were right (TestODEGradientsOfRandomStiffProblems, seed
	// 14618711424548301039); and two small steps whose float32 rounding
	// happened to agree do not win either (TestODEGradientsOfRandomNetworks,
	// seed 16117302639695318699).
	scale := 1e-2
	for _, v := range adj {
		scale = max(scale, math.Abs(v))
	}
	eps := 0x1p-52
	if isF32 {
		eps = 0x1p-23
	}
	rounding := func(δ float64) float64 { return 8 * eps * max(math.Abs(g.Value), 1e-2) / δ }
	refined := func(at func(δ float64) (float64, float64), δ float64) float64 {
		r := richardson(at, δ)
		best, bestScore := r, math.Inf(1)
		for range 4 {
			δ /= 4
			next := richardson(at, δ)
			c := math.Abs(next - r)
			if score := max(c, rounding(δ)); score < bestScore {
				best, bestScore = next, score
			}
			if c <= fdTol/10*scale {
				break
			}
			r = next
		}
		return best
	}
	fd := make([]float64, 0, len(adj))
	p := append([]float32(nil), prob.P...)
	withP := func() float64 { pr := prob; pr.P = p; return value(pr) }
	for _, k := range coords {
		fd = append(fd, refined(along(p, k, withP), paramStep(p[k], isF32)))
	}
	u0 := append([]F(nil), prob.U0...)
	withU0 := func() float64 { pr := prob; pr.U0 = u0; return value(pr) }
	for j := range u0 {
		δ := 0x1p-10 * max(math.Abs(float64(u0[j])), 1)
		if isF32 {
			δ = 0x1p-6 * max(math.Abs(float64(u0[j])), 1)
		}
		fd = append(fd, refined(along(u0, j, withU0), δ))
	}
	if e := relInf(adj, fd); e > fdTol {
		t.Errorf("CheckODEGradient: DiscreteAdjoint (%s, fixed steps) and finite differences of the same solve differ by %.3g relative (> %g):\n  adjoint %v\n  fd      %v",
			m.Name(), e, fdTol, adj, fd)
	}
}
