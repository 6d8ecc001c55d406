package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/model"
)

// Scenario convchain: scenario "c" of ../shared/peers/torch_bench.py, six
// unpadded 3×3 convolutions each followed by Relu, Flatten, Dense to 10
// classes, and the softmax cross-entropy against a one-hot target averaged
// over the batch (the peer: softmax, then −Σ y·log p, mean over the batch),
// on inputs of 28×28 pixels:
//
//   - small: batch 5, channels 1-2-2-3-3-3-3 (Dense 768→10);
//   - big (compute-bound): batch 64, channels 1-16-32-32-64-64-64 (Dense
//     64·16·16→10), on one goroutine (flat.SetMaxThreads(1)), as the peer
//     runs on one thread, and on the default number.
//
// Figures: the forward pass with the loss, and forward + gradient with
// respect to every parameter, in steady state on a reused tape.

func init() {
	register(scenario{
		name:  "convchain",
		about: "6 3x3 convs + Relu, Flatten, Dense, softmax cross-entropy: batch 5 ch 1-2-2-3-3-3-3 and batch 64 ch 1-16-32-32-64-64-64; forward and gradient",
		run:   runConvchain,
	})
}

// convCfg is one variant of the scenario.
type convCfg struct {
	name  string
	batch int
	ch    [7]int
}

var (
	convSmall = convCfg{name: "small b5 ch1-2-2-3-3-3-3", batch: 5, ch: [7]int{1, 2, 2, 3, 3, 3, 3}}
	convBig   = convCfg{name: "big b64 ch1-16-32-32-64-64-64", batch: 64, ch: [7]int{1, 16, 32, 32, 64, 64, 64}}
)

const (
	convSide    = 28 // input height and width
	convClasses = 10
	convTarget  = 3 // the one-hot class, as the peer's y[:, 3] = 1
)

// convNet returns Chain(Conv, Relu, …×6, Flatten, Dense): paths "0.weight"
// … "10.weight", "13.weight" as the peer's nn.Sequential.
func convNet(c convCfg) model.Layer {
	var ls []model.Layer
	for i := 0; i < 6; i++ {
		ls = append(ls, model.Conv([]int{3, 3}, c.ch[i], c.ch[i+1]), model.Relu())
	}
	s := convSide - 2*6
	ls = append(ls, model.Flatten(), model.Dense(c.ch[6]*s*s, convClasses))
	return model.Chain(ls...)
}

// convProblem is the net of one variant with its parameters, input batch
// and one-hot targets.
type convProblem struct {
	cfg  convCfg
	net  model.Layer
	θ    []float32
	x, y flat.Tensor
}

// newConvProblem draws the parameters with PyTorch's default
// initialisation and the input from N(0, 1), from a PCG seeded by seed. The
// peer feeds zeros; the cost does not depend on the values, and random
// inputs make the checks meaningful. The target is class convTarget for
// every item.
func newConvProblem(c convCfg, seed uint64) (*convProblem, error) {
	net := convNet(c)
	rng := rand.New(rand.NewPCG(seed, 0xc0c4))
	θ, err := model.Init(net, rng)
	if err != nil {
		return nil, err
	}
	x := flat.New(c.batch, c.ch[0], convSide, convSide)
	normal(rng, x.Data)
	y := flat.New(c.batch, convClasses)
	for n := 0; n < c.batch; n++ {
		y.Data[n*convClasses+convTarget] = 1
	}
	return &convProblem{cfg: c, net: net, θ: θ, x: x, y: y}, nil
}

// loss is the mean over the batch of −Σ y·log softmax(net(x)): the logit
// cross-entropy against the one-hot targets, stable for any logits.
func (pr *convProblem) loss(p ad.Var) ad.Var {
	t := p.Tape()
	z := pr.net.Apply(nil, p, t.Const(pr.x))
	return model.LogitCrossEntropyOneHot(z, t.Const(pr.y))
}

// forward records the loss on tp and returns its value; the caller resets.
func (pr *convProblem) forward(tp *ad.Tape) (float32, error) {
	y := pr.loss(tp.Param(pr.θ))
	return y.Item(), tp.Err()
}

// gradient records the loss on tp and returns its gradient, owned by tp
// until its Reset: one training step's derivative work.
func (pr *convProblem) gradient(tp *ad.Tape) ([]float32, error) {
	return tp.Grad(pr.loss(tp.Param(pr.θ)))
}

// sinkConv keeps the compiler from discarding the work being timed.
var sinkConv float32

func runConvchain(b *bencher) error {
	var firstErr error
	check := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	type variant struct {
		cfg     convCfg
		threads int // flat.SetMaxThreads; 0 = default
		label   string
	}
	vs := []variant{{convSmall, 0, ""}, {convBig, 1, ", 1 goroutine"}, {convBig, 0, ""}}
	for _, v := range vs {
		cfg := v.cfg
		if b.opt.quick && cfg.batch > 8 {
			cfg.batch = 4 // quick mode checks that the scenario runs, not how fast
		}
		pr, err := newConvProblem(cfg, 1)
		if err != nil {
			return err
		}
		old := flat.SetMaxThreads(v.threads)
		tp := ad.NewTape()
		loss, err := pr.forward(tp)
		tp.Reset()
		if err != nil {
			flat.SetMaxThreads(old)
			return err
		}
		g, err := pr.gradient(tp)
		if err != nil {
			flat.SetMaxThreads(old)
			return err
		}
		var sum float64
		for _, x := range g {
			sum += float64(x)
		}
		tp.Reset()
		about := fmt.Sprintf("%d params, batch %d, loss %.4g", len(pr.θ), cfg.batch, loss)
		if v.threads == 0 {
			about += ", default goroutines"
		} else {
			about += fmt.Sprintf(", %d goroutine(s)", v.threads)
		}
		sf := b.measure(func() {
			l, err := pr.forward(tp)
			check(err)
			sinkConv += l
			tp.Reset()
		})
		emitUS(b, v.cfg.name+" forward"+v.label, sf, nil, "forward pass and loss on a reused tape, Reset; "+about)
		sg := b.measure(func() {
			g, err := pr.gradient(tp)
			check(err)
			sinkConv += g[0]
			tp.Reset()
		})
		emitUS(b, v.cfg.name+" gradient"+v.label, sg, &sum, "forward + tape.Grad on a reused tape, Reset; "+about)
		flat.SetMaxThreads(old)
		if firstErr != nil {
			return firstErr
		}
	}
	return nil
}
