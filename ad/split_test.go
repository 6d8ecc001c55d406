package ad_test

import (
	"math"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/race"
)

// splitPoint returns n values spread over about ±2 without ties, and a
// cotangent of the same length.
func splitPoint(n int) (θ, u []float32) {
	θ, u = make([]float32, n), make([]float32, n)
	for i := range θ {
		θ[i] = 2 * float32(math.Sin(float64(i)*0.731+0.1))
		u[i] = float32(math.Cos(float64(i) * 0.377))
	}
	return θ, u
}

// sameBitsOnThreads evaluates f at θ (value, VJP along u and JVP along d)
// on one goroutine and on 2 to 4, and fails unless every result has the
// same bits.
func sameBitsOnThreads(t *testing.T, name string, f func(ad.Var) ad.Var, θ, u, d []float32) {
	t.Helper()
	defer flat.SetMaxThreads(flat.SetMaxThreads(0))
	eval := func() [3][]float32 {
		tp := ad.NewTape()
		y := f(tp.Param(θ))
		if err := tp.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		val := flat.Clone(y.Data())
		uu := u[:len(val)]
		vj, err := ad.VJP(f, θ, uu)
		if err != nil {
			t.Fatalf("%s: VJP: %v", name, err)
		}
		jv, err := ad.JVP(f, θ, d)
		if err != nil {
			t.Fatalf("%s: JVP: %v", name, err)
		}
		return [3][]float32{val, vj, jv}
	}
	flat.SetMaxThreads(1)
	want := eval()
	for _, n := range []int{2, 3, 4} {
		flat.SetMaxThreads(n)
		got := eval()
		for k, what := range []string{"value", "VJP", "JVP"} {
			if len(got[k]) != len(want[k]) {
				t.Fatalf("%s on %d goroutines: %s has %d values, want %d", name, n, what, len(got[k]), len(want[k]))
			}
			if i := firstBitDiff(got[k], want[k]); i >= 0 {
				t.Errorf("%s on %d goroutines: %s[%d] = %v, on one goroutine %v", name, n, what, i, got[k][i], want[k][i])
			}
		}
	}
}

// TestElementwiseThreadsSameBits checks that elementwise ops long enough
// to be split over goroutines (and their derivatives: ReLU's mask, the
// products of the chain rule) give the same bits on any number of them.
func TestElementwiseThreadsSameBits(t *testing.T) {
	const n = 3*flat.DefaultMinChunk + 37 // an uneven cut
	θ, u := splitPoint(2 * n)
	d, _ := splitPoint(2*n + 5)
	d = d[5:]
	half := func(p ad.Var) (a, b ad.Var) { return ad.Slice(p, 0, n), ad.Slice(p, n, 2*n) }
	for _, c := range []struct {
		name string
		f    func(ad.Var) ad.Var
	}{
		{"Relu", func(p ad.Var) ad.Var { return ad.Relu(p) }},
		{"Tanh", func(p ad.Var) ad.Var { return ad.Tanh(p) }},
		{"Sigmoid", func(p ad.Var) ad.Var { return ad.Sigmoid(p) }},
		{"Add", func(p ad.Var) ad.Var { a, b := half(p); return ad.Add(a, ad.Relu(b)) }},
		{"Sub", func(p ad.Var) ad.Var { a, b := half(p); return ad.Sub(a, b) }},
		{"Mul", func(p ad.Var) ad.Var { a, b := half(p); return ad.Mul(a, b) }},
		{"Div", func(p ad.Var) ad.Var { a, b := half(p); return ad.Div(a, ad.Add(ad.Square(b), p.Tape().Scalar(1))) }},
	} {
		sameBitsOnThreads(t, c.name, c.f, θ, u, d)
	}
}

// TestPoolThreadsSameBits checks that pools with enough planes to be split
// over goroutines give the same bits, forward and in both derivatives, on
// any number of them.
func TestPoolThreadsSameBits(t *testing.T) {
	shape := []int{3, 13, 48, 45} // 39 planes: uneven cuts
	n := rsSize(shape)
	θ, u := splitPoint(n)
	d, _ := splitPoint(n + 3)
	d = d[3:]
	for _, c := range []struct {
		name string
		f    func(x ad.Var) ad.Var
	}{
		{"MaxPool 3x3/2 pad 1", func(x ad.Var) ad.Var {
			return ad.MaxPool(x, ad.PoolGeom{Kernel: []int{3, 3}, Stride: []int{2}, PadLo: []int{1}})
		}},
		{"MaxPool 2x2", func(x ad.Var) ad.Var { return ad.MaxPool(x, ad.PoolGeom{Kernel: []int{2, 2}}) }},
		{"MeanPool 3x3 pad", func(x ad.Var) ad.Var {
			return ad.MeanPool(x, ad.PoolGeom{Kernel: []int{3, 3}, PadLo: []int{1}, PadHi: []int{0, 2}})
		}},
		{"AdaptiveMeanPool 5x4", func(x ad.Var) ad.Var { return ad.AdaptiveMeanPool(x, 5, 4) }},
	} {
		f := func(p ad.Var) ad.Var { return c.f(ad.Reshape(p, shape...)) }
		sameBitsOnThreads(t, c.name, f, θ, u, d)
	}
}

// TestSplitStepsAllocateNothing pins gradient and Hessian-vector-product
// steps through elementwise ops and pools split over two goroutines at
// zero allocations.
func TestSplitStepsAllocateNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	defer flat.SetMaxThreads(flat.SetMaxThreads(2))
	shape := []int{4, 16, 32, 32}
	θ, dir := splitPoint(rsSize(shape))
	g := ad.PoolGeom{Kernel: []int{3, 3}, Stride: []int{2}, PadLo: []int{1}}
	pinStepAllocs(t, 10, θ, dir, func(p ad.Var) ad.Var {
		x := ad.Reshape(p, shape...)
		y := ad.Relu(ad.Add(x, ad.Tanh(x)))
		m := ad.MaxPool(y, g)
		return ad.Add(ad.Sum(ad.Mul(m, m)), ad.Sum(ad.Square(ad.AdaptiveMeanPool(y, 3, 3))))
	})
}
