package ode

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/ode/linalg"
)

// Order conditions of Rosenbrock methods (Hairer & Wanner II, IV.7) by
// rooted trees. With the classical coefficients α (strictly lower) and Γ
// (lower, diagonal γ) and β = α + Γ, the elementary weight of a tree is
// Φ(•) = 1, Φ([t₁]) = β·Φ(t₁) (a root with one child: the J term adds the
// γ's) and Φ([t₁,…,t_m]) = ∏ α·Φ(t_k) for m ≥ 2; the method has order p
// when Σ b_i Φ_i(t) = 1/t! for every tree with at most p vertices.

type classicalRos struct {
	alpha, gam [][]float64 // s×s
	b, bhat    []float64
}

// classical converts the W-transformed coefficients: Γ⁻¹ = diag(1/γ) − C,
// α = aΓ, b = mΓ, b̂ = (m − e)Γ.
func classical(tb *rosTableau) classicalRos {
	s := len(tb.c)
	ginv := make([][]float64, s)
	for i := range ginv {
		ginv[i] = make([]float64, s)
		ginv[i][i] = 1 / tb.gamma
		for j := 0; j < i; j++ {
			ginv[i][j] = -tb.C[i][j]
		}
	}
	// Γ = (Γ⁻¹)⁻¹ by forward substitution, column by column.
	g := make([][]float64, s)
	for i := range g {
		g[i] = make([]float64, s)
	}
	for j := 0; j < s; j++ {
		for i := j; i < s; i++ {
			r := 0.0
			if i == j {
				r = 1
			}
			for k := j; k < i; k++ {
				r -= ginv[i][k] * g[k][j]
			}
			g[i][j] = r / ginv[i][i]
		}
	}
	mul := func(row []float64) []float64 {
		out := make([]float64, s)
		for k, v := range row {
			for j := 0; j < s; j++ {
				out[j] += v * g[k][j]
			}
		}
		return out
	}
	cr := classicalRos{gam: g}
	for i := 0; i < s; i++ {
		cr.alpha = append(cr.alpha, mul(tb.a[i]))
	}
	cr.b = mul(tb.m)
	mh := make([]float64, s)
	for i := range mh {
		mh[i] = tb.m[i] - tb.e[i]
	}
	cr.bhat = mul(mh)
	return cr
}

// weights returns the Rosenbrock elementary weights Φ(τ) of every tree
// (treesUpTo's list), as vectors over the stages.
func (cr classicalRos) weights(trees []rootedTree) [][]float64 {
	s := len(cr.b)
	phi := make([][]float64, len(trees))
	for k, tr := range trees {
		out := make([]float64, s)
		switch len(tr.children) {
		case 0:
			for i := range out {
				out[i] = 1
			}
		case 1:
			p := phi[tr.children[0]]
			for i := range out {
				for j := 0; j <= i; j++ {
					out[i] += (cr.alpha[i][j] + cr.gam[i][j]) * p[j]
				}
			}
		default:
			for i := range out {
				out[i] = 1
			}
			for _, c := range tr.children {
				p := phi[c]
				for i := range out {
					a := 0.0
					for j := 0; j < i; j++ {
						a += cr.alpha[i][j] * p[j]
					}
					out[i] *= a
				}
			}
		}
		phi[k] = out
	}
	return phi
}

// orderResiduals returns, per order q = 1…p, the largest
// |Σ b_i Φ_i(τ) − θ^q/γ(τ)| (θ = 1 for the method itself).
func (cr classicalRos) orderResiduals(b []float64, p int, θ float64) []float64 {
	trees := treesUpTo(p)
	phi := cr.weights(trees)
	res := make([]float64, p)
	for k, tr := range trees {
		s := 0.0
		for i, v := range b {
			s += v * phi[k][i]
		}
		q := tr.order
		res[q-1] = max(res[q-1], math.Abs(s-math.Pow(θ, float64(q))/tr.gamma))
	}
	return res
}

func rosenbrock23Classical() (classicalRos, []float64, []float64) {
	d, e := r23D, r23E32
	cr := classicalRos{
		alpha: [][]float64{{0, 0, 0}, {0.5, 0, 0}, {0, 1, 0}},
		gam:   [][]float64{{d, 0, 0}, {-d, d, 0}, {d * (e - 2), -e * d, d}},
		b:     []float64{0, 1, 0},
		bhat:  []float64{1.0 / 6, 4.0 / 6, 1.0 / 6},
	}
	// The nodes and the ∂F/∂t weights of the code: F1 at t + h/2, F2 at
	// t + h; hd·T in stages 1 and 3 and the −2(k1 − F0) term give
	// γ_i = d, 0, −d.
	return cr, []float64{0, 0.5, 1}, []float64{d, 0, -d}
}

func TestRosenbrockOrderConditions(t *testing.T) {
	type method struct {
		name          string
		cr            classicalRos
		c, d          []float64
		order, order2 int
	}
	tb := rodas5pTableau()
	r23, c23, d23 := rosenbrock23Classical()
	ms := []method{
		{"Rodas5P", classical(tb), tb.c, tb.d, tb.order, tb.embOrder},
		{"Rosenbrock23", r23, c23, d23, 2, 3},
	}
	for _, m := range ms {
		s := len(m.cr.b)
		// Non-autonomous consistency: c_i = Σ_j α_ij and d_i = Σ_j γ_ij.
		for i := 0; i < s; i++ {
			ca, dg := 0.0, 0.0
			for j := 0; j <= i; j++ {
				ca += m.cr.alpha[i][j]
				dg += m.cr.gam[i][j]
			}
			if math.Abs(ca-m.c[i]) > 1e-12 || math.Abs(dg-m.d[i]) > 1e-12 {
				t.Errorf("%s stage %d: Σα = %.16g (c = %.16g), Σγ = %.16g (d = %.16g)", m.name, i, ca, m.c[i], dg, m.d[i])
			}
		}
		res := m.cr.orderResiduals(m.cr.b, m.order+1, 1)
		resHat := m.cr.orderResiduals(m.cr.bhat, m.order2+1, 1)
		t.Logf("%s: residuals by order %.2g; embedded %.2g", m.name, res, resHat)
		for q := 0; q < m.order; q++ {
			if res[q] > 1e-12 {
				t.Errorf("%s: order-%d conditions off by %.3g", m.name, q+1, res[q])
			}
		}
		if res[m.order] < 1e-6 {
			t.Errorf("%s: the order-%d conditions hold too (%.3g): wrong order claimed?", m.name, m.order+1, res[m.order])
		}
		for q := 0; q < m.order2; q++ {
			if resHat[q] > 1e-12 {
				t.Errorf("%s: embedded order-%d conditions off by %.3g", m.name, q+1, resHat[q])
			}
		}
		if resHat[m.order2] < 1e-6 {
			t.Errorf("%s: embedded order-%d conditions hold too (%.3g)", m.name, m.order2+1, resHat[m.order2])
		}
	}
}

// The dense output of Rodas5P: at every θ the weights
// b(θ) = (θm + θ(1−θ)(h₁ + θh₂ + θ²h₃))Γ satisfy Σ b_i(θ)Φ_i(t) = θ^|t|/t!
// up to the interpolant's order.
func TestRodas5PDenseOrderConditions(t *testing.T) {
	tb := rodas5pTableau()
	cr := classical(tb)
	s := len(tb.c)
	for _, θ := range []float64{0.1, 0.35, 0.5, 0.8} {
		mθ := make([]float64, s)
		for j := range mθ {
			mθ[j] = θ*tb.m[j] + θ*(1-θ)*(tb.h[0][j]+θ*tb.h[1][j]+θ*θ*tb.h[2][j])
		}
		b := make([]float64, s)
		for k, v := range mθ {
			for j := 0; j < s; j++ {
				b[j] += v * cr.gam[k][j]
			}
		}
		worst := cr.orderResiduals(b, tb.interpOrder+1, θ)
		t.Logf("θ=%.2f: dense residuals by order %.2g", θ, worst)
		for q := 1; q <= tb.interpOrder; q++ {
			if worst[q-1] > 1e-12 {
				t.Errorf("θ=%.2f: dense order-%d conditions off by %.3g", θ, q, worst[q-1])
			}
		}
	}
}

func TestLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 4, 7, 40, 100} {
		a := make([]float64, n*n)
		for i := range a {
			a[i] = rng.NormFloat64()
		}
		if n > 1 {
			a[0] = 0 // force a pivot swap
		}
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		b := make([]float64, n)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				b[i] += a[i*n+j] * x[j]
			}
		}
		lu := slices.Clone(a)
		piv := make([]int, n)
		if k := linalg.LUFactor(lu, n, piv, nil); k >= 0 {
			t.Fatalf("n=%d: singular at %d", n, k)
		}
		if n <= 3 {
			perm := make([]int, n)
			luPerm(piv, perm)
			b2 := slices.Clone(b)
			luSolveSmall(lu, n, perm, b2)
			linalg.LUSolve(lu, n, piv, b)
			for i := range b {
				if math.Abs(b2[i]-b[i]) > 1e-14*(1+math.Abs(b[i])) {
					t.Errorf("n=%d: luSolveSmall %v, luSolve %v", n, b2, b)
				}
			}
		} else {
			linalg.LUSolve(lu, n, piv, b)
		}
		e := 0.0
		for i := range x {
			e = max(e, math.Abs(b[i]-x[i]))
		}
		if e > 1e-10*float64(n) {
			t.Errorf("n=%d: solve error %.3g", n, e)
		}
		// float32, the same system.
		a32 := make([]float32, n*n)
		for i, v := range a {
			a32[i] = float32(v)
		}
		b32 := make([]float32, n)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				b32[i] += a32[i*n+j] * float32(x[j])
			}
		}
		if k := linalg.LUFactor(a32, n, piv, nil); k >= 0 {
			t.Fatalf("n=%d float32: singular at %d", n, k)
		}
		linalg.LUSolve(a32, n, piv, b32)
		e = 0
		for i := range x {
			e = max(e, math.Abs(float64(b32[i])-x[i]))
		}
		if e > 2e-3 {
			t.Errorf("n=%d float32: solve error %.3g", n, e)
		}
	}
	sing := []float64{1, 2, 3, 2, 4, 6, 1, 0, 1}
	if k := linalg.LUFactor(sing, 3, make([]int, 3), nil); k != 2 {
		t.Errorf("singular matrix: luFactor returned %d, want 2", k)
	}
	// Cancellation to rounding noise: 1 − 3·(1/3) is not 0 but is singular
	// on the scale of its terms.
	c := []float64{1 - 3*(1.0/3)}
	if k := linalg.LUFactor(c, 1, make([]int, 1), []float64{1}); k != 0 {
		t.Errorf("cancelled pivot %g: luFactor returned %d, want 0", c[0], k)
	}
	nan := []float64{math.NaN(), 1, 0, 1}
	if k := linalg.LUFactor(nan, 2, make([]int, 2), nil); k < 0 {
		t.Errorf("NaN matrix factored")
	}
}

// The error estimates of both methods scale with the order of the
// embedded pair on a non-autonomous problem (this checks the ∂F/∂t terms,
// which the autonomous order conditions do not see): one step of size h
// from the same point, estimate in the RMS norm (atol 1, rtol 0).
func TestRosenbrockLocalErrorEstimateOrder(t *testing.T) {
	f := func(du, u []float64, _ []float32, t float64) {
		du[0] = -50*(u[0]-math.Cos(t)) + u[1]*u[1] + math.Sin(3*t)
		du[1] = -u[0]*u[1] + t*t
	}
	for _, c := range []struct {
		m    Method
		want float64 // the local order of the estimate, p̂+1
	}{{Rosenbrock23(), 3}, {Rodas5P(), 5}} {
		var hs, es []float64
		for _, h := range []float64{0.004, 0.002, 0.001, 0.0005} {
			it, err := NewIntegrator(Problem[float64]{F: f, U0: []float64{1.2, 0.5}, T0: 0.3, T1: 1}, c.m, Tol(0, 1))
			if err != nil {
				t.Fatal(err)
			}
			e := math.Sqrt(it.st.attempt(it, h)) // attempt returns the norm squared
			hs, es = append(hs, h), append(es, e)
		}
		sl := math.Log(es[0]/es[len(es)-1]) / math.Log(hs[0]/hs[len(hs)-1])
		t.Logf("%s: estimates %.3g, slope %.2f", c.m.Name(), es, sl)
		if math.Abs(sl-c.want) > 0.25 {
			t.Errorf("%s: the error estimate falls like h^%.2f, want h^%g", c.m.Name(), sl, c.want)
		}
	}
}

// The finite-difference Jacobian against the analytic one on Robertson,
// at states from the start (y2 = y3 = 0) to late times (y2 = 1e-13), where
// a fixed √ε·max(|u|, 1) increment would be far larger than y2.
func TestFDJacobianRobertson(t *testing.T) {
	f := func(du, u []float64, _ []float32, _ float64) {
		du[0] = -0.04*u[0] + 1e4*u[1]*u[2]
		du[1] = 0.04*u[0] - 1e4*u[1]*u[2] - 3e7*u[1]*u[1]
		du[2] = 3e7 * u[1] * u[1]
	}
	jac := func(J, u []float64) {
		J[0], J[1], J[2] = -0.04, 1e4*u[2], 1e4*u[1]
		J[3], J[4], J[5] = 0.04, -1e4*u[2]-6e7*u[1], -1e4*u[1]
		J[6], J[7], J[8] = 0, 6e7*u[1], 0
	}
	states := []struct {
		u []float64
		h float64
	}{
		{[]float64{1, 0, 0}, 1e-6},
		{[]float64{0.99, 3.6e-5, 0.01}, 1e-3},
		{[]float64{0.0179, 7.3e-8, 0.982}, 1e3},
		{[]float64{2.1e-8, 8.3e-14, 1}, 1e9},
	}
	for _, s := range states {
		it, err := NewIntegrator(Problem[float64]{F: f, U0: s.u, T1: 1e11}, Rodas5P(), Tol(1e-6, 1e-8))
		if err != nil {
			t.Fatal(err)
		}
		je := newJacEval[float64](3)
		f0 := make([]float64, 3)
		f(f0, s.u, nil, 0)
		got, want := make([]float64, 9), make([]float64, 9)
		fe := it.stats.FEvals
		je.jacobian(it, got, f0, s.h)
		jac(want, s.u)
		// Each entry to 1e-6 relative to the largest entry of its row or
		// column (the scale that matters in W).
		for i := 0; i < 3; i++ {
			for j := 0; j < 3; j++ {
				sc := 1e-6
				for k := 0; k < 3; k++ {
					sc = max(sc, math.Abs(want[i*3+k]), math.Abs(want[k*3+j]))
				}
				if d := math.Abs(got[i*3+j] - want[i*3+j]); d > 1e-6*sc {
					t.Errorf("u=%v: J[%d][%d] = %.10g, want %.10g", s.u, i, j, got[i*3+j], want[i*3+j])
				}
			}
		}
		// ∂f3/∂y2 = 6e7·y2, which carries the slow dynamics, is right to
		// 10% even where y2 = 8e-14 (the increment there is CVODE's
		// 1000·|h|·ε·n·‖f‖·atol = 7e-15 for h = 1e9; a fixed
		// √ε·max(|y2|, 1) = 1.5e-8 would be 1e5 times y2).
		if d := math.Abs(got[7] - want[7]); d > 0.1*math.Abs(want[7])+1e-12 {
			t.Errorf("u=%v: ∂f3/∂y2 = %.10g, want %.10g", s.u, got[7], want[7])
		}
		if it.stats.FEvals-fe != 3 || it.stats.JacEvals != 1 {
			t.Errorf("%d F evaluations and %d JacEvals for one Jacobian, want 3 and 1", it.stats.FEvals-fe, it.stats.JacEvals)
		}
	}
}
