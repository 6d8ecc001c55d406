package optimisers

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

func TestFromADMatchesValueAndGrad(t *testing.T) {
	θ := []float32{0.3, -0.7, 1.1, 0.2, -1.4}
	fg := FromAD(minRosenbrockAD)
	grad := make([]float32, len(θ))
	got, gotErr := fg(θ, grad)
	wantV, wantG, err := ad.ValueAndGrad(minRosenbrockAD, θ)
	if err != nil {
		t.Fatal(err)
	}
	if got != float64(wantV) || !slices.Equal(grad, wantG) || gotErr != nil {
		t.Errorf("fg = %v, %v, %v; want %v, %v, nil", got, grad, gotErr, wantV, wantG)
	}
	if v, err := fg(θ, nil); v != float64(wantV) || err != nil {
		t.Errorf("fg with nil grad = %v, %v; want %v, nil", v, err, wantV)
	}
}

func TestFromADAllocatesNothing(t *testing.T) {
	θ := minRosenbrockStart(10)
	grad := make([]float32, len(θ))
	fg := FromAD(minRosenbrockAD)
	fg(θ, grad) // grow the tape's arenas
	if n := testing.AllocsPerRun(100, func() { fg(θ, grad) }); n != 0 {
		t.Errorf("FromAD evaluation allocates %v times; want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { fg(θ, nil) }); n != 0 {
		t.Errorf("FromAD evaluation without gradient allocates %v times; want 0", n)
	}
}

func TestMinimizeBridgeAllocatesNothing(t *testing.T) {
	// One evaluation as gonum makes it: the loss, then the gradient at the
	// same point, and the status check.
	q := newMinQuadratic(6)
	n := 6
	b := &minimizeBridge{fg: minPlain(q.fg), x32: make([]float32, n), g32: make([]float32, n),
		x64: make([]float64, n), g64: make([]float64, n)}
	x := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}
	g := make([]float64, n)
	allocs := testing.AllocsPerRun(100, func() {
		x[0] += 1e-3
		b.loss(x)
		b.grad(g, x)
		b.status()
	})
	if allocs != 0 {
		t.Errorf("an evaluation allocates %v times; want 0", allocs)
	}
	if q.calls != 101 {
		t.Errorf("fg called %d times for 101 points; want one call per point", q.calls)
	}
}

func TestFromADErrors(t *testing.T) {
	θ := []float32{1, 2, 3}
	grad := make([]float32, 3)
	for _, c := range []struct {
		name string
		f    func(ad.Var) ad.Var
		grad []float32
		want string
	}{
		{"shape mismatch", func(p ad.Var) ad.Var {
			return ad.Sum(ad.Add(p, p.Tape().Const(flat.Tensor{Shape: []int{4}, Data: make([]float32, 4)})))
		}, grad, "[3] and [4]"},
		{"shape mismatch, no gradient", func(p ad.Var) ad.Var {
			return ad.Sum(ad.Add(p, p.Tape().Const(flat.Tensor{Shape: []int{4}, Data: make([]float32, 4)})))
		}, nil, "[3] and [4]"},
		{"not a scalar", func(p ad.Var) ad.Var { return ad.Square(p) }, grad, "shape [3]; want a single number"},
		{"not a scalar, no gradient", func(p ad.Var) ad.Var { return ad.Square(p) }, nil, "shape [3]; want a single number"},
		{"zero Var", func(p ad.Var) ad.Var { return ad.Var{} }, grad, "f returned the zero Var, want a Var computed from its argument on its tape"},
		{"another tape", func(p ad.Var) ad.Var { return ad.NewTape().Scalar(1) }, grad, "f returned a Var of another tape, want a Var computed from its argument on its tape"},
		{"grad length", func(p ad.Var) ad.Var { return ad.Sum(p) }, make([]float32, 2), "grad has length 2, want 3 (len(θ))"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fg := FromAD(c.f)
			v, err := fg(θ, c.grad)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "optimisers: FromAD: ") {
				t.Fatalf("error %v; want one containing %q", err, c.want)
			}
			if v != 0 {
				t.Errorf("loss %v with an error; want 0", v)
			}
			// The tape is reusable afterwards: the same failure again.
			if _, err2 := fg(θ, c.grad); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("second call: error %v; want %v again", err2, err)
			}
		})
	}

	// Minimize stops with the tape's error as the cause; θ is unchanged (no
	// finite point was reached).
	var tapeErr error
	fg := FromAD(func(p ad.Var) ad.Var {
		y := ad.Sum(ad.Add(p, p.Tape().Const(flat.Tensor{Shape: []int{4}, Data: make([]float32, 4)})))
		tapeErr = p.Tape().Err()
		return y
	})
	θ0 := slices.Clone(θ)
	_, err := Minimize(fg, θ, nil, nil)
	if tapeErr == nil || !errors.Is(err, tapeErr) {
		t.Errorf("Minimize error %v; want one wrapping the tape's error %v", err, tapeErr)
	}
	if err == nil || !strings.HasPrefix(err.Error(), "optimisers: Minimize: the objective failed at the start (evaluation 1): FromAD: ad: ") || !strings.Contains(err.Error(), "[3] and [4]") {
		t.Errorf("Minimize error %v; want the evaluation, FromAD and the tape's message", err)
	}
	if !slices.Equal(θ, θ0) {
		t.Errorf("θ = %v after failing at the start; want it unchanged %v", θ, θ0)
	}

	// Failing from evaluation 12 on, through a wrapper that passes the
	// result on: the first and the last failure are wrapped.
	calls := 0
	var last error
	fg2 := FromAD(func(p ad.Var) ad.Var {
		if calls++; calls >= 12 {
			return ad.Square(p) // not a scalar
		}
		return minRosenbrockAD(p)
	})
	wrapped := func(θ, grad []float32) (float64, error) {
		v, err := fg2(θ, grad)
		if err != nil {
			last = err
		}
		return v, err
	}
	_, err = Minimize(wrapped, minRosenbrockStart(4), nil, nil)
	if last == nil || !errors.Is(err, last) || !strings.Contains(err.Error(), "the first failure, evaluation 12: FromAD: f returned shape [4]; want a single number") {
		t.Errorf("Minimize error %v; want one wrapping FromAD's error %v", err, last)
	}
	// A NaN loss with no error is still named by its evaluation.
	_, err = Minimize(minPlain(func(θ, grad []float32) float64 { return math.NaN() }), []float32{1}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "at the start (evaluation 1): the loss is NaN") {
		t.Errorf("a plain NaN: %v", err)
	}
}
