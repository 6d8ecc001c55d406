package model_test

import (
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/cputime"
	"github.com/flatkit/flatkit/model"
)

// batchNormBench is the two benchmarks' layer, its parameters and state,
// and a standard-normal input (16, 64, 24, 24).
func batchNormBench(b *testing.B) (*model.BatchNormLayer, []float32, []float32, flat.Tensor) {
	b.Helper()
	const n, c, s = 16, 64, 24
	net := model.BatchNorm(c)
	rng := rand.New(rand.NewPCG(1, 2))
	θ, err := model.Init(net, rng)
	if err != nil {
		b.Fatal(err)
	}
	st, err := model.InitState(net)
	if err != nil {
		b.Fatal(err)
	}
	x := flat.New(n, c, s, s)
	for i := range x.Data {
		x.Data[i] = float32(rng.NormFloat64())
	}
	return net, θ, st, x
}

// BenchmarkBatchNormTrain is BatchNorm in training mode, forward and the
// gradient with respect to the input and the parameters, at ResNet-18's
// first stage in a 16×3×96×96 step: (16, 64, 24, 24).
func BenchmarkBatchNormTrain(b *testing.B) {
	net, θ, st, x := batchNormBench(b)
	ctx := &model.Ctx{Train: true, State: st}
	tp := ad.NewTape()
	step := func() {
		xp := tp.Param(x.Data)
		y := net.Apply(ctx, tp.Param(θ), ad.View(xp, 0, x.Shape...))
		if err := tp.Backward(ad.Sum(ad.Square(y))); err != nil {
			b.Fatal(err)
		}
		tp.Reset()
	}
	cputime.Warm(b, step)
}

// BenchmarkBatchNormTest is BatchNorm in test mode (inference: the running
// statistics), forward only, at the same size.
func BenchmarkBatchNormTest(b *testing.B) {
	net, θ, st, x := batchNormBench(b)
	ctx := &model.Ctx{State: st}
	tp := ad.NewTape()
	step := func() {
		y := net.Apply(ctx, tp.Param(θ), tp.Const(x))
		if err := tp.Err(); err != nil || y.Size() != len(x.Data) {
			b.Fatal(err)
		}
		tp.Reset()
	}
	cputime.Warm(b, step)
}
