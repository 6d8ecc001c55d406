package optimisers_test

import (
	"context"
	"errors"
	"iter"
	"math"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
)

// regression is a tiny least-squares problem: y = 2x₀ − x₁ + 0.5, fitted by
// a Dense layer 2 → 1 (weight (1, 2), bias (1)) on batches of 4.
type batch struct{ x, y flat.Tensor }

func regression(t testing.TB) (*layout.Layout, []batch) {
	lay, err := layout.NewBuilder().Add("weight", 1, 2).Add("bias", 1).Build()
	if err != nil {
		t.Fatal(err)
	}
	var bs []batch
	for k := range 8 {
		x := make([]float32, 8)
		y := make([]float32, 4)
		for i := range 4 {
			x0, x1 := float32(k%3)-1+float32(i)*0.5, float32(i%2)-0.25*float32(k)
			x[2*i], x[2*i+1] = x0, x1
			y[i] = 2*x0 - x1 + 0.5
		}
		bs = append(bs, batch{flat.Tensor{Shape: []int{4, 2}, Data: x}, flat.Tensor{Shape: []int{4, 1}, Data: y}})
	}
	return lay, bs
}

// mse is the loss of the Dense layer on a batch.
func mse(p ad.Var, b batch) ad.Var {
	t := p.Tape()
	w := ad.View(p, 0, 1, 2)
	bias := ad.View(p, 2, 1)
	pred := ad.Add(ad.MatMul(t.Const(b.x), ad.Transpose(w, 1, 0)), bias)
	return ad.Mean(ad.Square(ad.Sub(pred, t.Const(b.y))))
}

// epochs yields the batches n times over.
func epochs(bs []batch, n int) iter.Seq[batch] {
	return func(yield func(batch) bool) {
		for range n {
			for _, b := range bs {
				if !yield(b) {
					return
				}
			}
		}
	}
}

func TestTrainRegression(t *testing.T) {
	lay, bs := regression(t)
	opt := mustSetup(t, optimisers.Adam(0.05), lay)
	θ := make([]float32, lay.Len())
	var steps []int
	var losses []float32
	err := optimisers.Train(context.Background(), opt, θ, epochs(bs, 100), mse, 40, func(step int, loss float32) error {
		steps = append(steps, step)
		losses = append(losses, loss)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 20 || steps[0] != 40 || steps[19] != 800 {
		t.Errorf("callback at steps %v, want 40, 80, …, 800", steps)
	}
	if !(losses[len(losses)-1] < 1e-3*losses[0]) {
		t.Errorf("losses %v do not decrease", losses)
	}
	want := []float32{2, -1, 0.5}
	for i := range θ {
		if math.Abs(float64(θ[i]-want[i])) > 1e-2 {
			t.Errorf("θ = %v, want ≈ %v", θ, want)
			break
		}
	}
	if opt.Steps() != 800 {
		t.Errorf("Steps = %d, want 800", opt.Steps())
	}
}

// The loop allocates nothing per step beyond the user's code: the cost of
// Train over 20 epochs and over 10 is the same.
func TestTrainAllocatesNothingPerStep(t *testing.T) {
	lay, bs := regression(t)
	opt := mustSetup(t, optimisers.Adam(0.01), lay)
	θ := make([]float32, lay.Len())
	run := func(n int) float64 {
		return testing.AllocsPerRun(5, func() {
			if err := optimisers.Train(context.Background(), opt, θ, epochs(bs, n), mse, 0, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
	short, long := run(10), run(20)
	t.Logf("allocs: %v for 10 epochs, %v for 20", short, long)
	if perStep := (long - short) / float64(10*len(bs)); perStep > 0.05 {
		t.Errorf("Train allocates %.2f times per step (%v for 10 epochs, %v for 20)", perStep, short, long)
	}
}

func TestTrainStops(t *testing.T) {
	lay, bs := regression(t)
	setup := func() (*optimisers.Optimiser, []float32) {
		opt := mustSetup(t, optimisers.Descent(0.01), lay)
		return opt, make([]float32, lay.Len())
	}

	// A cancelled context stops before the next step.
	opt, θ := setup()
	ctx, cancel := context.WithCancel(context.Background())
	err := optimisers.Train(ctx, opt, θ, epochs(bs, 10), mse, 1, func(step int, _ float32) error {
		if step == 5 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "before step 6") || opt.Steps() != 5 {
		t.Errorf("cancelled at step 5: %v after %d steps", err, opt.Steps())
	}

	// A callback error stops the loop and is wrapped.
	opt, θ = setup()
	stop := errors.New("enough")
	err = optimisers.Train(context.Background(), opt, θ, epochs(bs, 10), mse, 3, func(step int, _ float32) error {
		if step == 9 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !strings.Contains(err.Error(), "step 9") || opt.Steps() != 9 {
		t.Errorf("callback error at step 9: %v after %d steps", err, opt.Steps())
	}

	// A NaN loss stops at its step, without its update.
	opt, θ = setup()
	poisoned := func(p ad.Var, b batch) ad.Var {
		l := mse(p, b)
		if b.y.Data[0] == bs[3].y.Data[0] {
			return ad.Log(ad.Scale(l, -1))
		}
		return l
	}
	err = optimisers.Train(context.Background(), opt, θ, epochs(bs, 10), poisoned, 0, nil)
	if err == nil || !strings.Contains(err.Error(), "step 4: the loss is NaN") || opt.Steps() != 3 {
		t.Errorf("NaN loss at step 4: %v after %d steps", err, opt.Steps())
	}

	// Errors recorded on the tape.
	opt, θ = setup()
	wrong := func(p ad.Var, b batch) ad.Var { return ad.Sum(ad.Add(ad.View(p, 0, 3), p.Tape().Const(b.x))) }
	err = optimisers.Train(context.Background(), opt, θ, epochs(bs, 1), wrong, 0, nil)
	if err == nil || !strings.Contains(err.Error(), "step 1:") {
		t.Errorf("a tape error: %v", err)
	}
	if err := optimisers.Train(context.Background(), opt, θ[:2], epochs(bs, 1), mse, 0, nil); err == nil {
		t.Errorf("θ of the wrong length: no error")
	}
}
