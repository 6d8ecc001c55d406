package odead_test

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/ode/odead"
)

// adLV is Lotka-Volterra written with ad ops, p differentiable:
// u1' = p0 u1 − p1 u1 u2, u2' = −p2 u2 + p3 u1 u2.
func adLV(u, p ad.Var, _ float64) ad.Var {
	u1, u2 := ad.Slice(u, 0, 1), ad.Slice(u, 1, 2)
	u12 := ad.Mul(u1, u2)
	d1 := ad.Sub(ad.Mul(ad.Slice(p, 0, 1), u1), ad.Mul(ad.Slice(p, 1, 2), u12))
	d2 := ad.Sub(ad.Mul(ad.Slice(p, 3, 4), u12), ad.Mul(ad.Slice(p, 2, 3), u2))
	return ad.Concat(0, d1, d2)
}

// adLVJVP is the closed-form ∂F/∂u·v + ∂F/∂p·dp of adLV in float64 (dp nil
// is zero), with the sum of the terms' magnitudes per component: the scale
// of float32 rounding in a computed product.
func adLVJVP(u, v, p, dp []float32) (jv, mag [2]float64) {
	u1, u2, v1, v2 := f64(u[0]), f64(u[1]), f64(v[0]), f64(v[1])
	p0, p1, p2, p3 := f64(p[0]), f64(p[1]), f64(p[2]), f64(p[3])
	d := [4]float64{}
	if dp != nil {
		d = [4]float64{f64(dp[0]), f64(dp[1]), f64(dp[2]), f64(dp[3])}
	}
	dm := v1*u2 + u1*v2 // the derivative of u1 u2
	dmAbs := math.Abs(v1*u2) + math.Abs(u1*v2)
	jv[0] = p0*v1 - p1*dm + d[0]*u1 - d[1]*u1*u2
	jv[1] = -p2*v2 + p3*dm - d[2]*u2 + d[3]*u1*u2
	mag[0] = math.Abs(p0*v1) + math.Abs(p1)*dmAbs + math.Abs(d[0]*u1) + math.Abs(d[1]*u1*u2)
	mag[1] = math.Abs(p2*v2) + math.Abs(p3)*dmAbs + math.Abs(d[2]*u2) + math.Abs(d[3]*u1*u2)
	return jv, mag
}

// adLVVJP is the closed-form wᵀ∂F/∂u and wᵀ∂F/∂p of adLV, with the terms'
// magnitudes.
func adLVVJP(w, u, p []float32) (du [2]float64, dp [4]float64, magU [2]float64, magP [4]float64) {
	u1, u2, w1, w2 := f64(u[0]), f64(u[1]), f64(w[0]), f64(w[1])
	p0, p1, p2, p3 := f64(p[0]), f64(p[1]), f64(p[2]), f64(p[3])
	du[0] = w1*(p0-p1*u2) + w2*p3*u2
	du[1] = -w1*p1*u1 + w2*(p3*u1-p2)
	magU[0] = math.Abs(w1*p0) + math.Abs(w1*p1*u2) + math.Abs(w2*p3*u2)
	magU[1] = math.Abs(w1*p1*u1) + math.Abs(w2*p3*u1) + math.Abs(w2*p2)
	dp = [4]float64{w1 * u1, -w1 * u1 * u2, -w2 * u2, w2 * u1 * u2}
	for k, x := range dp {
		magP[k] = math.Abs(x)
	}
	return du, dp, magU, magP
}

func f64(x float32) float64 { return float64(x) }

// adTol is the tolerance of a float32 result whose terms have magnitude
// mag: a few roundings of each term (products of three factors, and the
// sums).
func adTol(mag float64) float64 { return 8*0x1p-24*mag + 1e-30 }

func drawVec(t *rapid.T, n int, lo, hi float32, label string) []float32 {
	return rapid.SliceOfN(rapid.Float32Range(lo, hi), n, n).Draw(t, label)
}

// drawLVPoint draws a Lotka-Volterra state u, rates p and directions v, dp
// and w for its products.
func drawLVPoint(t *rapid.T) (u, p, v, dp, w []float32) {
	u = drawVec(t, 2, -3, 3, "u")
	p = drawVec(t, 4, -3, 3, "p")
	v = drawVec(t, 2, -2, 2, "v")
	dp = drawVec(t, 4, -2, 2, "dp")
	w = drawVec(t, 2, -2, 2, "w")
	return u, p, v, dp, w
}

// TestDerivsLotkaVolterra: JVP and VJP of the ad Lotka-Volterra agree with
// the closed-form derivatives in random directions, with and without a
// parameter direction, and VJP adds into its destinations.
func TestDerivsLotkaVolterra(t *testing.T) {
	d := odead.Derivs(adLV, 2)
	JVP, VJP := d.JVP, d.VJP
	rapid.Check(t, func(t *rapid.T) {
		u, p, v, dp, w := drawLVPoint(t)
		for _, dir := range [][]float32{dp, nil} {
			jv := make([]float32, 2)
			JVP(jv, u, v, p, dir, 0)
			want, mag := adLVJVP(u, v, p, dir)
			for i := range jv {
				if d := math.Abs(f64(jv[i]) - want[i]); !(d <= adTol(mag[i])) {
					t.Fatalf("JVP (dp %v)[%d] = %g, want %g (error %.3g, tolerance %.3g)", dir, i, jv[i], want[i], d, adTol(mag[i]))
				}
			}
		}
		// VJP adds: start from a drawn offset, compare the difference.
		du0 := drawVec(t, 2, -1, 1, "du0")
		dp0 := drawVec(t, 4, -1, 1, "dp0")
		wantU, wantP, magU, magP := adLVVJP(w, u, p)
		du, dq := slices.Clone(du0), slices.Clone(dp0)
		VJP(du, dq, w, u, p, 0)
		for i := range du {
			if d := math.Abs(f64(du[i]) - f64(du0[i]) - wantU[i]); !(d <= adTol(magU[i]+math.Abs(f64(du0[i])))) {
				t.Fatalf("VJP ∂u[%d] = %g − %g, want %g", i, du[i], du0[i], wantU[i])
			}
		}
		for k := range dq {
			if d := math.Abs(f64(dq[k]) - f64(dp0[k]) - wantP[k]); !(d <= adTol(magP[k]+math.Abs(f64(dp0[k])))) {
				t.Fatalf("VJP ∂p[%d] = %g − %g, want %g", k, dq[k], dp0[k], wantP[k])
			}
		}
		// dp nil: the same ∂u, and nothing else is touched.
		du2 := slices.Clone(du0)
		VJP(du2, nil, w, u, p, 0)
		if !slices.Equal(du2, du) {
			t.Fatalf("VJP with dp nil: ∂u = %v, with dp %v", du2, du)
		}
	})
}

// ⟨JVP(v, dp), w⟩ = ⟨v, VJP_u(w)⟩ + ⟨dp, VJP_p(w)⟩ to float32 rounding.
func TestDerivsTranspose(t *testing.T) {
	d := odead.Derivs(adLV, 2)
	JVP, VJP := d.JVP, d.VJP
	rapid.Check(t, func(t *rapid.T) {
		u, p, v, dp, w := drawLVPoint(t)
		jv := make([]float32, 2)
		JVP(jv, u, v, p, dp, 0)
		gu, gp := make([]float32, 2), make([]float32, 4)
		VJP(gu, gp, w, u, p, 0)
		_, mag := adLVJVP(u, v, p, dp)
		var lhs, rhs, scale float64
		for i := range jv {
			lhs += f64(jv[i]) * f64(w[i])
			scale += mag[i] * math.Abs(f64(w[i]))
		}
		for i := range v {
			rhs += f64(v[i]) * f64(gu[i])
		}
		for k := range dp {
			rhs += f64(dp[k]) * f64(gp[k])
		}
		if d := math.Abs(lhs - rhs); !(d <= 2*adTol(scale)) {
			t.Fatalf("⟨Jv, w⟩ = %g, ⟨v, Jᵀw⟩ = %g: differ by %.3g (tolerance %.3g)", lhs, rhs, d, 2*adTol(scale))
		}
	})
}

// Derivs keeps F and Jac as Func makes them, and its JVP with dp nil
// gives Jac's columns.
func TestDerivsMatchFunc(t *testing.T) {
	p0 := odead.Func(adLV, 2)
	F0, Jac0 := p0.F, p0.Jac
	pd := odead.Derivs(adLV, 2)
	F, Jac, JVP := pd.F, pd.Jac, pd.JVP
	u, p := []float32{0.7, -1.3}, []float32{1.5, 1, 3, 1}
	d0, d := make([]float32, 2), make([]float32, 2)
	F0(d0, u, p, 0)
	F(d, u, p, 0)
	J0, J := make([]float32, 4), make([]float32, 4)
	Jac0(J0, u, p, 0)
	Jac(J, u, p, 0)
	if !slices.Equal(d0, d) || !slices.Equal(J0, J) {
		t.Errorf("Derivs F, Jac = %v, %v; Func's %v, %v", d, J, d0, J0)
	}
	for j := range 2 {
		e := make([]float32, 2)
		e[j] = 1
		jv := make([]float32, 2)
		JVP(jv, u, e, p, nil, 0)
		for i := range 2 {
			if jv[i] != J[i*2+j] {
				t.Errorf("JVP(e_%d)[%d] = %g, J[%d][%d] = %g", j, i, jv[i], i, j, J[i*2+j])
			}
		}
	}
	prob, err := odead.Problem(adLV, u, 0, 1, p)
	if err != nil {
		t.Fatal(err)
	}
	if prob.F == nil || prob.Jac == nil || prob.JVP == nil || prob.VJP == nil || prob.Err == nil {
		t.Errorf("Problem left a field nil: F %t, Jac %t, JVP %t, VJP %t, Err %t", prob.F != nil, prob.Jac != nil, prob.JVP != nil, prob.VJP != nil, prob.Err != nil)
	}
}

// jvpOnly and vjpOnly double their input, with a derivative rule of one
// mode only: a right-hand side that uses one works for some products and
// fails for the others, which Problem must catch up front.
type jvpOnly struct{}
type vjpOnly struct{}

func (jvpOnly) Name() string { return "DoubleJVPOnly" }
func (vjpOnly) Name() string { return "DoubleVJPOnly" }
func (jvpOnly) Shape(dst []int, in [][]int, _ ad.Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}
func (vjpOnly) Shape(dst []int, in [][]int, _ ad.Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}
func (jvpOnly) Forward(f *ad.Forward) { double(f) }
func (vjpOnly) Forward(f *ad.Forward) { double(f) }
func double(f *ad.Forward) {
	for i, x := range f.In[0].Data {
		f.Out.Data[i] = 2 * x
	}
}
func (jvpOnly) JVP(r *ad.Rule) ad.Var      { return ad.Scale(r.Tangent(0), 2) }
func (vjpOnly) VJP(r *ad.Rule, cot ad.Var) { r.AddGrad(0, ad.Scale(cot, 2)) }

func TestDerivsErrors(t *testing.T) {
	cases := []struct {
		name  string
		f     func(u, p ad.Var, t float64) ad.Var
		want  string // in Problem's error
		fails string // which products fail: "jvp", "vjp" or both
	}{
		{"shape", func(u, p ad.Var, _ float64) ad.Var { return ad.Mul(u, p) }, "the right-hand side", "jvp vjp"},
		{"size", func(u, p ad.Var, _ float64) ad.Var { return ad.Slice(p, 0, 3) }, "the right-hand side", "jvp vjp"},
		{"no JVP rule", func(u, p ad.Var, _ float64) ad.Var { return ad.Apply(vjpOnly{}, ad.Attrs{}, u) }, "the JVP", "jvp"},
		{"no VJP rule for p", func(u, p ad.Var, _ float64) ad.Var {
			return ad.Add(u, ad.Apply(jvpOnly{}, ad.Attrs{}, ad.Slice(p, 0, 2)))
		}, "the VJP", "vjp"},
	}
	u, p := []float32{0.5, 2}, []float32{1.5, 1, 3, 1}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := odead.Problem(c.f, u, 0, 1, p)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Problem: error %v, want one about %q", err, c.want)
			}
			t.Log(err)
			// One problem per product: a failure is sticky, so that each
			// product's Err tells whether that product failed.
			dj, dv := odead.Derivs(c.f, 2), odead.Derivs(c.f, 2)
			const mark = 7 // what the outputs hold before the call
			jv := []float32{mark, mark}
			dj.JVP(jv, u, []float32{1, 1}, p, []float32{1, 1, 1, 1}, 0)
			du, dq := []float32{mark, mark}, []float32{mark, mark, mark, mark}
			dv.VJP(du, dq, []float32{1, 1}, u, p, 0)
			check := func(what string, err error, want bool, xs ...[]float32) {
				t.Helper()
				if (err != nil) != want {
					t.Errorf("%s: Err() = %v, want an error: %t", what, err, want)
				}
				if !want {
					return
				}
				for _, x := range xs { // a failed call leaves its outputs as they were
					for i, v := range x {
						if v != mark {
							t.Errorf("%s failed but wrote %g at %d, want %g (untouched)", what, v, i, float32(mark))
						}
					}
				}
			}
			check("JVP", dj.Err(), strings.Contains(c.fails, "jvp"), jv)
			check("VJP", dv.Err(), strings.Contains(c.fails, "vjp"), du, dq)
		})
	}
}

// poolDropsItems reports whether sync.Pool drops items put into it, as it
// does on purpose in a -race build (a quarter of the Puts): pooled tapes
// are then made afresh now and then, and the allocation pins cannot hold.
// 64 tries miss a -race build with probability (3/4)^64 ≈ 1e-8.
func poolDropsItems() bool {
	var pool sync.Pool
	x := new(int)
	for range 64 {
		pool.Put(x)
		if pool.Get() == nil {
			return true
		}
	}
	return false
}

// Warm F, JVP and VJP calls allocate nothing (pooled tape and scratch).
func TestDerivsAllocateNothing(t *testing.T) {
	if poolDropsItems() {
		t.Skip("sync.Pool drops items in this build (-race): the pins need a normal build")
	}
	d := odead.Derivs(adLV, 2)
	F, Jac, JVP, VJP := d.F, d.Jac, d.JVP, d.VJP
	u, p := []float32{0.7, -1.3}, []float32{1.5, 1, 3, 1}
	v, dp, w := []float32{0.3, 0.2}, []float32{0.1, -0.2, 0.3, 0.4}, []float32{1, -1}
	du, dq, J := make([]float32, 2), make([]float32, 4), make([]float32, 4)
	calls := []struct {
		name string
		call func()
	}{
		{"F", func() { F(du, u, p, 0) }},
		{"Jac", func() { Jac(J, u, p, 0) }},
		{"JVP", func() { JVP(du, u, v, p, dp, 0) }},
		{"JVP dp nil", func() { JVP(du, u, v, p, nil, 0) }},
		{"VJP", func() { VJP(du, dq, w, u, p, 0) }},
		{"VJP dp nil", func() { VJP(du, nil, w, u, p, 0) }},
	}
	for _, c := range calls {
		c.call()
		if a := testing.AllocsPerRun(50, c.call); a != 0 {
			t.Errorf("warm %s allocates %v times per call, want 0", c.name, a)
		}
	}
}

// JVP and VJP are shared by concurrent callers (an ensemble's gradients):
// each goroutine gets its own pooled tape, and every result equals the
// serial one bit for bit.
func TestDerivsConcurrent(t *testing.T) {
	d := odead.Derivs(adLV, 2)
	JVP, VJP := d.JVP, d.VJP
	u, p := []float32{0.7, -1.3}, []float32{1.5, 1, 3, 1}
	v, dp, w := []float32{0.3, 0.2}, []float32{0.1, -0.2, 0.3, 0.4}, []float32{1, -1}
	eval := func() []float32 {
		out := make([]float32, 8)
		JVP(out[:2], u, v, p, dp, 0)
		VJP(out[2:4], out[4:], w, u, p, 0)
		return out
	}
	want := eval()
	const G, reps = 8, 200
	bad := make(chan []float32, G)
	done := make(chan struct{})
	for range G {
		go func() {
			defer func() { done <- struct{}{} }()
			for range reps {
				if got := eval(); !slices.Equal(got, want) {
					bad <- got
					return
				}
			}
		}()
	}
	for range G {
		<-done
	}
	close(bad)
	for got := range bad {
		t.Errorf("concurrent JVP/VJP gave %v, serial %v", got, want)
	}
}
