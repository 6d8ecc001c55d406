package ad_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/race"
	"github.com/flatkit/flatkit/proptest"
)

// bnComposite is batch normalisation written with the broadcasting ops,
// as model.BatchNorm was before the fused op: the reference the fused one
// must equal within float32 rounding.
func bnComposite(x, gamma, beta ad.Var, eps float32) (y, mean, variance ad.Var) {
	s := x.Shape()
	keep := make([]int, len(s))
	for i := range keep {
		keep[i] = 1
	}
	keep[1] = s[1]
	inv := 1 / float32(x.Size()/s[1])
	mean = ad.Scale(ad.SumTo(x, keep...), float64(inv))
	xc := ad.Sub(x, mean)
	variance = ad.Scale(ad.SumTo(ad.Square(xc), keep...), float64(inv))
	std := ad.Sqrt(ad.Add(variance, x.Tape().Scalar(eps)))
	if gamma.IsZero() {
		return ad.Mul(xc, ad.Div(x.Tape().Scalar(1), std)), mean, variance
	}
	y = ad.Mul(xc, ad.Div(ad.Reshape(gamma, keep...), std))
	return ad.Add(y, ad.Reshape(beta, keep[1:]...)), mean, variance
}

// bnCase is an input shape and whether the map is affine.
type bnCase struct {
	shape  []int
	affine bool
}

func (c bnCase) String() string { return fmt.Sprintf("%v affine=%v", c.shape, c.affine) }

// drawBNCase draws a shape of rank 2 to 5 with at least three values per
// channel (with two, x̂ = ±1 whatever x is, and the derivatives with
// respect to x are rounding noise).
func drawBNCase(t *rapid.T) bnCase {
	r := rapid.IntRange(2, 5).Draw(t, "rank")
	s := make([]int, r)
	s[0] = rapid.IntRange(1, 3).Draw(t, "N")
	s[1] = rapid.IntRange(1, 3).Draw(t, "C")
	for i := 2; i < r; i++ {
		s[i] = rapid.IntRange(1, 3).Draw(t, fmt.Sprintf("spatial %d", i-2))
	}
	for rsSize(s)/s[1] < 3 {
		s[0]++
	}
	return bnCase{s, rapid.Bool().Draw(t, "affine")}
}

// bnLoss returns Σ w·(y + y²) for y = BatchNorm of the view of θ laid out
// as (x, γ, β) (γ and β only if affine), or of the composite reference.
func bnLoss(c bnCase, w []float32, composite bool) func(ad.Var) ad.Var {
	nx, C := rsSize(c.shape), c.shape[1]
	return func(p ad.Var) ad.Var {
		x := ad.View(p, 0, c.shape...)
		var gamma, beta ad.Var
		if c.affine {
			gamma, beta = ad.View(p, nx, C), ad.View(p, nx+C, C)
		}
		var y ad.Var
		if composite {
			y, _, _ = bnComposite(x, gamma, beta, 1e-5)
		} else {
			y, _ = ad.BatchNorm(x, gamma, beta, 1e-5)
		}
		wv := p.Tape().Const(flat.Tensor{Shape: c.shape, Data: w})
		return ad.Sum(ad.Mul(wv, ad.Add(y, ad.Square(y))))
	}
}

// drawBNParams draws θ = (x, γ, β) for c: each channel's values spread
// evenly over about ±1.5 in a random order, with jitter, so that the
// variance (≥ 0.5) keeps 1/σ and the derivatives moderate; γ and β in
// [−2, 2], γ at least 0.25 from 0. A γ near 0 (rapid drew 3e-30) makes
// the derivatives with respect to x smaller than what float32 can
// resolve in f, whose terms β + β² stay of size 1: the finite
// differences are then 0 and cannot check the rule.
func drawBNParams(t *rapid.T, c bnCase) []float32 {
	θ := rsSmooth(t, c.params(), -2, 2, "γ, β")
	if c.affine {
		for i := rsSize(c.shape); i < rsSize(c.shape)+c.shape[1]; i++ {
			θ[i] = float32(math.Copysign(0.25+math.Abs(float64(θ[i])), float64(θ[i])))
		}
	}
	C := c.shape[1]
	m := rsSize(c.shape) / C
	inner := m / c.shape[0]
	perm := rapid.Permutation(rsIota(m)).Draw(t, "order")
	jitter := rsSmooth(t, rsSize(c.shape), 0, 1, "jitter")
	for i := range rsSize(c.shape) {
		n, ch, j := i/(C*inner), i/inner%C, i%inner
		k := perm[(n*inner+j+ch)%m]
		θ[i] = (float32(k) - float32(m-1)/2 + 0.3*jitter[i]) * 3 / float32(m)
	}
	return θ
}

func (c bnCase) params() int {
	n := rsSize(c.shape)
	if c.affine {
		n += 2 * c.shape[1]
	}
	return n
}

// TestBatchNormMatchesComposite compares the fused op's output, statistics
// and gradient with the composite formulation's, within float32 rounding,
// on ranks 2 to 5 with and without the affine map. The values of a channel
// are spread out (drawBNParams): drawn independently, three of them once
// came within 0.014 of each other (variance 4e-5), where x − mean loses
// most of its digits to rounding in either formulation.
func TestBatchNormMatchesComposite(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := drawBNCase(rt)
		θ := drawBNParams(rt, c)
		w := rsSmooth(rt, rsSize(c.shape), -1, 1, "w")
		nx, C := rsSize(c.shape), c.shape[1]
		for i := nx; i < len(θ); i++ {
			θ[i] += 0.5 // γ away from 0
		}
		tp := ad.NewTape()
		p := tp.Param(θ)
		x := ad.View(p, 0, c.shape...)
		var gamma, beta ad.Var
		if c.affine {
			gamma, beta = ad.View(p, nx, C), ad.View(p, nx+C, C)
		}
		y, st := ad.BatchNorm(x, gamma, beta, 1e-5)
		y2, mean, variance := bnComposite(x, gamma, beta, 1e-5)
		if err := tp.Err(); err != nil {
			rt.Fatal(err)
		}
		bnClose(rt, "y", y.Data(), y2.Data(), 1e-5)
		bnClose(rt, "mean", st.Data()[:C], mean.Data(), 1e-5)
		bnClose(rt, "variance", st.Data()[C:], variance.Data(), 1e-5)
		_, g, err := ad.ValueAndGrad(bnLoss(c, w, false), θ)
		if err != nil {
			rt.Fatal(err)
		}
		_, g2, err := ad.ValueAndGrad(bnLoss(c, w, true), θ)
		if err != nil {
			rt.Fatal(err)
		}
		bnClose(rt, "gradient", g, g2, 1e-4)
	})
}

// bnClose fails unless got and want agree within tol times the largest
// magnitude of want (and at least tol).
func bnClose(t rapid.TB, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 1.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); !(d <= tol*scale) {
			t.Fatalf("%s[%d] = %v, want %v (difference %.3g > %.3g)", what, i, got[i], want[i], d, tol*scale)
		}
	}
}

// TestBatchNormDerivatives checks the fused op's derivatives against finite
// differences in many random directions, forward mode, the transpose
// identity, and second derivatives (forward-over-reverse against
// reverse-over-reverse and finite differences of the gradient, and the
// Hessian's symmetry).
func TestBatchNormDerivatives(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := drawBNCase(rt)
		θ := drawBNParams(rt, c)
		w := rsSmooth(rt, rsSize(c.shape), -1, 1, "w")
		f := bnLoss(c, w, false)
		dirs := proptest.Directions(8)
		proptest.CheckGrad(rt, f, θ, dirs)
		proptest.CheckHVP(rt, f, θ, dirs)
		out := func(p ad.Var) ad.Var {
			nx, C := rsSize(c.shape), c.shape[1]
			var gamma, beta ad.Var
			if c.affine {
				gamma, beta = ad.View(p, nx, C), ad.View(p, nx+C, C)
			}
			y, st := ad.BatchNorm(ad.View(p, 0, c.shape...), gamma, beta, 1e-5)
			return ad.Concat(0, ad.Reshape(y, y.Size()), ad.Reshape(st, st.Size()))
		}
		proptest.CheckJVP(rt, out, θ, dirs)
		proptest.CheckTranspose(rt, out, θ, dirs)
	})
}

// TestBatchNormHessianSymmetric computes a whole Hessian of a small case
// and checks that it is symmetric.
func TestBatchNormHessianSymmetric(t *testing.T) {
	c := bnCase{[]int{3, 2, 2}, true}
	θ, _ := stepPoint(c.params())
	for i := range θ {
		θ[i] += float32(i*i%5) * 0.1
	}
	w, _ := stepPoint(rsSize(c.shape))
	H, err := ad.Hessian(bnLoss(c, w, false), θ)
	if err != nil {
		t.Fatal(err)
	}
	n := len(θ)
	scale := 0.0
	for _, v := range H.Data {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	for i := range n {
		for j := range i {
			a, b := H.Data[i*n+j], H.Data[j*n+i]
			if d := math.Abs(float64(a - b)); d > 1e-4*scale {
				t.Errorf("H[%d][%d] = %v, H[%d][%d] = %v", i, j, a, j, i, b)
			}
		}
	}
}

// TestBatchNormPrimitiveRules checks the rules of the primitives behind
// BatchNorm's derivatives (Stats, Sums, BackData) as functions of all their
// inputs, the statistics S included, to second order.
func TestBatchNormPrimitiveRules(t *testing.T) {
	for _, affine := range []bool{false, true} {
		t.Run(fmt.Sprintf("affine=%v", affine), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				c := drawBNCase(rt)
				nx, C := rsSize(c.shape), c.shape[1]
				// θ = (x, μ, v, g, T, γ); σ² = v² + 0.5 stays positive.
				n := nx + 2*C + nx + 2*C + C
				θ := rsSmooth(rt, n, -1.5, 1.5, "θ")
				w := rsSmooth(rt, nx, -1, 1, "w")
				parts := func(p ad.Var) (x, S, g, T, gamma ad.Var) {
					x = ad.View(p, 0, c.shape...)
					mu := ad.View(p, nx, 1, C)
					v := ad.Add(ad.Square(ad.View(p, nx+C, 1, C)), p.Tape().Scalar(0.5))
					S = ad.Concat(0, mu, v)
					g = ad.View(p, nx+2*C, c.shape...)
					T = ad.View(p, 2*nx+2*C, 2, C)
					if affine {
						gamma = ad.View(p, 2*nx+4*C, C)
					}
					return x, S, g, T, gamma
				}
				wv := func(p ad.Var, shape ...int) ad.Var {
					return p.Tape().Const(flat.Tensor{Shape: shape, Data: w[:rsSize(shape)]})
				}
				fns := map[string]func(ad.Var) ad.Var{
					"Stats": func(p ad.Var) ad.Var {
						x, _, _, _, _ := parts(p)
						return ad.BatchNormStats(x)
					},
					"Sums": func(p ad.Var) ad.Var {
						x, S, g, _, _ := parts(p)
						return ad.BatchNormSums(x, S, g, 1e-3)
					},
					"BackData": func(p ad.Var) ad.Var {
						x, S, g, T, gamma := parts(p)
						return ad.BatchNormBackData(x, S, g, T, gamma, 1e-3)
					},
				}
				dirs := proptest.Directions(8)
				for _, name := range []string{"Stats", "Sums", "BackData"} {
					f := fns[name]
					proptest.CheckJVP(rt, f, θ, dirs)
					proptest.CheckTranspose(rt, f, θ, dirs)
					loss := func(p ad.Var) ad.Var {
						y := f(p)
						return ad.Sum(ad.Mul(wv(p, y.Shape()...), ad.Add(y, ad.Square(y))))
					}
					proptest.CheckHVP(rt, loss, θ, dirs)
				}
			})
		})
	}
}

// TestBatchNormStatsLargeMean checks the statistics against float64 ones
// for data whose mean is large against its spread, where a float32 sum of
// squares would lose the variance.
func TestBatchNormStatsLargeMean(t *testing.T) {
	const n, C, s = 4, 3, 50
	x := flat.New(n, C, s)
	for i := range x.Data {
		c := i / s % C
		x.Data[i] = float32(1000*(c+1)) + float32(math.Sin(float64(i)))*0.01
	}
	tp := ad.NewTape()
	_, st := ad.BatchNorm(tp.Const(x), ad.Var{}, ad.Var{}, 1e-5)
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	for c := range C {
		var sum, sq float64
		for b := range n {
			for _, v := range x.Data[(b*C+c)*s:][:s] {
				sum += float64(v)
			}
		}
		mean := sum / (n * s)
		for b := range n {
			for _, v := range x.Data[(b*C+c)*s:][:s] {
				sq += (float64(v) - mean) * (float64(v) - mean)
			}
		}
		v := sq / (n * s)
		if got := st.Data()[c]; math.Abs(float64(got)-mean) > 1e-7*math.Abs(mean) {
			t.Errorf("channel %d: mean %v, want %v", c, got, mean)
		}
		if got := st.Data()[C+c]; math.Abs(float64(got)-v) > 1e-5*v {
			t.Errorf("channel %d: variance %v, want %v", c, got, v)
		}
	}
}

// TestBatchNormThreadsSameBits checks that the output, statistics and
// gradient of a batch norm large enough to be split over goroutines have
// the same bits on 1 to 4 goroutines.
func TestBatchNormThreadsSameBits(t *testing.T) {
	defer flat.SetMaxThreads(flat.SetMaxThreads(0))
	shape := []int{8, 37, 15, 17} // 37 channels: uneven cuts
	c := bnCase{shape, true}
	θ, _ := stepPoint(c.params())
	for i := range θ {
		θ[i] = float32(math.Sin(float64(i) * 0.37))
	}
	w, _ := stepPoint(rsSize(shape))
	run := func() (y, st, g []float32) {
		tp := ad.NewTape()
		p := tp.Param(θ)
		nx := rsSize(shape)
		yv, sv := ad.BatchNorm(ad.View(p, 0, shape...), ad.View(p, nx, 37), ad.View(p, nx+37, 37), 1e-5)
		y, st = slices.Clone(yv.Data()), slices.Clone(sv.Data())
		_, g, err := ad.ValueAndGrad(bnLoss(c, w, false), θ)
		if err != nil {
			t.Fatal(err)
		}
		return y, st, g
	}
	flat.SetMaxThreads(1)
	y1, s1, g1 := run()
	for _, n := range []int{2, 3, 4} {
		flat.SetMaxThreads(n)
		y, s, g := run()
		for _, c := range []struct {
			what      string
			got, want []float32
		}{{"y", y, y1}, {"stats", s, s1}, {"gradient", g, g1}} {
			if i := firstBitDiff(c.got, c.want); i >= 0 {
				t.Errorf("%d goroutines: %s[%d] = %v, on one goroutine %v", n, c.what, i, c.got[i], c.want[i])
			}
		}
	}
}

// firstBitDiff returns the first index where a and b differ in their bits,
// or −1.
func firstBitDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestBatchNormStepAllocatesNothing pins a reused tape's gradient and
// Hessian-vector-product steps through BatchNorm at zero allocations, on
// one goroutine and split over two.
func TestBatchNormStepAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	defer flat.SetMaxThreads(flat.SetMaxThreads(0))
	for _, c := range []struct {
		name    string
		shape   []int
		threads int
	}{
		{"small", []int{3, 2, 2, 2}, 1},
		{"split", []int{8, 32, 16, 16}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			flat.SetMaxThreads(c.threads)
			bc := bnCase{c.shape, true}
			θ, dir := stepPoint(bc.params())
			w, _ := stepPoint(rsSize(c.shape))
			pinStepAllocs(t, 10, θ, dir, bnLoss(bc, w, false))
		})
	}
}
