package ad_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/cputime"
)

// BenchmarkPoolResNet is ResNet-18's pools in a 16×3×96×96 training step,
// forward and backward (the cotangent seeded by AddVJP, so nothing else is
// timed): the stem's 3×3 max-pool with stride 2 and padding 1 on
// 16×64×48×48, and the global mean pool (AdaptiveMeanPool to 1×1) on
// 16×512×3×3.
func BenchmarkPoolResNet(b *testing.B) {
	b.Run("MaxPool3x3s2p1/16x64x48x48", func(b *testing.B) {
		g := ad.PoolGeom{Kernel: []int{3, 3}, Stride: []int{2}, PadLo: []int{1}}
		benchPool(b, []int{16, 64, 48, 48}, func(x ad.Var) ad.Var { return ad.MaxPool(x, g) })
	})
	b.Run("AdaptiveMeanPool1x1/16x512x3x3", func(b *testing.B) {
		benchPool(b, []int{16, 512, 3, 3}, func(x ad.Var) ad.Var { return ad.AdaptiveMeanPool(x, 1, 1) })
	})
}

func benchPool(b *testing.B, shape []int, pool func(ad.Var) ad.Var) {
	x := flat.New(shape...)
	for i := range x.Data {
		x.Data[i] = float32(math.Sin(float64(i) * 0.1))
	}
	dx := make([]float32, len(x.Data))
	tp := ad.NewTape()
	wrt := make([]ad.Var, 1)
	dst := [][]float32{dx}
	var w []float32
	step := func() {
		xp := tp.Param(x.Data)
		y := pool(ad.View(xp, 0, shape...))
		if w == nil {
			w = make([]float32, y.Size())
			for i := range w {
				w[i] = float32(math.Cos(float64(i) * 0.3))
			}
		}
		wrt[0] = xp
		if err := tp.AddVJP(y, w, wrt, dst); err != nil {
			b.Fatal(err)
		}
		tp.Reset()
	}
	cputime.Warm(b, step)
}

// BenchmarkMaxPoolForward is the stem's max-pool (3×3, stride 2, padding
// 1) of ResNet-18 inference, forward only, on one goroutine, on random
// values: 1×64×112² (input 1×3×224²) and 16×64×16² (16×3×32²).
func BenchmarkMaxPoolForward(b *testing.B) {
	defer flat.SetMaxThreads(flat.SetMaxThreads(1))
	g := ad.PoolGeom{Kernel: []int{3, 3}, Stride: []int{2}, PadLo: []int{1}}
	for _, shape := range [][]int{{1, 64, 112, 112}, {16, 64, 16, 16}} {
		b.Run(fmt.Sprintf("%dx%dx%dx%d", shape[0], shape[1], shape[2], shape[3]), func(b *testing.B) {
			x := flat.New(shape...)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range x.Data {
				x.Data[i] = float32(rng.NormFloat64())
			}
			tp := ad.NewTape()
			cputime.Loop(b, func() {
				ad.MaxPool(tp.Const(x), g)
				tp.Reset()
			})
		})
	}
}
