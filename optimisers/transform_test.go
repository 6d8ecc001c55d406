package optimisers

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/optimize"
	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/layout"
)

// trLayout is rate [2], frac [2], soft [1], free [2]; the group "g" holds
// frac and soft.
func trLayout(t testing.TB) *layout.Layout {
	b := layout.NewBuilder()
	b.Add("rate", 2)
	g := b.Group("g")
	g.Add("frac", 2)
	g.Add("soft", 1)
	b.Add("free", 2)
	lay, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return lay
}

func trTransforms(t testing.TB) Transforms {
	tr, err := TransformsByPath(trLayout(t), map[string]Transform{
		"rate": Positive(), "g.frac": Between(0.1, 0.9), "g.soft": PositiveSoftplus()})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestTransformsByPathErrors(t *testing.T) {
	lay := trLayout(t)
	for _, c := range []struct {
		name string
		by   map[string]Transform
		want string
	}{
		{"zero", map[string]Transform{"rate": {}}, `path "rate": the zero Transform`},
		{"reversed", map[string]Transform{"rate": Between(1, 0)}, `path "rate": Between(1, 0): want finite lo < hi`},
		{"infinite", map[string]Transform{"rate": Between(0, math.Inf(1))}, "want finite lo < hi"},
		{"overlap", map[string]Transform{"g": Positive(), "g.soft": Positive()}, `paths "g" (θ[2:5]) and "g.soft" (θ[4:5]) overlap`},
	} {
		_, err := TransformsByPath(lay, c.by)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
		}
	}
	_, err := TransformsByPath(lay, map[string]Transform{"rat": Positive()})
	var pe *layout.PathError
	if !errors.As(err, &pe) || !errors.Is(err, layout.ErrUnknownPath) || pe.Path != "rat" || !strings.Contains(err.Error(), "rate") {
		t.Errorf("unknown path: %v, want a *layout.PathError for %q that names the layout's paths", err, "rat")
	}
	if _, err := TransformsByPath(nil, nil); err == nil {
		t.Error("nil layout: no error")
	}
	// A group's transform covers its leaves.
	tr, err := TransformsByPath(lay, map[string]Transform{"g": Positive()})
	if err != nil {
		t.Fatal(err)
	}
	θ := make([]float32, 7)
	if err := tr.ToUser(θ, make([]float32, 7)); err != nil {
		t.Fatal(err)
	}
	if want := []float32{0, 0, 1, 1, 1, 0, 0}; !slices.Equal(θ, want) {
		t.Errorf("ToUser of zeros under g: Positive() = %v, want %v", θ, want)
	}
}

func TestTransformsFromUserErrors(t *testing.T) {
	tr := trTransforms(t)
	z := []float32{9, 9, 9, 9, 9, 9, 9}
	for _, c := range []struct {
		θ    []float32
		want string
	}{
		{[]float32{1, 0, 0.5, 0.5, 1, 0, 0}, `θ[1] (under "rate") = 0 is outside (0, +Inf), the range of Positive()`},
		{[]float32{1, 1, 0.5, 0.95, 1, 0, 0}, `θ[3] (under "g.frac") = 0.95 is outside (0.1, 0.9), the range of Between(0.1, 0.9)`},
		{[]float32{1, 1, 0.5, 0.5, -1, 0, 0}, `θ[4] (under "g.soft") = -1`},
		{[]float32{1, 1, float32(math.NaN()), 0.5, 1, 0, 0}, `θ[2] (under "g.frac") = NaN`},
	} {
		err := tr.FromUser(z, c.θ)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("FromUser(%v): %v, want an error containing %q", c.θ, err, c.want)
		}
		if z[0] != 9 || z[6] != 9 {
			t.Errorf("FromUser(%v) failed but changed z to %v", c.θ, z)
		}
	}
	if err := tr.FromUser(z[:3], z); err == nil || !strings.Contains(err.Error(), "want 7") {
		t.Errorf("short z: %v", err)
	}
	if err := tr.ToUser(z, z[:3]); err == nil || !strings.Contains(err.Error(), "want 7") {
		t.Errorf("short z in ToUser: %v", err)
	}
}

// TestTransformRoundTrip: ToUser(FromUser(θ)) is θ within rounding. z
// holds T⁻¹(θ) rounded to float32, 2⁻²⁴·|z| relative, which moves θ by
// T'(z)·|z|·2⁻²⁴; ToUser rounds once more, 2⁻²⁴·|θ|. Elements without a
// transform come back bit for bit, and the conversions work in place.
func TestTransformRoundTrip(t *testing.T) {
	tr := trTransforms(t)
	rapid.Check(t, func(t *rapid.T) {
		θ := make([]float32, 7)
		for i := range θ {
			switch {
			case i < 2: // Positive
				θ[i] = float32(math.Exp(rapid.Float64Range(-80, 80).Draw(t, "log")))
			case i < 4: // Between(0.1, 0.9)
				θ[i] = float32(0.1 + 0.8*rapid.Float64Range(1e-6, 1-1e-6).Draw(t, "p"))
				if float64(θ[i]) <= 0.1 || float64(θ[i]) >= 0.9 {
					θ[i] = 0.5
				}
			case i < 5: // PositiveSoftplus
				θ[i] = float32(math.Exp(rapid.Float64Range(-40, 8).Draw(t, "log")))
			default:
				θ[i] = rapid.Float32().Draw(t, "free")
			}
		}
		z := make([]float32, 7)
		if err := tr.FromUser(z, θ); err != nil {
			t.Fatal(err)
		}
		back := append([]float32(nil), z...)
		if err := tr.ToUser(back, back); err != nil {
			t.Fatal(err)
		}
		ts := []Transform{Positive(), Positive(), Between(0.1, 0.9), Between(0.1, 0.9), PositiveSoftplus()}
		for i, v := range θ {
			if i >= len(ts) {
				if math.Float32bits(back[i]) != math.Float32bits(v) {
					t.Fatalf("θ[%d] = %v came back %v, want it bit for bit", i, v, back[i])
				}
				continue
			}
			_, d := ts[i].user(float64(z[i]))
			tol := 1.01*0x1p-24*(d*math.Abs(float64(z[i]))+math.Abs(float64(v))) + 0x1p-149
			if e := math.Abs(float64(back[i]) - float64(v)); e > tol {
				t.Fatalf("θ[%d] = %v: FromUser gives z = %v, ToUser %v: off by %.3g, want ≤ %.3g", i, v, z[i], back[i], e, tol)
			}
		}
		inPlace := append([]float32(nil), θ...)
		if err := tr.FromUser(inPlace, inPlace); err != nil || !slices.Equal(inPlace, z) {
			t.Fatalf("FromUser in place: %v, err %v; want %v", inPlace, err, z)
		}
	})
}

// TestTransformDerivative: dθ/dz of each transform against central
// differences in float64, and T(T⁻¹(θ)) = θ in float64.
func TestTransformDerivative(t *testing.T) {
	for _, tf := range []Transform{Positive(), PositiveSoftplus(), Between(-2, 3), Between(0.1, 0.9)} {
		for z := -12.0; z <= 12; z += 0.37 {
			θ, d := tf.user(z)
			h := 1e-5 * (1 + math.Abs(z))
			up, _ := tf.user(z + h)
			dn, _ := tf.user(z - h)
			fd := (up - dn) / (2 * h)
			if math.Abs(fd-d) > 1e-6*math.Abs(d)+1e-12 {
				t.Errorf("%v at z = %g: dθ/dz = %.12g, central difference %.12g", tf, z, d, fd)
			}
			if zz := tf.unconstrained(θ); math.Abs(zz-z) > 1e-9*(1+math.Abs(z)) && d > 1e-9 {
				t.Errorf("%v: T⁻¹(T(%g)) = %g", tf, z, zz)
			}
		}
	}
}

// trLoss is a loss in the user's units with cross terms:
// Σ cᵢ(θᵢ − tᵢ)² + θ₀θ₃ + θ₄θ₆.
var trTarget = []float64{2.5, 0.04, 0.3, 0.7, 1.5, -1, 3}

func trLoss(θ, grad []float32) (float64, error) {
	f := 0.0
	for i, v := range θ {
		c := float64(i + 1)
		d := float64(v) - trTarget[i]
		f += c * d * d
		if grad != nil {
			grad[i] = float32(2 * c * d)
		}
	}
	f += 0.1 * (float64(θ[0])*float64(θ[3]) + float64(θ[4])*float64(θ[6]))
	if grad != nil {
		grad[0] += float32(0.1 * float64(θ[3]))
		grad[3] += float32(0.1 * float64(θ[0]))
		grad[4] += float32(0.1 * float64(θ[6]))
		grad[6] += float32(0.1 * float64(θ[4]))
	}
	return f, nil
}

// TestTransformsWrapGradient: the wrapped objective's gradient, T'(z)·∇θ,
// against central differences of the wrapped loss along random directions.
// z and the points z ± hv are float32, so the differences carry rounding
// of about 2⁻²⁴·|∂f|·|θ| / h; with h = 2⁻⁸ that is under 1e-4, and the
// test asks 1e-3 of the gradient's size.
func TestTransformsWrapGradient(t *testing.T) {
	tr := trTransforms(t)
	fz := tr.Wrap(trLoss)
	rapid.Check(t, func(t *rapid.T) {
		z := make([]float32, 7)
		v := make([]float32, 7)
		for i := range z {
			z[i] = float32(rapid.Float64Range(-2, 2).Draw(t, "z"))
			v[i] = float32(rapid.Float64Range(-1, 1).Draw(t, "v"))
		}
		g := make([]float32, 7)
		f, err := fz(z, g)
		if err != nil {
			t.Fatal(err)
		}
		const h = 0x1p-8
		zp, zm := make([]float32, 7), make([]float32, 7)
		for i := range z {
			zp[i], zm[i] = z[i]+h*v[i], z[i]-h*v[i]
		}
		fp, _ := fz(zp, nil)
		fm, _ := fz(zm, nil)
		dd, scale := 0.0, 0.0
		for i := range z {
			// the step taken, after float32 rounding of z ± hv
			dd += float64(g[i]) * float64(zp[i]-zm[i]) / (2 * h)
			scale += math.Abs(float64(g[i]) * float64(v[i]))
		}
		fd := (fp - fm) / (2 * h)
		if math.Abs(fd-dd) > 1e-3*(scale+1) {
			t.Fatalf("at z = %v (loss %g): directional derivative %g from the gradient %v, central difference %g", z, f, dd, g, fd)
		}
	})
	if a := testing.AllocsPerRun(10, func() { fz(make([]float32, 7)[:7:7], nil) }); a > 1 {
		t.Errorf("a wrapped evaluation allocates %v times, want only the test's own buffer", a)
	}
}

// TestTransformsMinimize: LBFGS on the wrapped objective reaches the
// loss's minimum in the user's units, and the same as LBFGSB with the
// transforms' ranges as bounds (the minimum is inside them).
func TestTransformsMinimize(t *testing.T) {
	tr := trTransforms(t)
	θ := []float32{1, 1, 0.5, 0.5, 1, 0, 0}
	z := make([]float32, 7)
	if err := tr.FromUser(z, θ); err != nil {
		t.Fatal(err)
	}
	res, err := Minimize(tr.Wrap(trLoss), z, nil, &optimize.Settings{GradientThreshold: 1e-6})
	if err != nil {
		t.Fatalf("Minimize: %v", err)
	}
	if err := tr.ToUser(θ, z); err != nil {
		t.Fatal(err)
	}
	θb := []float32{1, 1, 0.5, 0.5, 1, 0, 0}
	inf := math.Inf(1)
	b := Bounds{Lower: []float64{0, 0, 0.1, 0.1, 0, -inf, -inf}, Upper: []float64{inf, inf, 0.9, 0.9, inf, inf, inf}}
	if _, err := Minimize(trLoss, θb, &LBFGSB{Bounds: b}, &optimize.Settings{GradientThreshold: 1e-6}); err != nil {
		t.Fatalf("LBFGSB: %v", err)
	}
	t.Logf("transformed LBFGS: %v after %d iterations: θ = %v; LBFGSB θ = %v", res.Status, res.MajorIterations, θ, θb)
	for i := range θ {
		if e := math.Abs(float64(θ[i] - θb[i])); e > 1e-5*(1+math.Abs(float64(θb[i]))) {
			t.Errorf("θ[%d] = %v by transforms, %v by bounds: off by %.3g", i, θ[i], θb[i], e)
		}
	}
}
