package ad_test

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/race"
)

// TestReluNonFiniteCotangent checks PyTorch's threshold_backward rule in
// both modes, for Relu and ConvBiasRelu: where x > 0 a NaN or infinite
// cotangent (or tangent) passes through, and where x ≤ 0 (or x is NaN)
// the result is +0 whatever came, where a product with the 0/1 derivative
// would give NaN.
func TestReluNonFiniteCotangent(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	θ := []float32{-1, 2, 0, -0.5, 3, negZero, nan, 4, -2}
	u := []float32{nan, nan, inf, -inf, 5, nan, nan, -inf, 1}
	want := []float32{0, nan, 0, 0, 5, 0, 0, -inf, 0}
	// conv is ConvBiasRelu of a 1×1 convolution with weight 1 and bias 0:
	// Relu of the same numbers.
	conv := func(p ad.Var) ad.Var {
		tp := p.Tape()
		w := tp.Const(flat.Tensor{Shape: []int{1, 1, 1, 1}, Data: []float32{1}})
		b := tp.Const(flat.Tensor{Shape: []int{1}, Data: []float32{0}})
		return ad.ConvBiasRelu(ad.Reshape(p, 1, 1, 1, len(θ)), w, b, ad.ConvGeom{})
	}
	same := func(a, b float32) bool { return a == b || a != a && b != b }
	for _, c := range []struct {
		name string
		f    func(ad.Var) ad.Var
		bits bool // compare zeros' signs too
	}{{"Relu", ad.Relu, true}, {"ConvBiasRelu", conv, false}} {
		vjp, err := ad.VJP(c.f, θ, u)
		if err != nil {
			t.Fatalf("%s VJP: %v", c.name, err)
		}
		jvp, err := ad.JVP(c.f, θ, u)
		if err != nil {
			t.Fatalf("%s JVP: %v", c.name, err)
		}
		for i := range want {
			for _, got := range []struct {
				mode string
				v    float32
			}{{"VJP", vjp[i]}, {"JVP", jvp[i]}} {
				if !same(got.v, want[i]) || c.bits && math.Signbit(float64(got.v)) != math.Signbit(float64(want[i])) {
					t.Errorf("%s %s at x = %v with %v: %v, want %v", c.name, got.mode, θ[i], u[i], got.v, want[i])
				}
			}
		}
	}
}

// reluAway draws n values of magnitude in [0.1, 2] and random sign: far
// enough from ReLU's kink at 0 (and from Sin's zeros at ±π) that a finite
// difference of step 10⁻² does not cross it.
func reluAway(t *rapid.T, n int) []float32 {
	x := rsSmooth(t, n, 0.1, 2, "|θ|")
	neg := rapid.SliceOfN(rapid.Bool(), n, n).Draw(t, "negative")
	for i := range x {
		if neg[i] {
			x[i] = -x[i]
		}
	}
	return x
}

// TestReluSecondOrder checks gradients and Hessian-vector products of
// losses through Relu (on its own, of a nonlinear argument, and on both
// signs): forward-over-reverse against reverse-over-reverse, and both
// against central differences.
func TestReluSecondOrder(t *testing.T) {
	losses := []struct {
		name string
		f    func(w flat.Tensor) func(ad.Var) ad.Var
	}{
		{"w·Relu(p)·sin(p) + Relu(−p)²", func(w flat.Tensor) func(ad.Var) ad.Var {
			return func(p ad.Var) ad.Var {
				a := ad.Sum(ad.Mul(p.Tape().Const(w), ad.Mul(ad.Relu(p), ad.Sin(p))))
				return ad.Add(a, ad.Sum(ad.Square(ad.Relu(ad.Neg(p)))))
			}
		}},
		{"tanh(Relu(p·sin p))·w", func(w flat.Tensor) func(ad.Var) ad.Var {
			return func(p ad.Var) ad.Var {
				return ad.Sum(ad.Mul(ad.Tanh(ad.Relu(ad.Mul(p, ad.Sin(p)))), p.Tape().Const(w)))
			}
		}},
		{"Relu(Relu(p)·p + p)²", func(flat.Tensor) func(ad.Var) ad.Var {
			return func(p ad.Var) ad.Var {
				return ad.Sum(ad.Square(ad.Relu(ad.Add(ad.Mul(ad.Relu(p), p), p))))
			}
		}},
	}
	for _, l := range losses {
		t.Run(l.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				n := rapid.IntRange(1, 40).Draw(rt, "n")
				θ := reluAway(rt, n)
				w := flat.Tensor{Shape: []int{n}, Data: rsSmooth(rt, n, -1, 1, "w")}
				loss := l.f(w)
				rsCheckGrad(rt, loss, θ, 1e-2)
				rsCheckHVP(rt, loss, θ, 1e-2)
			})
		})
	}
}

// TestReluStepsAllocateNothing pins zero allocations, on a reused tape, for
// a gradient step and a Hessian-vector product through Relu and
// ConvBiasRelu, whose rules record MaskPositive in both modes.
func TestReluStepsAllocateNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops items under -race")
	}
	xs, ws := []int{2, 2, 5, 5}, []int{3, 2, 3, 3}
	nx, nw := rsSize(xs), rsSize(ws)
	n := nx + nw + ws[0]
	θ, dir := stepPoint(n)
	g := ad.ConvGeom{PadLo: []int{1}, PadHi: []int{1}} // made once: its slices escape
	loss := func(p ad.Var) ad.Var {
		x, w, b := ad.View(p, 0, xs...), ad.View(p, nx, ws...), ad.View(p, nx+nw, ws[0])
		y := ad.ConvBiasRelu(x, w, b, g)
		return ad.Sum(ad.Square(ad.Relu(ad.Sub(y, p.Tape().Scalar(0.1)))))
	}
	pinStepAllocs(t, 20, θ, dir, loss)
}
