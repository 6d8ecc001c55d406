package model_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/proptest"
	"pgregory.net/rapid"
)

func TestDropoutIsIdentityOutsideTraining(t *testing.T) {
	x := flat.Tensor{Shape: []int{2, 3}, Data: []float32{1, -2, 3, -4, 5, -6}}
	for _, c := range []*model.Ctx{nil, {}, {RNG: rand.New(rand.NewPCG(1, 1))}} {
		tp := ad.NewTape()
		xv := tp.Const(x)
		if y := model.Dropout(0.5).Apply(c, ad.Var{}, xv); y != xv || tp.Err() != nil {
			t.Errorf("ctx %+v: output %v (err %v), want the input itself", c, y, tp.Err())
		}
	}
	// p = 0 is the identity in training mode too, without an RNG.
	tp := ad.NewTape()
	xv := tp.Const(x)
	if y := model.Dropout(0).Apply(&model.Ctx{Train: true}, ad.Var{}, xv); y != xv || tp.Err() != nil {
		t.Errorf("p = 0: output %v (err %v), want the input itself", y, tp.Err())
	}
}

// TestDropoutMask: in training mode every output is 0 or x/(1 − p); the
// share dropped is p within binomial bounds, and the mean is kept.
func TestDropoutMask(t *testing.T) {
	const n = 20000
	x := make([]float32, n)
	for i := range x {
		x[i] = 1 + float32(i%5)*0.25
	}
	for _, p := range []float32{0.1, 0.5, 0.9} {
		tp := ad.NewTape()
		c := &model.Ctx{Train: true, RNG: rand.New(rand.NewPCG(9, uint64(p*100)))}
		y := model.Dropout(p).Apply(c, ad.Var{}, tp.Const(flat.Tensor{Shape: []int{100, n / 100}, Data: x}))
		if err := tp.Err(); err != nil {
			t.Fatal(err)
		}
		if s := y.Shape(); !slices.Equal(s, []int{100, n / 100}) {
			t.Fatalf("shape %v", s)
		}
		dropped := 0
		var sx, sy, vy float64
		for i, v := range y.Data() {
			sx += float64(x[i])
			vy += float64(x[i]) * float64(x[i]) * float64(p) / float64(1-p)
			sy += float64(v)
			switch {
			case v == 0:
				dropped++
			case v != x[i]*(1/(1-p)):
				t.Fatalf("p %v: output %d is %v, want 0 or %v", p, i, v, x[i]/(1-p))
			}
		}
		// 5 standard deviations of the binomial count.
		sd := math.Sqrt(n * float64(p) * float64(1-p))
		if math.Abs(float64(dropped)-n*float64(p)) > 5*sd {
			t.Errorf("p %v: dropped %d of %d, want about %v", p, dropped, n, n*float64(p))
		}
		if math.Abs(sy-sx) > 5*math.Sqrt(vy) { // 5 standard deviations of the sum
			t.Errorf("p %v: sum %v, want about %v (the input's)", p, sy, sx)
		}
	}
}

// TestDropoutDrawsFreshMasks: masks differ between calls and are
// reproducible from the seed.
func TestDropoutDrawsFreshMasks(t *testing.T) {
	draw := func(rng *rand.Rand) []float32 {
		tp := ad.NewTape()
		y := model.Dropout(0.5).Apply(&model.Ctx{Train: true, RNG: rng}, ad.Var{}, tp.Full(1, 64))
		return slices.Clone(y.Data())
	}
	r1, r2 := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
	a, b := draw(r1), draw(r1)
	if slices.Equal(a, b) {
		t.Error("two calls drew the same mask of 64 elements")
	}
	if c := draw(r2); !slices.Equal(a, c) {
		t.Error("the same seed drew a different mask")
	}
}

// TestDropoutDerivatives: with the mask fixed (the same seed at every
// evaluation) the derivatives are those of x·mask.
func TestDropoutDerivatives(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(rt, "n")
		// p ≤ 0.5: larger p scales y by up to 1/(1−p), and sin(x)·y² grows
		// curvature that float32 finite differences cannot resolve.
		p := float32(rapid.Float64Range(0, 0.5).Draw(rt, "p"))
		seed := rapid.Uint64().Draw(rt, "seed")
		x := proptest.Floats(n).Draw(rt, "x")
		f := func(v ad.Var) ad.Var {
			c := &model.Ctx{Train: true, RNG: rand.New(rand.NewPCG(seed, 0))}
			y := model.Dropout(p).Apply(c, ad.Var{}, v)
			return ad.Sum(ad.Mul(ad.Sin(v), ad.Square(y)))
		}
		proptest.CheckGrad(rt, f, x)
		proptest.CheckHVP(rt, f, x)
	})
}

func TestDropoutErrors(t *testing.T) {
	for _, p := range []float32{-0.1, 1, 1.5, float32(math.NaN())} {
		_, err := model.Layout(model.Chain(model.Relu(), model.Dropout(p)))
		if err == nil || !strings.Contains(err.Error(), "1: Dropout: p is") || !strings.Contains(err.Error(), "0 ≤ p < 1") {
			t.Errorf("p %v: Layout error %v", p, err)
		}
		tp := ad.NewTape()
		model.Dropout(p).Apply(nil, ad.Var{}, tp.Full(1, 3))
		if err := tp.Err(); err == nil || !strings.Contains(err.Error(), "Dropout: p is") {
			t.Errorf("p %v: Apply error %v", p, err)
		}
	}
	tp := ad.NewTape()
	model.Dropout(0.5).Apply(&model.Ctx{Train: true}, ad.Var{}, tp.Full(1, 3))
	if err := tp.Err(); err == nil || !strings.Contains(err.Error(), "Dropout(0.5)") || !strings.Contains(err.Error(), "Ctx.RNG") {
		t.Errorf("no RNG: error %v", err)
	}
}

func TestDropoutStepAllocatesNothing(t *testing.T) {
	net := model.Chain(model.Dense(6, 8), model.Dropout(0.3), model.Dense(8, 2))
	θ, err := model.Init(net, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	x := flat.Tensor{Shape: []int{4, 6}, Data: make([]float32, 24)}
	for i := range x.Data {
		x.Data[i] = float32(i%5) * 0.3
	}
	c := &model.Ctx{Train: true, RNG: rand.New(rand.NewPCG(5, 5))}
	checkStepAllocs(t, "a training step", net, c, ad.NewTape(), θ, x, 50)
}
