package ad_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/cputime"
)

// BenchmarkBatchNorm is one batch norm in training mode, forward and
// backward (the cotangent seeded directly, by AddVJP, so nothing else is
// timed), fused and as the composite of broadcasting ops it replaced, at
// two of ResNet-18's sizes in a 16×3×96×96 training step: after the stem
// (64×48×48) and in the first stage (64×24×24).
func BenchmarkBatchNorm(b *testing.B) {
	for _, s := range [][]int{{16, 64, 48, 48}, {16, 64, 24, 24}} {
		for _, composite := range []bool{false, true} {
			name := "fused"
			if composite {
				name = "composite"
			}
			b.Run(fmt.Sprintf("%s/%dx%dx%dx%d", name, s[0], s[1], s[2], s[3]), func(b *testing.B) {
				benchBatchNorm(b, s, composite)
			})
		}
	}
}

func benchBatchNorm(b *testing.B, shape []int, composite bool) {
	C := shape[1]
	x := flat.New(shape...)
	w := make([]float32, len(x.Data))
	for i := range x.Data {
		x.Data[i] = float32(math.Sin(float64(i) * 0.1))
		w[i] = float32(math.Cos(float64(i) * 0.3))
	}
	θ := make([]float32, 2*C)
	for i := range C {
		θ[i], θ[C+i] = 1+float32(i)/float32(C), float32(i)/float32(C)
	}
	dx, dθ := make([]float32, len(x.Data)), make([]float32, len(θ))
	tp := ad.NewTape()
	wrt := make([]ad.Var, 2)
	dst := [][]float32{dx, dθ}
	step := func() {
		xp, p := tp.Param(x.Data), tp.Param(θ)
		xv, gamma, beta := ad.View(xp, 0, shape...), ad.View(p, 0, C), ad.View(p, C, C)
		var y ad.Var
		if composite {
			y, _, _ = bnComposite(xv, gamma, beta, 1e-5)
		} else {
			y, _ = ad.BatchNorm(xv, gamma, beta, 1e-5)
		}
		wrt[0], wrt[1] = xp, p
		if err := tp.AddVJP(y, w, wrt, dst); err != nil {
			b.Fatal(err)
		}
		tp.Reset()
	}
	cputime.Warm(b, step)
}
