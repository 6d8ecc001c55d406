package resnet_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/examples/resnet"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/cputime"
	"github.com/flatkit/flatkit/model"
)

// BenchmarkTrainStep is one training step of ResNet-18 (10 classes) at
// 16×3×96×96 on one goroutine, as bench resnet's: train mode, the
// cross-entropy and the gradient of every parameter on a reused tape. It
// is the one to profile (go test -cpuprofile).
func BenchmarkTrainStep(b *testing.B) {
	defer flat.SetMaxThreads(flat.SetMaxThreads(1))
	net := resnet.ResNet18(10)
	rng := rand.New(rand.NewPCG(1, 2))
	θ, st := initNet(b, net, rng)
	x := flat.New(16, 3, 96, 96)
	for i := range x.Data {
		x.Data[i] = float32(rng.NormFloat64())
	}
	labels := make([]int, 16)
	for i := range labels {
		labels[i] = i % 10
	}
	ctx := &model.Ctx{Train: true, State: st}
	tp := ad.NewTape()
	step := func() {
		y := net.Apply(ctx, tp.Param(θ), tp.Const(x))
		if _, err := tp.Grad(model.LogitCrossEntropy(y, labels)); err != nil {
			b.Fatal(err)
		}
		tp.Reset()
	}
	cputime.Warm(b, step)
}

// BenchmarkInference is bench resnet's inference (eval mode, forward only,
// on a reused tape) at 1×3×224² and 16×3×32², on 1 and 2 goroutines
// (flat.SetMaxThreads): the one to profile for the inference figures.
func BenchmarkInference(b *testing.B) {
	for _, c := range []struct{ batch, side int }{{1, 224}, {16, 32}} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%dx%d/threads=%d", c.batch, c.side, threads), func(b *testing.B) {
				defer flat.SetMaxThreads(flat.SetMaxThreads(threads))
				net := resnet.ResNet18(10)
				rng := rand.New(rand.NewPCG(1, 2))
				θ, st := initNet(b, net, rng)
				x := flat.New(c.batch, 3, c.side, c.side)
				for i := range x.Data {
					x.Data[i] = float32(rng.NormFloat64())
				}
				ctx := &model.Ctx{State: st}
				tp := ad.NewTape()
				step := func() {
					net.Apply(ctx, tp.Param(θ), tp.Const(x))
					if err := tp.Err(); err != nil {
						b.Fatal(err)
					}
					tp.Reset()
				}
				cputime.Warm(b, step)
			})
		}
	}
}
