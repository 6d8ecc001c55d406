package ode

import "math"

// Derivative products of a plain Go right-hand side by finite differences.
// A sensitivity method with FiniteDiff set uses them when the Problem has
// no JVP or VJP.
//
// Every difference is central. Its truncation error is O(δ²)·F''' instead
// of a forward difference's O(δ)·F'', at twice the evaluations. The step
// that balances it against the rounding error ε·|F|/δ is δ ≈ ∛ε relative.
// The total error is then about ε^(2/3).
//
// The parameters are float32 whatever T is, so a parameter step is taken
// in float32, on a private copy of p; the caller's buffer is never
// written. The step is δ_k = ∛ε₃₂·max(|p_k|, 1), so each parameter moves on
// its own scale: a large rate beside a small one does not set the small
// one's step. The step divided by is the one float32 actually took,
// float32(p_k+δ_k) − float32(p_k−δ_k), which float64 holds exactly.
//
// The step is ε₃₂'s, not T's, because a right-hand side often does its
// parameter arithmetic in float32 even with a float64 state, as in
// k := p[0]*p[1]. That rounding, ε₃₂ relative, is divided by the step. A
// step of float64's ∛ε would magnify it a thousandfold; a float64-only F
// would gain from it, but robustness wins. With δ that large the
// truncation error dominates: about δ²/6·|∂³F/∂p_k³|. A right-hand side
// linear in p is exact to rounding, as mass-action kinetics and
// Lotka-Volterra are. TestFiniteDiffProducts pins the errors of each
// case.

// fdScratch is the lazily allocated working memory of a finite-difference
// product. It is sized on the first call and reused, and reallocated only
// if the dimension grows.
type fdScratch[T Float] struct {
	up, um []T // the perturbed states
	fp, fm []T // F at them
	pp     []float32
}

func (s *fdScratch[T]) ensure(n, np int) {
	if cap(s.up) < n {
		buf := make([]T, 4*n)
		s.up, s.um, s.fp, s.fm = buf[:n:n], buf[n:2*n:2*n], buf[2*n:3*n:3*n], buf[3*n:]
	}
	s.up, s.um, s.fp, s.fm = s.up[:n], s.um[:n], s.fp[:n], s.fm[:n]
	if cap(s.pp) < np {
		s.pp = make([]float32, np)
	}
	s.pp = s.pp[:np]
}

// cbrtEps returns ∛ε of T: the relative size of a central difference step
// in T.
func cbrtEps[T Float]() float64 {
	if T(1)+T(0x1p-30) == T(1) { // T is float32
		return cbrtEps32
	}
	return math.Cbrt(0x1p-52)
}

// cbrtEps32 is ∛ε of float32, the relative step of a parameter difference.
var cbrtEps32 = math.Cbrt(0x1p-23)

// pStep returns the float32 values p_k ± δ_k of a parameter difference and
// the step between them, exact in float64.
func pStep(pk float32) (hi, lo float32, step float64) {
	x := float64(pk)
	d := cbrtEps32 * max(math.Abs(x), 1)
	hi, lo = float32(x+d), float32(x-d)
	return hi, lo, float64(hi) - float64(lo)
}

// pDiff evaluates F at u and p ± δ_k e_k into s.fp and s.fm, and returns
// 1/step. s.pp holds the copy of p.
func (s *fdScratch[T]) pDiff(f func(du, u []T, p []float32, t float64), u []T, k int, t float64) T {
	pk := s.pp[k]
	hi, lo, step := pStep(pk)
	s.pp[k] = hi
	f(s.fp, u, s.pp, t)
	s.pp[k] = lo
	f(s.fm, u, s.pp, t)
	s.pp[k] = pk
	return T(1 / step)
}

func normInf[T Float](x []T) float64 {
	m := 0.0
	for _, v := range x {
		m = max(m, math.Abs(float64(v)))
	}
	return m
}

// finiteDiffJVP returns Problem.JVP for f by central differences. ∂F/∂u·v
// goes along v in T, with the step δ = ∛ε_T·max(1, ‖u‖∞) on the unit
// direction v/‖v‖∞. That takes 2 evaluations of f, none when v = 0.
// ∂F/∂p·dp goes one parameter at a time in float32, with the steps above:
// 2 evaluations for each dp_k ≠ 0.
//
// TestFiniteDiffProducts checks the accuracy against closed forms, on
// Lotka-Volterra, Robertson, an F with sin and exp terms and one with
// float32 parameter products. The errors are relative to the magnitude
// Σ_j |J_ij x_j| of a product's terms. The ∂u steps are absolute below
// |u| = 1. So a component far below 1 gets a relatively large step, which
// is harmless only where F is mildly nonlinear on that component's own
// scale. Robertson's y2 is such a component: F is quadratic in it.
//
// The scratch is allocated on the first call and reused, so warm calls
// allocate nothing. The returned function is therefore not safe for
// concurrent use: make one per goroutine. o is not used: the steps follow
// the scales of u and p, not the tolerances.
func finiteDiffJVP[T Float](f func(du, u []T, p []float32, t float64), o *options) func(jv, u, v []T, p []float32, dp []T, t float64) {
	_ = o
	var s fdScratch[T]
	ce := cbrtEps[T]()
	return func(jv, u, v []T, p []float32, dp []T, t float64) {
		n := len(u)
		s.ensure(n, len(p))
		jv = jv[:n]
		clear(jv)
		if vn := normInf(v); vn > 0 {
			h := ce * max(1, normInf(u))
			scale := T(h / vn) // u ± h·v/‖v‖∞
			for i, ui := range u {
				d := scale * v[i]
				s.up[i], s.um[i] = ui+d, ui-d
			}
			f(s.fp, s.up, p, t)
			f(s.fm, s.um, p, t)
			c := T(vn / (2 * h))
			for i := range jv {
				jv[i] = (s.fp[i] - s.fm[i]) * c
			}
		}
		if dp == nil {
			return
		}
		copy(s.pp, p)
		for k, d := range dp {
			if d == 0 {
				continue
			}
			c := d * s.pDiff(f, u, k, t)
			for i := range jv {
				jv[i] += (s.fp[i] - s.fm[i]) * c
			}
		}
	}
}

// finiteDiffVJP returns Problem.VJP for f by central differences, column
// by column. wᵀ∂F/∂u comes from n columns dotted with w, each
//
//	(F(u+δ_j e_j) − F(u−δ_j e_j))/step_j,  δ_j = ∛ε_T·max(|u_j|, 1),
//
// with step_j the difference of the perturbed values as T holds them. When
// dp is not nil, wᵀ∂F/∂p comes from one column per parameter, in float32
// as above. That is 2·(n + np) evaluations of f for np parameters: 2n with
// dp nil, none when w = 0. The products are added into du and dp. The
// differences are finiteDiffJVP's, transposed, and so is the accuracy.
//
// As for finiteDiffJVP, warm calls allocate nothing and the returned
// function is not safe for concurrent use.
func finiteDiffVJP[T Float](f func(du, u []T, p []float32, t float64), o *options) func(du, dp, w, u []T, p []float32, t float64) {
	_ = o
	var s fdScratch[T]
	ce := cbrtEps[T]()
	dot := func(w []T) T {
		var sum T
		for i, wi := range w {
			sum += wi * (s.fp[i] - s.fm[i])
		}
		return sum
	}
	return func(du, dp, w, u []T, p []float32, t float64) {
		if normInf(w) == 0 {
			return
		}
		n := len(u)
		s.ensure(n, len(p))
		copy(s.up, u)
		copy(s.um, u)
		for j, uj := range u {
			h := T(ce * max(math.Abs(float64(uj)), 1))
			s.up[j], s.um[j] = uj+h, uj-h
			step := s.up[j] - s.um[j]
			f(s.fp, s.up, p, t)
			f(s.fm, s.um, p, t)
			s.up[j], s.um[j] = uj, uj
			du[j] += dot(w) / step
		}
		if dp == nil {
			return
		}
		copy(s.pp, p)
		for k := range dp {
			inv := s.pDiff(f, u, k, t) // before dot: it fills s.fp, s.fm
			dp[k] += dot(w) * inv
		}
	}
}
