package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/model"
)

// Scenario restructure: PyTorch's Linear(256, 256) at batch 1, written as a
// plain Go struct whose parameters are destructured once into a flat buffer.
// Peer: scenario "a" of ../shared/peers/torch_bench.py.

func init() {
	register(scenario{
		name:  "restructure",
		about: "Dense 256->256, batch 1: Restructure alone, gonum Gemv forward alone, both, a long loop, a 100-leaf struct; model.Dense forward and gradient (θ and x) on a reused tape",
		run:   runRestructure,
	})
}

const denseN = 256

// Dense is y = Weight·x + Bias with Weight (out, in), row-major, as PyTorch's
// nn.Linear stores it.
type Dense struct {
	Weight []float32 `flat:"shape=256,256"`
	Bias   []float32 `flat:"shape=256"`
}

// forward writes y = d.Weight·x + d.Bias, reading the parameters through the
// struct's slices.
func (d *Dense) forward(y, x []float32) {
	copy(y, d.Bias)
	blas32.Gemv(blas.NoTrans, 1,
		blas32.General{Rows: denseN, Cols: denseN, Stride: denseN, Data: d.Weight},
		blas32.Vector{N: denseN, Inc: 1, Data: x}, 1,
		blas32.Vector{N: denseN, Inc: 1, Data: y})
}

// uniform fills x from U(-bound, bound), PyTorch's default for Linear
// (bound = 1/sqrt(fan_in) for the weight and the bias).
func uniform(rng *rand.Rand, x []float32, bound float32) {
	for i := range x {
		x[i] = (2*rng.Float32() - 1) * bound
	}
}

// normal fills x from N(0, 1), the inputs (and HVP's direction) of the
// scenarios.
func normal(rng *rand.Rand, x []float32) {
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
}

func newDense(rng *rand.Rand) Dense {
	d := Dense{Weight: make([]float32, denseN*denseN), Bias: make([]float32, denseN)}
	uniform(rng, d.Weight, 1.0/16)
	uniform(rng, d.Bias, 1.0/16)
	return d
}

// leafBlock and hundred make a struct of 10 blocks × 10 small []float32
// fields: 100 leaves, to show the per-leaf cost of Restructure.
type leafBlock struct {
	A, B, C, D, E, F, G, H, I, J []float32
}

type hundred struct {
	Blocks []leafBlock
}

func newHundred(rng *rand.Rand) hundred {
	h := hundred{Blocks: make([]leafBlock, 10)}
	for k := range h.Blocks {
		bl := &h.Blocks[k]
		for j, f := range [...]*[]float32{&bl.A, &bl.B, &bl.C, &bl.D, &bl.E, &bl.F, &bl.G, &bl.H, &bl.I, &bl.J} {
			*f = make([]float32, 4+j+k)
			uniform(rng, *f, 1)
		}
	}
	return h
}

// Sinks keep the compiler from discarding the work being timed.
var (
	sinkF float32
	sinkI int
)

func runRestructure(b *bencher) error {
	rng := rand.New(rand.NewPCG(1, 2))
	p := newDense(rng)
	θa, lay, err := layout.Destructure(&p)
	if err != nil {
		return err
	}
	θb := make([]float32, len(θa))
	uniform(rng, θb, 1.0/16)
	θs := [2][]float32{θa, θb}
	x := make([]float32, denseN)
	normal(rng, x)
	y := make([]float32, denseN)

	var firstErr error
	check := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	k := 0 // alternates θa and θb, so that every call really repoints the fields
	restructure := func() {
		k++
		check(layout.Restructure(θs[k&1], lay, &p))
		sinkI += len(p.Bias)
	}
	forward := func() {
		p.forward(y, x)
		sinkF += y[0]
	}
	both := func() {
		k++
		check(layout.Restructure(θs[k&1], lay, &p))
		p.forward(y, x)
		sinkF += y[0]
	}
	const alt = "alternates two parameter vectors θa/θb"
	nParams := fmt.Sprintf("%d params, %d leaves", lay.Len(), lay.NumLeaves())

	sr := b.measure(restructure)
	b.emitNS("Restructure Dense 256->256", sr, "layout.Restructure alone; "+alt+"; "+nParams)
	sf := b.measure(forward)
	b.emitNS("forward Dense 256->256 (gonum blas32.Gemv)", sf, "y = b; y += W·x with blas32.Gemv through the struct's slices")
	sb := b.measure(both)
	b.emitNS("Restructure + forward Dense 256->256", sb, "Restructure then forward; "+alt)
	b.emit(result{Case: "Restructure as % of forward", Unit: "%",
		Median: 100 * sr.median / sf.median, Min: 100 * sr.min / sf.min, Max: 100 * sr.max / sf.max,
		Allocs: sr.allocs, Note: "median/median (min/min, max/max) of the two figures above; allocs are Restructure's"})
	// The same with flatkit's own GEMV, the kernel a flatkit forward pass uses.
	flatForward := func() {
		copy(y, p.Bias)
		flat.Gemv(false, denseN, denseN, 1, p.Weight, denseN, x, 1, y)
		sinkF += y[0]
	}
	sff := b.measure(flatForward)
	b.emitNS("forward Dense 256->256 (flat.Gemv)", sff, "y = b; y += W·x with flat.Gemv through the struct's slices")
	sfb := b.measure(func() {
		k++
		check(layout.Restructure(θs[k&1], lay, &p))
		flatForward()
	})
	b.emitNS("Restructure + forward Dense 256->256 (flat.Gemv)", sfb, "Restructure then the flat.Gemv forward; "+alt)
	b.emit(result{Case: "Restructure as % of forward (flat.Gemv)", Unit: "%",
		Median: 100 * sr.median / sff.median, Min: 100 * sr.min / sff.min, Max: 100 * sr.max / sff.max,
		Allocs: sr.allocs, Note: "Restructure ÷ the flat.Gemv forward, median/median (min/min, max/max)"})
	if firstErr != nil {
		return firstErr
	}
	if err := denseTapeFigures(b, θa, x); err != nil {
		return err
	}

	si := b.measure(func() {
		k++
		check(layout.RestructureInPlace(θs[k&1], lay, &p))
		sinkF += p.Bias[0]
	})
	b.emitNS("RestructureInPlace Dense 256->256", si, fmt.Sprintf("copies %d floats into the struct's own arrays; %s", lay.Len(), alt))
	// Point p back at a buffer before the loop (InPlace left it on θa or θb's copy).
	check(layout.Restructure(θa, lay, &p))

	// The long loop: x ← f(θ_k)(x), feeding each output back as the next input,
	// as the peer's loop does (vec = layer(vec)).
	steps := b.opt.loopSteps
	xa, xb := make([]float32, denseN), make([]float32, denseN)
	loop := func(n int) {
		in, out := xa, xb
		copy(in, x)
		for s := range n {
			check(layout.Restructure(θs[s&1], lay, &p))
			p.forward(out, in)
			in, out = out, in
		}
		xa, xb = in, out // xa holds the last output
	}
	loop(min(steps, 1000)) // warm-up
	d, mallocs := once(func() { loop(steps) })
	var sum float64
	for _, v := range xa {
		sum += float64(v)
	}
	name := fmt.Sprintf("%d-step loop Restructure + forward", steps)
	ms := float64(d.Nanoseconds()) / 1e6
	perStep := float64(d.Nanoseconds()) / float64(steps)
	allocs := float64(mallocs) / float64(steps)
	note := "one timed run (median = min = max); x ← f(θ)(x), θ alternating θa/θb"
	b.emit(result{Case: name + ", total", Median: ms, Min: ms, Max: ms, Unit: "ms", Allocs: allocs, N: steps, Checksum: &sum, Note: note})
	b.emit(result{Case: name + ", per step", Median: perStep, Min: perStep, Max: perStep, Unit: "ns", Allocs: allocs, N: steps, Checksum: &sum, Note: note})
	if firstErr != nil {
		return firstErr
	}

	h := newHundred(rng)
	ha, hlay, err := layout.Destructure(&h)
	if err != nil {
		return err
	}
	if hlay.NumLeaves() != 100 {
		return fmt.Errorf("100-leaf struct has %d leaves, want 100", hlay.NumLeaves())
	}
	hb := make([]float32, len(ha))
	uniform(rng, hb, 1)
	hs := [2][]float32{ha, hb}
	sh := b.measure(func() {
		k++
		check(layout.Restructure(hs[k&1], hlay, &h))
		sinkI += len(h.Blocks[9].J)
	})
	b.emitNS("Restructure 100-leaf struct", sh, fmt.Sprintf("10 blocks (a []struct) × 10 []float32 fields, %d floats; %s", hlay.Len(), alt))
	return firstErr
}

// denseTapeFigures times model.Dense(256, 256) at batch 1 on one reused
// tape, reading its parameters from θ (the struct's buffer: weight then
// bias, the layout model.Dense declares): the forward alone, and the
// forward with the gradient with respect to θ and to the input x (a Param
// viewed as (1, 256)), the network's VJP that an ODE adjoint runs at every
// step. The two are timed in alternating batches, so that their ratio is
// taken between neighbouring batches on this noisy machine.
func denseTapeFigures(b *bencher, θ, x []float32) error {
	net := model.Dense(denseN, denseN)
	lay, err := model.Layout(net)
	if err != nil {
		return err
	}
	if lay.Len() != len(θ) {
		return fmt.Errorf("model.Dense(%d, %d) has %d params, want %d (the struct's)", denseN, denseN, lay.Len(), len(θ))
	}
	tp := ad.NewTape()
	xshape := []int{1, denseN} // made once: a literal per call would escape with the View
	var firstErr error
	check := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	record := func() (p, xp, loss ad.Var) {
		p, xp = tp.Param(θ), tp.Param(x)
		return p, xp, ad.Sum(net.Apply(nil, p, ad.View(xp, 0, xshape...)))
	}
	forward := func() {
		_, _, loss := record()
		check(tp.Err())
		sinkF += loss.Item()
		tp.Reset()
	}
	gradient := func() {
		p, xp, loss := record()
		check(tp.Backward(loss))
		gθ, gx := tp.GradWrt(p), tp.GradWrt(xp)
		if firstErr == nil {
			sinkF += gθ[0] + gx[0]
		}
		tp.Reset()
	}
	// A checksum: Σ gθ + Σ gx of one gradient.
	p, xp, loss := record()
	check(tp.Backward(loss))
	var sum float64
	for _, g := range [][]float32{tp.GradWrt(p), tp.GradWrt(xp)} {
		for _, v := range g {
			sum += float64(v)
		}
	}
	tp.Reset()
	if firstErr != nil {
		return firstErr
	}

	sf, sg, ratio := measurePair(b.opt, forward, gradient)
	const name = "Dense 256->256 batch 1: "
	emit := func(c string, s stats, note string) {
		b.emit(result{Case: name + c, Median: s.median, Min: s.min, Max: s.max, Unit: "ns",
			Allocs: s.allocs, Samples: s.samples, Inner: s.inner, Checksum: &sum, Note: note})
	}
	emit("forward (reused tape)", sf,
		"model.Dense(256, 256).Apply on Params θ and x (viewed (1, 256)), ad.Sum, Reset; batches alternate with the next figure's")
	emit("forward + gradient θ and x (reused tape)", sg,
		"the same, then tape.Backward, GradWrt(θ), GradWrt(x), Reset; checksum Σ gθ + Σ gx")
	b.emit(result{Case: name + "gradient ÷ forward", Unit: "x",
		Median: ratio.median, Min: ratio.min, Max: ratio.max, Allocs: sg.allocs, Samples: ratio.samples,
		Note: "forward + gradient ÷ forward, per pair of neighbouring batches: median (min, max) of the ratios; allocs are the gradient's"})
	return firstErr
}

// measurePair times f and g as measure does, but in alternating batches
// (f g, then g f, and so on), and also returns the ratio g ÷ f of each pair
// of neighbouring batches: a drift in the machine's speed then moves both
// members of a pair alike.
func measurePair(o options, f, g func()) (sf, sg, ratio stats) {
	nf, _ := batchSize(o, f)
	ng, _ := batchSize(o, g)
	samples := o.samples
	perPair := float64(o.minBatch) * 2
	if budget := int(float64(o.maxTotal) / perPair); budget < samples {
		samples = max(budget, min(o.samples, minSamples))
	}
	samples = max(samples, 1)
	tf, tg, rs := make([]float64, samples), make([]float64, samples), make([]float64, samples)
	var mf, mg uint64
	runtime.GC()
	for s := range samples {
		if s%2 == 0 {
			tf[s] = timeBatch(f, nf, &mf)
			tg[s] = timeBatch(g, ng, &mg)
		} else {
			tg[s] = timeBatch(g, ng, &mg)
			tf[s] = timeBatch(f, nf, &mf)
		}
		rs[s] = tg[s] / tf[s]
	}
	return summarise(tf, nf, mf), summarise(tg, ng, mg), summarise(rs, 1, 0)
}
