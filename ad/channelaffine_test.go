package ad_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/race"
	"github.com/flatkit/flatkit/proptest"
)

// caParts views θ as (x, mean, scale, shift) for x of shape s.
func caParts(p ad.Var, s []int) (x, mean, scale, shift ad.Var) {
	nx, C := rsSize(s), s[1]
	return ad.View(p, 0, s...), ad.View(p, nx, C), ad.View(p, nx+C, C), ad.View(p, nx+2*C, C)
}

// TestChannelAffine checks ChannelAffine against the broadcasting ops,
// bit for bit (the same three operations per element), and its
// derivatives to second order, on ranks 2 to 5.
func TestChannelAffine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := drawBNCase(rt)
		s := c.shape
		n := rsSize(s) + 3*s[1]
		θ := rsSmooth(rt, n, -2, 2, "θ")
		w := rsSmooth(rt, rsSize(s), -1, 1, "w")
		tp := ad.NewTape()
		x, mean, scale, shift := caParts(tp.Param(θ), s)
		keep := make([]int, len(s))
		for i := range keep {
			keep[i] = 1
		}
		keep[1] = s[1]
		y := ad.ChannelAffine(x, mean, scale, shift)
		ref := ad.Add(ad.Mul(ad.Sub(x, ad.Reshape(mean, keep...)), ad.Reshape(scale, keep...)), ad.Reshape(shift, keep...))
		if err := tp.Err(); err != nil {
			rt.Fatal(err)
		}
		if i := firstBitDiff(y.Data(), ref.Data()); i >= 0 {
			rt.Fatalf("y[%d] = %v, the ops give %v", i, y.Data()[i], ref.Data()[i])
		}
		out := func(p ad.Var) ad.Var { return ad.ChannelAffine(caParts(p, s)) }
		loss := func(p ad.Var) ad.Var {
			y := out(p)
			wv := p.Tape().Const(flat.Tensor{Shape: s, Data: w})
			return ad.Sum(ad.Mul(wv, ad.Mul(y, ad.Tanh(y))))
		}
		dirs := proptest.Directions(8)
		proptest.CheckJVP(rt, out, θ, dirs)
		proptest.CheckTranspose(rt, out, θ, dirs)
		proptest.CheckHVP(rt, loss, θ, dirs)
	})
}

// TestChannelAffineThreadsAndAllocs checks the same bits on 1 to 4
// goroutines for an input split by channel, and zero allocations for a
// gradient and an HVP step split over two.
func TestChannelAffineThreadsAndAllocs(t *testing.T) {
	s := []int{6, 37, 20, 19}
	n := rsSize(s) + 3*s[1]
	θ, u := splitPoint(n)
	d, _ := splitPoint(n + 7)
	d = d[7:]
	f := func(p ad.Var) ad.Var { return ad.ChannelAffine(caParts(p, s)) }
	sameBitsOnThreads(t, "ChannelAffine", f, θ, u, d)
	if race.Enabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	defer flat.SetMaxThreads(flat.SetMaxThreads(2))
	pinStepAllocs(t, 10, θ, d, func(p ad.Var) ad.Var { return ad.Sum(ad.Square(f(p))) })
}
