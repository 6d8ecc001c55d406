package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/examples/resnet"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/model"
)

// Scenario resnet: ../shared/peers/torch_resnet_bench.py, torchvision's
// ResNet-18 with 10 classes (examples/resnet.ResNet18):
//
//   - inference at 1×3×224×224 and 16×3×32×32, eval mode (running
//     statistics), forward only;
//   - a training step at 16×3×96×96: train mode (batch statistics, the
//     running ones updated), LogitCrossEntropy against labels i mod 10,
//     and the gradient of every parameter;
//
// each on 1 and 2 goroutines (flat.SetMaxThreads), as the peer runs with
// OMP_NUM_THREADS 1 or 2, on a reused tape. The peer takes the median of
// 11 calls after one warm-up, and so does this scenario. Quick mode runs a
// width-8 network on small inputs: it checks that the scenario runs, not
// how fast.

func init() {
	register(scenario{
		name:  "resnet",
		about: "ResNet-18 (10 classes): inference 1x3x224x224 and 16x3x32x32, training step 16x3x96x96; 1 and 2 goroutines",
		run:   runResnet,
	})
}

// resnetCase is one figure's input shape and mode.
type resnetCase struct {
	batch, side int
	train       bool
}

func (c resnetCase) String() string {
	what := "inference"
	if c.train {
		what = "training step"
	}
	return fmt.Sprintf("%s %dx3x%dx%d", what, c.batch, c.side, c.side)
}

// resnetProblem is the network with its parameters, state, one input
// batch and labels.
type resnetProblem struct {
	net    model.Layer
	θ, st  []float32
	x      flat.Tensor
	labels []int
	ctx    model.Ctx
}

func newResnetProblem(width int, c resnetCase, seed uint64) (*resnetProblem, error) {
	net := resnet.New(width, resnet.Blocks18, 10)
	rng := rand.New(rand.NewPCG(seed, 0x7e5))
	θ, err := model.Init(net, rng)
	if err != nil {
		return nil, err
	}
	st, err := model.InitState(net)
	if err != nil {
		return nil, err
	}
	x := flat.New(c.batch, 3, c.side, c.side)
	normal(rng, x.Data)
	labels := make([]int, c.batch)
	for i := range labels {
		labels[i] = i % 10
	}
	return &resnetProblem{net: net, θ: θ, st: st, x: x, labels: labels,
		ctx: model.Ctx{Train: c.train, State: st}}, nil
}

// forward records the logits on tp in the problem's mode.
func (pr *resnetProblem) forward(tp *ad.Tape) ad.Var {
	return pr.net.Apply(&pr.ctx, tp.Param(pr.θ), tp.Const(pr.x))
}

// step records a training step's loss on tp and returns its gradient,
// owned by tp until its Reset.
func (pr *resnetProblem) step(tp *ad.Tape) ([]float32, error) {
	return tp.Grad(model.LogitCrossEntropy(pr.forward(tp), pr.labels))
}

var sinkResnet float32

func runResnet(b *bencher) error {
	cases := []resnetCase{{1, 224, false}, {16, 32, false}, {16, 96, true}}
	width, calls := 64, 11
	if b.opt.quick {
		width = 8
		cases = []resnetCase{{1, 32, false}, {2, 16, false}, {2, 24, true}}
	}
	var firstErr error
	check := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, threads := range []int{1, 2} {
		old := flat.SetMaxThreads(threads)
		for i, c := range cases {
			pr, err := newResnetProblem(width, c, 1)
			if err != nil {
				flat.SetMaxThreads(old)
				return err
			}
			tp := ad.NewTape()
			fn := func() {
				y := pr.forward(tp)
				check(tp.Err())
				sinkResnet += y.Data()[0]
				tp.Reset()
			}
			if c.train {
				fn = func() {
					g, err := pr.step(tp)
					check(err)
					if err == nil {
						sinkResnet += g[0]
					}
					tp.Reset()
				}
			}
			fn()
			if firstErr != nil {
				flat.SetMaxThreads(old)
				return firstErr
			}
			s := b.measureCalls(calls, fn)
			name := fmt.Sprintf("resnet18 %s, %d goroutine(s)", cases[i], threads)
			note := fmt.Sprintf("%d params, width %d, on a reused tape, Reset", len(pr.θ), width)
			b.emit(result{Case: name, Median: s.median / 1e6, Min: s.min / 1e6, Max: s.max / 1e6, Unit: "ms",
				Allocs: s.allocs, Samples: s.samples, Inner: s.inner, Note: note})
		}
		flat.SetMaxThreads(old)
		if firstErr != nil {
			return firstErr
		}
	}
	return nil
}
