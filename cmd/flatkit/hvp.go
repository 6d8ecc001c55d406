package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// Scenario hvp: an MLP 8→64→64→1 with tanh at batch 32 and the loss
// sum(out²). Its parameters are one flat []float32 read through ad.View.
// Scenario "d" of ../shared/peers/torch_bench.py builds it the same way,
// from views of one flat tensor, F.linear and (out*out).sum(). Figures: the
// forward pass, the gradient on a reused tape, Hessian-vector products both
// ways, and a JVP.

func init() {
	register(scenario{
		name:  "hvp",
		about: "MLP 8->64->64->1 tanh, batch 32, sum(out^2): forward, gradient, HVP (fwd-over-rev, rev-over-rev), JVP",
		run:   runHVP,
	})
}

const (
	mlpIn     = 8
	mlpHidden = 64
	mlpOut    = 1
	mlpBatch  = 32
)

// mlpLeaf is one parameter tensor of the MLP inside the flat buffer.
type mlpLeaf struct {
	name  string
	off   int
	shape []int
	fanIn int // input width of the leaf's layer, for the init bound
}

func (l mlpLeaf) size() int {
	n := 1
	for _, d := range l.shape {
		n *= d
	}
	return n
}

// mlpLeaves lists the parameters in the order of the peer's MLP_SHAPES.
// That is PyTorch's nn.Sequential order, with paths as in a Sequential of
// Linear, Tanh, Linear, Tanh and Linear. Each layer has its weight, of
// shape (out, in) and row-major, then its bias. mlpParams is the length of
// the flat buffer, 4801.
var mlpLeaves, mlpParams = func() ([]mlpLeaf, int) {
	var ls []mlpLeaf
	off := 0
	for i, io := range [][2]int{{mlpIn, mlpHidden}, {mlpHidden, mlpHidden}, {mlpHidden, mlpOut}} {
		in, out := io[0], io[1]
		w := mlpLeaf{fmt.Sprintf("%d.weight", 2*i), off, []int{out, in}, in}
		off += w.size()
		b := mlpLeaf{fmt.Sprintf("%d.bias", 2*i), off, []int{out}, in}
		off += b.size()
		ls = append(ls, w, b)
	}
	return ls, off
}()

// hvpProblem is the MLP, its input batch, its parameters and the fixed
// direction of the HVP and JVP figures.
type hvpProblem struct {
	x      flat.Tensor // (mlpBatch, mlpIn)
	θ, dir []float32
	loss   func(p ad.Var) ad.Var
	dirT   flat.Tensor // dir as a tensor, for Tape.Const
}

// newHVPProblem draws the parameters with PyTorch's default Linear init:
// weight and bias uniform on ±1/√fan_in. It draws the input and the
// direction from N(0, 1). All come from a PCG with the given seed.
func newHVPProblem(seed uint64) *hvpProblem {
	rng := rand.New(rand.NewPCG(seed, 0x4856_50))
	θ := make([]float32, mlpParams)
	for _, l := range mlpLeaves {
		uniform(rng, θ[l.off:l.off+l.size()], float32(1/math.Sqrt(float64(l.fanIn))))
	}
	x := flat.Tensor{Shape: []int{mlpBatch, mlpIn}, Data: make([]float32, mlpBatch*mlpIn)}
	normal(rng, x.Data)
	dir := make([]float32, mlpParams)
	normal(rng, dir)
	return &hvpProblem{x: x, θ: θ, dir: dir, loss: mlpLoss(x),
		dirT: flat.Tensor{Shape: []int{mlpParams}, Data: dir}}
}

// mlpLoss returns the loss as a function of the flat parameter Var:
// h1 = tanh(x·W1ᵀ + b1), h2 = tanh(h1·W2ᵀ + b2), out = h2·W3ᵀ + b3,
// loss = Σ out².
func mlpLoss(x flat.Tensor) func(p ad.Var) ad.Var {
	l := mlpLeaves
	return func(p ad.Var) ad.Var {
		dense := func(h ad.Var, w, b mlpLeaf) ad.Var {
			W := ad.View(p, w.off, w.shape[0], w.shape[1])
			B := ad.View(p, b.off, b.shape[0])
			return ad.Add(ad.MatMulT(h, W, false, true), B)
		}
		h := ad.Tanh(dense(p.Tape().Const(x), l[0], l[1]))
		h = ad.Tanh(dense(h, l[2], l[3]))
		out := dense(h, l[4], l[5])
		return ad.Sum(ad.Mul(out, out))
	}
}

// forward records the loss on tp and returns its value; the caller resets.
func (pr *hvpProblem) forward(tp *ad.Tape) (float32, error) {
	y := pr.loss(tp.Param(pr.θ))
	return y.Item(), tp.Err()
}

// gradient records the loss on tp and returns its gradient, owned by tp
// until its Reset.
func (pr *hvpProblem) gradient(tp *ad.Tape) ([]float32, error) {
	return tp.Grad(pr.loss(tp.Param(pr.θ)))
}

// hvpTape is H·dir by reverse-over-reverse on a caller's tape, with the
// exported API only: ad.GradVar records a differentiable gradient, and the
// gradient of ⟨∇loss, dir⟩ is H·dir. The result is owned by tp until its
// Reset.
func (pr *hvpProblem) hvpTape(tp *ad.Tape) ([]float32, error) {
	p := tp.Param(pr.θ)
	g := ad.GradVar(pr.loss, p)
	return tp.Grad(ad.Sum(ad.Mul(g, tp.Const(pr.dirT))))
}

// Sinks keep the compiler from discarding the work being timed.
var sinkHVP float32

// hvpTol is the largest relative difference between two HVP methods that
// runHVP accepts.
const hvpTol = 1e-4

func runHVP(b *bencher) error {
	pr := newHVPProblem(1)
	tp := ad.NewTape()
	var firstErr error
	check := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	// One untimed call of each, to fail early and to fill the checksums.
	sum := func(v []float32) *float64 {
		var s float64
		for _, x := range v {
			s += float64(x)
		}
		return &s
	}
	loss, err := pr.forward(tp)
	tp.Reset()
	if err != nil {
		return err
	}
	hvF, err := ad.HVP(pr.loss, pr.θ, pr.dir)
	if err != nil {
		return err
	}
	hvR, err := ad.HVPReverse(pr.loss, pr.θ, pr.dir)
	if err != nil {
		return err
	}
	hvT, err := pr.hvpTape(tp)
	if err != nil {
		return err
	}
	hvT = flat.Clone(hvT)
	tp.Reset()
	jv, err := ad.JVP(pr.loss, pr.θ, pr.dir)
	if err != nil {
		return err
	}
	if d := relDiff(hvF, hvR); d > hvpTol {
		return fmt.Errorf("HVP forward-over-reverse and reverse-over-reverse differ: relative difference %.3g, want ≤ %g", d, hvpTol)
	}
	if d := relDiff(hvF, hvT); d > hvpTol {
		return fmt.Errorf("HVP forward-over-reverse and reused-tape reverse-over-reverse differ: relative difference %.3g, want ≤ %g", d, hvpTol)
	}

	shape := fmt.Sprintf("%d params, batch %d, loss %.4g", mlpParams, mlpBatch, loss)

	sf := b.measure(func() {
		l, err := pr.forward(tp)
		check(err)
		sinkHVP += l
		tp.Reset()
	})
	emitUS(b, "forward", sf, nil, "record the forward pass and the loss on a reused tape, Reset; "+shape)

	sg := b.measure(func() {
		g, err := pr.gradient(tp)
		check(err)
		sinkHVP += g[0]
		tp.Reset()
	})
	emitUS(b, "gradient", sg, nil, "forward + tape.Grad on a reused tape, Reset (steady state)")

	svg := b.measure(func() {
		_, g, err := ad.ValueAndGrad(pr.loss, pr.θ)
		check(err)
		sinkHVP += g[0]
	})
	emitUS(b, "gradient (ad.ValueAndGrad)", svg, nil, "the convenience form: a pooled tape per call, gradient copied out")

	sh := b.measure(func() {
		hv, err := ad.HVP(pr.loss, pr.θ, pr.dir)
		check(err)
		sinkHVP += hv[0]
	})
	emitUS(b, "HVP forward-over-reverse", sh, sum(hvF),
		"ad.HVP(loss, θ, dir), fixed dir: a pooled tape per call (forward, recorded gradient, forward-mode sweep)")

	shr := b.measure(func() {
		hv, err := ad.HVPReverse(pr.loss, pr.θ, pr.dir)
		check(err)
		sinkHVP += hv[0]
	})
	emitUS(b, "HVP reverse-over-reverse", shr, sum(hvR),
		"ad.HVPReverse(loss, θ, dir), fixed dir: a pooled tape per call; the peer's hvp_double_backward does the same")

	sht := b.measure(func() {
		hv, err := pr.hvpTape(tp)
		check(err)
		sinkHVP += hv[0]
		tp.Reset()
	})
	emitUS(b, "HVP reverse-over-reverse, reused tape", sht, sum(hvT),
		"tape.Grad(Sum(Mul(ad.GradVar(loss, p), dir))) on a reused tape, Reset; exported API only")

	sho := b.measure(func() {
		p := tp.Param(pr.θ)
		l := pr.loss(p)
		hv, err := tp.HVPOf(l, p, pr.dir)
		check(err)
		sinkHVP += hv[0]
		tp.Reset()
	})
	emitUS(b, "HVP forward-over-reverse, reused tape", sho, nil,
		"tape.HVPOf(loss, p, dir) on a reused tape, Reset: forward, recorded gradient, forward-mode sweep")

	sj := b.measure(func() {
		v, err := ad.JVP(pr.loss, pr.θ, pr.dir)
		check(err)
		sinkHVP += v[0]
	})
	jsum := float64(jv[0])
	emitUS(b, "JVP", sj, &jsum,
		"ad.JVP(loss, θ, dir), fixed dir: a pooled tape per call, forward pass + one forward-mode sweep")

	b.emit(result{Case: "HVP / gradient ratio", Unit: "x",
		Median: sh.median / sg.median, Min: sh.min / sg.min, Max: sh.max / sg.max, Allocs: sh.allocs,
		Note: "HVP forward-over-reverse ÷ gradient: median/median (min/min, max/max); allocs are the HVP's"})
	b.emit(result{Case: "HVP reused tape / gradient ratio", Unit: "x",
		Median: sho.median / sg.median, Min: sho.min / sg.min, Max: sho.max / sg.max, Allocs: sho.allocs,
		Note: "HVP forward-over-reverse on a reused tape (Tape.HVPOf) ÷ gradient; allocs are the HVP's"})
	return firstErr
}

// emitUS writes a steady-state figure in microseconds per call, the peer's
// unit for this scenario.
func emitUS(b *bencher, name string, s stats, checksum *float64, note string) {
	b.emit(result{Case: name, Median: s.median / 1e3, Min: s.min / 1e3, Max: s.max / 1e3, Unit: "us",
		Allocs: s.allocs, Samples: s.samples, Inner: s.inner, Checksum: checksum, Note: note})
}

// relDiff is ‖a − b‖ / max(‖a‖, ‖b‖), in float64.
func relDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		d += (x - y) * (x - y)
		na += x * x
		nb += y * y
	}
	n := math.Sqrt(max(na, nb))
	if n == 0 {
		return math.Sqrt(d)
	}
	return math.Sqrt(d) / n
}
