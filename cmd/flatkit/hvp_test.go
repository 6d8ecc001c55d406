package main

import (
	"math"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// refLoss is the scenario's loss written out in plain float64 Go, as an
// independent definition of the model: h1 = tanh(x·W1ᵀ + b1),
// h2 = tanh(h1·W2ᵀ + b2), out = h2·W3ᵀ + b3, loss = Σ out².
func refLoss(x []float64, θ []float64) float64 {
	leaf := func(k int) []float64 { l := mlpLeaves[k]; return θ[l.off : l.off+l.size()] }
	h := x
	in := mlpIn
	var loss float64
	for layer := 0; layer < 3; layer++ {
		W, B := leaf(2*layer), leaf(2*layer+1)
		out := len(B)
		next := make([]float64, mlpBatch*out)
		for n := 0; n < mlpBatch; n++ {
			for o := 0; o < out; o++ {
				s := B[o]
				for i := 0; i < in; i++ {
					s += h[n*in+i] * W[o*in+i]
				}
				if layer < 2 {
					s = math.Tanh(s)
				} else {
					loss += s * s
				}
				next[n*out+o] = s
			}
		}
		h, in = next, out
	}
	return loss
}

func to64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func TestHVPProblemShape(t *testing.T) {
	if mlpParams != 64*8+64+64*64+64+64+1 {
		t.Fatalf("mlpParams = %d, want 4801", mlpParams)
	}
	pr := newHVPProblem(1)
	for _, l := range mlpLeaves {
		bound := float32(1 / math.Sqrt(float64(l.fanIn)))
		for _, v := range pr.θ[l.off : l.off+l.size()] {
			if v < -bound || v > bound {
				t.Fatalf("%s: %v outside the init bound ±%v", l.name, v, bound)
			}
		}
	}
}

// TestHVPMLPLossAndGradient checks the benchmarked computation: the tape's
// loss against the float64 reference, and the tape's gradient against a
// central finite difference of the reference in one random direction.
func TestHVPMLPLossAndGradient(t *testing.T) {
	pr := newHVPProblem(1)
	x64, θ64 := to64(pr.x.Data), to64(pr.θ)
	want := refLoss(x64, θ64)

	tp := ad.NewTape()
	got, err := pr.forward(tp)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(got)-want) > 1e-5*math.Max(1, math.Abs(want)) {
		t.Errorf("loss: tape %v, float64 reference %v", got, want)
	}
	tp.Reset()

	g, err := pr.gradient(tp)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loss %v", got)
	fdCheck(t, "MLP", func(θ []float64) float64 { return refLoss(x64, θ) }, pr.θ, g, 7, 1e-5, 1e-4)
	tp.Reset()

	// ValueAndGrad is the same gradient.
	_, g2, err := ad.ValueAndGrad(pr.loss, pr.θ)
	if err != nil {
		t.Fatal(err)
	}
	g1, _ := pr.gradient(tp)
	if d := relDiff(g1, g2); d > 1e-6 {
		t.Errorf("reused-tape gradient and ad.ValueAndGrad differ by %.3g", d)
	}
}

// TestHVPMLPHessianVector checks the three HVPs of the scenario against each
// other, against a central finite difference of the gradient, and the JVP
// against ⟨gradient, dir⟩.
func TestHVPMLPHessianVector(t *testing.T) {
	pr := newHVPProblem(1)
	hvF, err := ad.HVP(pr.loss, pr.θ, pr.dir)
	if err != nil {
		t.Fatal(err)
	}
	hvR, err := ad.HVPReverse(pr.loss, pr.θ, pr.dir)
	if err != nil {
		t.Fatal(err)
	}
	tp := ad.NewTape()
	hvT, err := pr.hvpTape(tp)
	if err != nil {
		t.Fatal(err)
	}
	hvT = flat.Clone(hvT)
	tp.Reset()
	if d := relDiff(hvF, hvR); d > 1e-5 {
		t.Errorf("HVP vs HVPReverse: relative difference %.3g", d)
	}
	if d := relDiff(hvF, hvT); d > 1e-5 {
		t.Errorf("HVP vs reused-tape reverse-over-reverse: relative difference %.3g", d)
	}
	for i := range hvF {
		if d := math.Abs(float64(hvF[i] - hvR[i])); d > 1e-4*math.Max(1, math.Abs(float64(hvF[i]))) {
			t.Errorf("HVP[%d]: forward-over-reverse %v, reverse-over-reverse %v", i, hvF[i], hvR[i])
		}
	}

	// Central difference of the float32 gradient along dir (scaled to unit
	// length so the step is the same in every coordinate's units).
	norm := float32(math.Sqrt(float64(flat.Dot(pr.dir, pr.dir))))
	const h = 1e-2
	plus, minus := flat.Clone(pr.θ), flat.Clone(pr.θ)
	flat.Axpy(h/norm, pr.dir, plus)
	flat.Axpy(-h/norm, pr.dir, minus)
	_, gp, err := ad.ValueAndGrad(pr.loss, plus)
	if err != nil {
		t.Fatal(err)
	}
	_, gm, err := ad.ValueAndGrad(pr.loss, minus)
	if err != nil {
		t.Fatal(err)
	}
	fd := make([]float32, mlpParams)
	for i := range fd {
		fd[i] = (gp[i] - gm[i]) / (2 * h) * norm
	}
	if d := relDiff(hvF, fd); d > 2e-2 {
		t.Errorf("HVP vs central difference of the gradient: relative difference %.3g", d)
	} else {
		t.Logf("HVP vs central difference of the gradient: relative difference %.3g", d)
	}

	jv, err := ad.JVP(pr.loss, pr.θ, pr.dir)
	if err != nil {
		t.Fatal(err)
	}
	g, err := pr.gradient(tp)
	if err != nil {
		t.Fatal(err)
	}
	gd := float64(flat.Dot(g, pr.dir))
	if math.Abs(float64(jv[0])-gd) > 1e-4*math.Max(1, math.Abs(gd)) {
		t.Errorf("JVP %v, ⟨gradient, dir⟩ %v", jv[0], gd)
	}
}

// TestHVPGradientStepAllocatesNothing pins the steady-state figures at zero
// allocations, as the benchmark measures them.
func TestHVPGradientStepAllocatesNothing(t *testing.T) {
	pr := newHVPProblem(1)
	tp := ad.NewTape()
	var err error
	fwd := func() {
		_, err = pr.forward(tp)
		tp.Reset()
	}
	grad := func() {
		_, err = pr.gradient(tp)
		tp.Reset()
	}
	for name, fn := range map[string]func(){"forward": fwd, "gradient": grad} {
		fn()
		if a := testing.AllocsPerRun(20, fn); a != 0 {
			t.Errorf("%s on a reused tape allocates %v times per call, want 0", name, a)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestBenchHVPQuick runs the hvp scenario with tiny sample counts and checks
// the shape of its output, not its timings.
func TestBenchHVPQuick(t *testing.T) {
	cases := runBench(t, []string{"-samples", "2", "hvp"})
	for _, want := range []string{
		"forward", "gradient", "gradient (ad.ValueAndGrad)",
		"HVP forward-over-reverse", "HVP reverse-over-reverse", "HVP reverse-over-reverse, reused tape",
		"JVP", "HVP / gradient ratio", "HVP reused tape / gradient ratio",
	} {
		if cases[want] == nil {
			t.Errorf("no figure for case %q", want)
		}
	}
	if m := cases["HVP / gradient ratio"]; m != nil && m["unit"] != "x" {
		t.Errorf("HVP / gradient ratio: unit %v, want x", m["unit"])
	}
}

// benchCall times f and counts its allocations per call.
func benchCall(b *testing.B, f func() error) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTape times f on one tape, reset after each call.
func benchTape(b *testing.B, f func(tp *ad.Tape) error) {
	b.Helper()
	tp := ad.NewTape()
	benchCall(b, func() error {
		err := f(tp)
		tp.Reset()
		return err
	})
}

func BenchmarkHVPGradient(b *testing.B) {
	pr := newHVPProblem(1)
	benchTape(b, func(tp *ad.Tape) error { _, err := pr.gradient(tp); return err })
}

func BenchmarkHVPForward(b *testing.B) {
	pr := newHVPProblem(1)
	benchTape(b, func(tp *ad.Tape) error { _, err := pr.forward(tp); return err })
}

func BenchmarkHVPForwardOverReverse(b *testing.B) {
	pr := newHVPProblem(1)
	benchCall(b, func() error { _, err := ad.HVP(pr.loss, pr.θ, pr.dir); return err })
}

func BenchmarkHVPReverseOverReverseTape(b *testing.B) {
	pr := newHVPProblem(1)
	benchTape(b, func(tp *ad.Tape) error { _, err := pr.hvpTape(tp); return err })
}

func BenchmarkHVPValueAndGrad(b *testing.B) {
	pr := newHVPProblem(1)
	benchCall(b, func() error { _, _, err := ad.ValueAndGrad(pr.loss, pr.θ); return err })
}
