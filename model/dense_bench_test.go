package model_test

import (
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/model"
)

// denseVJP is model.Dense(256, 256) at batch 1 on a reused tape, as an
// adjoint's inner loop uses it: θ and x are both Params, the loss is the sum
// of the outputs.
type denseVJP struct {
	net   *model.DenseLayer
	θ, x  []float32
	shape []int // (1, 256), made once so the loop does not allocate
}

func newDenseVJP() *denseVJP {
	net := model.Dense(256, 256)
	θ, err := model.Init(net, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, 256)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return &denseVJP{net: net, θ: θ, x: x, shape: []int{1, 256}}
}

// forward records the loss; the caller resets the tape.
func (d *denseVJP) forward(tp *ad.Tape) (p, xp, loss ad.Var) {
	p = tp.Param(d.θ)
	xp = tp.Param(d.x)
	xv := ad.View(xp, 0, d.shape...)
	return p, xp, ad.Sum(d.net.Apply(nil, p, xv))
}

// gradient records the loss and sweeps back to θ and x.
func (d *denseVJP) gradient(tp *ad.Tape) (gθ, gx []float32, err error) {
	p, xp, loss := d.forward(tp)
	if err := tp.Backward(loss); err != nil {
		return nil, nil, err
	}
	return tp.GradWrt(p), tp.GradWrt(xp), nil
}

// TestDenseVJPBatch1 checks the gradients of the benchmark's loss (the sum
// of W·x + b): ∂/∂W[i][j] = x[j], ∂/∂b = 1, ∂/∂x[j] = Σ_i W[i][j]; and that
// a reused tape allocates nothing.
func TestDenseVJPBatch1(t *testing.T) {
	d := newDenseVJP()
	tp := ad.NewTape()
	for range 2 { // the second pass runs on the reused tape
		gθ, gx, err := d.gradient(tp)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 256 {
			for j := range 256 {
				if got := gθ[i*256+j]; got != d.x[j] {
					t.Fatalf("dW[%d][%d] = %v, want x[%d] = %v", i, j, got, j, d.x[j])
				}
			}
			if got := gθ[256*256+i]; got != 1 {
				t.Fatalf("db[%d] = %v, want 1", i, got)
			}
		}
		for j := range 256 {
			var want float64
			for i := range 256 {
				want += float64(d.θ[i*256+j])
			}
			if diff := float64(gx[j]) - want; diff > 1e-5 || diff < -1e-5 {
				t.Fatalf("dx[%d] = %v, want %v", j, gx[j], want)
			}
		}
		tp.Reset()
	}
	if n := testing.AllocsPerRun(20, func() {
		if _, _, err := d.gradient(tp); err != nil {
			t.Fatal(err)
		}
		tp.Reset()
	}); n != 0 {
		t.Errorf("gradient on a reused tape: %v allocs, want 0", n)
	}
}

func BenchmarkDense256Batch1Forward(b *testing.B) {
	d := newDenseVJP()
	tp := ad.NewTape()
	b.ReportAllocs()
	for b.Loop() {
		_, _, loss := d.forward(tp)
		if err := tp.Err(); err != nil {
			b.Fatal(err)
		}
		_ = loss
		tp.Reset()
	}
}

func BenchmarkDense256Batch1Gradient(b *testing.B) {
	d := newDenseVJP()
	tp := ad.NewTape()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := d.gradient(tp); err != nil {
			b.Fatal(err)
		}
		tp.Reset()
	}
}
