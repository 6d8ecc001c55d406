package model_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/race"
	"github.com/flatkit/flatkit/internal/relerr"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/proptest"
)

func indices(v ...float32) []float32 { return v }

func TestEmbeddingLooksUpRows(t *testing.T) {
	const n, dim = 5, 3
	θ := make([]float32, n*dim)
	for i := range θ {
		θ[i] = float32(i) + 0.5 // row r is 3r+0.5, 3r+1.5, 3r+2.5
	}
	tests := []struct {
		name  string
		x     flat.Tensor
		shape []int
	}{
		{"vector", flat.Tensor{Shape: []int{4}, Data: indices(4, 0, 2, 2)}, []int{4, dim}},
		{"matrix", flat.Tensor{Shape: []int{2, 3}, Data: indices(1, 3, 0, 4, 4, 2)}, []int{2, 3, dim}},
		{"scalar", flat.Tensor{Shape: []int{}, Data: indices(3)}, []int{dim}},
		{"empty", flat.Tensor{Shape: []int{0, 2}, Data: indices()}, []int{0, 2, dim}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := applyLayer(t, model.Embedding(n, dim), nil, θ, tt.x)
			if !slices.Equal(y.Shape, tt.shape) {
				t.Fatalf("shape %v, want %v", y.Shape, tt.shape)
			}
			for i, v := range tt.x.Data {
				r := int(v)
				if got, want := y.Data[i*dim:(i+1)*dim], θ[r*dim:(r+1)*dim]; !slices.Equal(got, want) {
					t.Errorf("position %d (index %d): %v, want row %v", i, r, got, want)
				}
			}
		})
	}
}

// TestEmbeddingDerivatives: the table's gradient adds up over repeated
// indices, checked by finite differences of a nonlinear function of the
// looked-up rows, first and second order.
func TestEmbeddingDerivatives(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "n")
		dim := rapid.IntRange(1, 4).Draw(rt, "dim")
		k := rapid.IntRange(1, 8).Draw(rt, "k")
		x := make([]float32, k)
		for i := range x {
			x[i] = float32(rapid.IntRange(0, n-1).Draw(rt, "index"))
		}
		θ := proptest.Floats(n*dim).Draw(rt, "θ")
		w := proptest.Floats(k*dim).Draw(rt, "w")
		l := model.Embedding(n, dim)
		f := func(p ad.Var) ad.Var {
			tp := p.Tape()
			y := l.Apply(nil, p, tp.Const(flat.Tensor{Shape: []int{k}, Data: x}))
			return ad.Sum(ad.Mul(tp.Const(flat.Tensor{Shape: []int{k, dim}, Data: w}), ad.Tanh(y)))
		}
		proptest.CheckGrad(rt, f, θ)
		proptest.CheckHVP(rt, f, θ)
		// Exact gradient: row r gets Σ over positions with index r of
		// w·(1 − tanh²).
		_, g, err := ad.ValueAndGrad(f, θ)
		if err != nil {
			rt.Fatal(err)
		}
		want := make([]float64, n*dim)
		for i, v := range x {
			r := int(v)
			for c := range dim {
				th := math.Tanh(float64(θ[r*dim+c]))
				want[r*dim+c] += float64(w[i*dim+c]) * (1 - th*th)
			}
		}
		if err := relerr.Check("gradient", g, want, 1e-5); err != nil {
			rt.Fatal(err)
		}
	})
}

func TestEmbeddingErrors(t *testing.T) {
	tests := []struct {
		name string
		x    flat.Tensor
		np   int
		want []string
	}{
		{"not an integer", flat.Tensor{Shape: []int{2, 2}, Data: indices(1, 0, 2.5, 1)}, 12, []string{"Embedding(4, 3)", "x[1 0] (flat position 2) = 2.5", "0 ≤ i < 4"}},
		{"too large", flat.Tensor{Shape: []int{3}, Data: indices(0, 4, 1)}, 12, []string{"x[1] (flat position 1) = 4", "< 4"}},
		{"negative", flat.Tensor{Shape: []int{3}, Data: indices(0, 1, -1)}, 12, []string{"x[2]", "= -1"}},
		{"NaN", flat.Tensor{Shape: []int{1}, Data: indices(float32(math.NaN()))}, 12, []string{"= NaN"}},
		{"Inf", flat.Tensor{Shape: []int{1}, Data: indices(float32(math.Inf(1)))}, 12, []string{"= +Inf"}},
		{"huge", flat.Tensor{Shape: []int{1}, Data: indices(1e30)}, 12, []string{"= 1e+30"}},
		{"params", flat.Tensor{Shape: []int{1}, Data: indices(0)}, 11, []string{"Embedding", "[11]", "(12)"}},
		{"rank", flat.Tensor{Shape: []int{1, 1, 1, 1, 1, 1, 1, 1}, Data: indices(0)}, 12, []string{"Embedding(4, 3)", "rank 8", "at most 7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := ad.NewTape()
			y := model.Embedding(4, 3).Apply(nil, tp.Param(make([]float32, tt.np)), tp.Const(tt.x))
			err := tp.Err()
			if err == nil {
				t.Fatalf("no error; output %v", y)
			}
			checkMentions(t, err, tt.want)
		})
	}
	for _, tt := range []struct {
		name string
		l    model.Layer
		want string
	}{
		{"size", model.Embedding(0, 3), "Embedding: n 0, dim 3"},
	} {
		if _, err := model.Layout(tt.l); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Layout error %v, want one mentioning %q", tt.name, err, tt.want)
		}
	}
}

func TestEmbeddingInit(t *testing.T) {
	θ, err := model.Init(model.Embedding(100, 50), rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	var m, v float64
	for _, x := range θ {
		m += float64(x) / float64(len(θ))
	}
	for _, x := range θ {
		v += (float64(x) - m) * (float64(x) - m) / float64(len(θ))
	}
	// 5000 draws of N(0, 1): the mean is within 4/√5000 ≈ 0.057 and the
	// variance within 0.1 of 1 with overwhelming probability.
	if math.Abs(m) > 0.057 || math.Abs(v-1) > 0.1 {
		t.Errorf("mean %v, variance %v; want N(0, 1)", m, v)
	}
	θ, err = model.Init(model.Embedding(3, 2, model.WeightInit(model.ConstantInit(0.25))), rand.New(rand.NewPCG(5, 6)))
	if err != nil || !slices.Equal(θ, []float32{0.25, 0.25, 0.25, 0.25, 0.25, 0.25}) {
		t.Errorf("WeightInit(ConstantInit(0.25)): %v, %v", θ, err)
	}
}

// TestEmbeddingConcurrent applies one layer from several goroutines, each
// with its own tape (run with -race).
func TestEmbeddingConcurrent(t *testing.T) {
	l := model.Embedding(7, 5)
	θ, err := model.Init(l, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tp := ad.NewTape()
			x := make([]float32, 9+g)
			for i := range x {
				x[i] = float32((i + g) % 7)
			}
			for range 50 {
				y := l.Apply(nil, tp.Param(θ), tp.Const(flat.Tensor{Shape: []int{len(x)}, Data: x}))
				d := y.Data()
				for i, v := range x {
					r := int(v)
					if !slices.Equal(d[i*5:(i+1)*5], θ[r*5:(r+1)*5]) {
						errs <- "wrong row"
						return
					}
				}
				tp.Reset()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestEmbeddingStepAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops items under -race")
	}
	l := model.Embedding(10, 4)
	θ, err := model.Init(l, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	x := flat.Tensor{Shape: []int{3, 5}, Data: make([]float32, 15)}
	for i := range x.Data {
		x.Data[i] = float32(i * 3 % 10)
	}
	checkStepAllocs(t, "a step", l, nil, ad.NewTape(), θ, x, 50)
}
