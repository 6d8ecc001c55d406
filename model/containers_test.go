package model_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/model"
	"github.com/google/go-cmp/cmp"
)

func TestLayoutPaths(t *testing.T) {
	tests := []layerCase{
		{"chain", model.Chain(model.Dense(2, 3), model.Tanh(), model.Dense(3, 1, model.NoBias())),
			[]string{"0.weight", "0.bias", "2.weight"}},
		{"skip adds no group", model.Chain(model.Skip(model.Chain(model.Dense(2, 2), model.Dense(2, 2)), ad.Add)),
			[]string{"0.0.weight", "0.0.bias", "0.1.weight", "0.1.bias"}},
		{"parallel", model.Parallel(ad.Add, model.Dense(2, 2), model.Relu(), model.Dense(2, 2, model.NoBias())),
			[]string{"0.weight", "0.bias", "2.weight"}},
		{"conv", model.Chain(model.Relu(), model.Conv([]int{3}, 4, 6, model.Groups(2))),
			[]string{"1.weight", "1.bias"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lay := mustLayout(t, tt.net)
			if d := cmp.Diff(tt.want, paths(t, lay)); d != "" {
				t.Errorf("paths (-want +got):\n%s", d)
			}
		})
	}
}

func TestConfigurationErrorsNameTheLayer(t *testing.T) {
	tests := []layerCase{
		{"groups", model.Chain(model.Dense(2, 3), model.Chain(model.Conv([]int{3}, 3, 4, model.Groups(2)))),
			[]string{"model: 1.0: Conv", "groups 2"}},
		{"dense size", model.Dense(0, 3), []string{"Dense", "in 0"}},
		{"kernel rank", model.Conv([]int{1, 1, 1, 1}, 1, 1), []string{"Conv", "4 spatial axes"}},
		{"stride values", model.Conv([]int{3, 3}, 1, 1, model.Stride(1, 2, 3)), []string{"Stride", "want 1 or 2"}},
		{"negative pad", model.Conv([]int{3}, 1, 1, model.Pad(-1)), []string{"Pad", "want ≥ 0"}},
		{"nil combine", model.Skip(model.Dense(1, 1), nil), []string{"Skip", "nil"}},
		{"no branches", model.Parallel(ad.Add), []string{"Parallel", "no layers, want at least 1"}},
		{"nil fold", model.Parallel(nil, model.Dense(1, 1), model.Dense(1, 1)), []string{"Parallel", "combine is nil, want one to fold the outputs of its 2 layers"}},
		{"nil func", model.Func("mine", nil), []string{"mine"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLayoutError(t, tt.net, tt.want)
			if _, err := model.Init(tt.net, rand.New(rand.NewPCG(1, 1))); err == nil {
				t.Error("Init accepted the bad configuration")
			}
		})
	}
}

// TestConfigurationErrorsNameTheLayoutPath checks that a bad layer deep in
// containers is named by its layout path ("1.1.1"), the same in Layout and
// on the tape of Apply, and with the prefix once.
func TestConfigurationErrorsNameTheLayoutPath(t *testing.T) {
	net := model.Chain(model.Dense(2, 2), model.Chain(model.Relu(), model.Skip(model.Chain(model.Dense(2, 2), model.Dense(0, 2)), ad.Add)))
	const want = "model: 1.1.1: Dense: in 0, out 2; want both > 0"
	if _, err := model.Layout(net); err == nil || err.Error() != want {
		t.Errorf("Layout: error %v, want %q", err, want)
	}
	tape := ad.NewTape()
	x := tape.Const(flat.Tensor{Shape: []int{1, 2}, Data: make([]float32, 2)})
	y := net.Apply(nil, tape.Param(make([]float32, 12)), x)
	_, err := tape.Grad(ad.Sum(y))
	if err == nil || !strings.Contains(err.Error(), "Chain: 1.1.1: Dense: in 0") || strings.Count(err.Error(), "model:") != 1 {
		t.Errorf("Apply: tape error %v, want one naming \"Chain: 1.1.1: Dense: in 0\" with the prefix once", err)
	}
}

// TestApplyErrorsNameTheLayoutPath checks that an error a layer records
// while it is applied inside containers names the layer by its layout
// path, with the prefix once, through Chain (also its fused Conv+Relu),
// Parallel and Skip, and that an error recorded before is left as it was.
func TestApplyErrorsNameTheLayoutPath(t *testing.T) {
	tests := []struct {
		name  string
		net   model.Layer
		shape []int
		want  string
	}{
		{"chain in chain", model.Chain(model.Dense(2, 3), model.Chain(model.Dense(4, 5), model.Dense(5, 1))), []int{1, 2},
			"model: 1.0: Dense(4, 5): input shape [1 3], want (…, 4)"},
		{"parallel", model.Chain(model.Dense(2, 3), model.Parallel(ad.Add, model.Dense(3, 2), model.Dense(4, 2))), []int{1, 2},
			"model: 1.1: Dense(4, 2): input shape [1 3], want (…, 4)"},
		{"skip adds no path", model.Chain(model.Relu(), model.Skip(model.Dense(3, 3), ad.Add)), []int{1, 2},
			"model: 1: Dense(3, 3): input shape [1 2], want (…, 3)"},
		{"fused conv and relu", model.Chain(model.Relu(), model.Conv([]int{3}, 2, 4), model.Relu()), []int{1, 3, 5},
			"model: 1: ad: ConvBiasRelu: filter shape [4 2 3]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lay := mustLayout(t, tt.net)
			tape := ad.NewTape()
			x := tape.Const(flat.New(tt.shape...))
			tt.net.Apply(nil, tape.Param(make([]float32, lay.Len())), x)
			err := tape.Err()
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Count(err.Error(), "model:") != 1 {
				t.Errorf("error %v, want one starting %q with the prefix once", err, tt.want)
			}
			// ode formats an error with an Unprefixed method without its
			// prefix; a model error must keep "model: " there.
			if _, ok := err.(interface{ Unprefixed() string }); ok {
				t.Errorf("error %T has an Unprefixed method, want none", err)
			}
		})
	}
	t.Run("earlier error kept", func(t *testing.T) {
		tape := ad.NewTape()
		x := tape.Fail(errors.New("before"))
		model.Chain(model.Dense(2, 2)).Apply(nil, tape.Param(make([]float32, 6)), x)
		if err := tape.Err(); err == nil || err.Error() != "before" {
			t.Errorf("error %v, want the earlier one unchanged", err)
		}
	})
}

func TestApplyErrorsAreOnTheTape(t *testing.T) {
	net := model.Chain(model.Dense(3, 2), model.Tanh())
	tests := []struct {
		name  string
		θ     int
		shape []int
		want  string
	}{
		{"params", 7, []int{1, 3}, "want (8)"},
		{"input", 8, []int{1, 4}, "input shape [1 4], want (…, 3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tape := ad.NewTape()
			n := 1
			for _, d := range tt.shape {
				n *= d
			}
			x := tape.Const(flat.Tensor{Shape: tt.shape, Data: make([]float32, n)})
			y := net.Apply(nil, tape.Param(make([]float32, tt.θ)), x)
			_, err := tape.Grad(ad.Sum(y))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func randn(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

func TestDenseMatchesLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	d := model.Dense(3, 2, model.Activation(ad.Tanh))
	θ, err := model.Init(d, rng)
	if err != nil {
		t.Fatal(err)
	}
	for _, shape := range [][]int{{3}, {4, 3}, {2, 5, 3}} {
		n := 1
		for _, s := range shape {
			n *= s
		}
		x := randn(rng, n)
		y := applyLayer(t, d, nil, θ, flat.Tensor{Shape: shape, Data: x})
		wantShape := append(append([]int(nil), shape[:len(shape)-1]...), 2)
		if d := cmp.Diff(wantShape, y.Shape); d != "" {
			t.Fatalf("shape (-want +got):\n%s", d)
		}
		for r := 0; r < n/3; r++ {
			for o := 0; o < 2; o++ {
				s := float64(θ[6+o])
				for i := 0; i < 3; i++ {
					s += float64(θ[o*3+i]) * float64(x[r*3+i])
				}
				if got, want := float64(y.Data[r*2+o]), math.Tanh(s); math.Abs(got-want) > 1e-6 {
					t.Errorf("shape %v row %d out %d: %g, want %g", shape, r, o, got, want)
				}
			}
		}
	}
}

func TestSkipAndParallelCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := model.Dense(2, 2), model.Dense(2, 2, model.NoBias())
	par := model.Parallel(ad.Mul, a, model.Tanh(), b)
	θ, err := model.Init(par, rng)
	if err != nil {
		t.Fatal(err)
	}
	x := flat.Tensor{Shape: []int{3, 2}, Data: randn(rng, 6)}
	ya, yb := applyLayer(t, a, nil, θ[:6], x), applyLayer(t, b, nil, θ[6:], x)
	got := applyLayer(t, par, nil, θ, x)
	for i, v := range got.Data {
		want := ya.Data[i] * float32(math.Tanh(float64(x.Data[i]))) * yb.Data[i]
		if math.Abs(float64(v-want)) > 1e-6 {
			t.Errorf("Parallel[%d] = %g, want %g", i, v, want)
		}
	}
	skip := model.Skip(a, ad.Sub)
	got = applyLayer(t, skip, nil, θ[:6], x)
	for i, v := range got.Data {
		if want := ya.Data[i] - x.Data[i]; math.Abs(float64(v-want)) > 1e-6 {
			t.Errorf("Skip[%d] = %g, want %g", i, v, want)
		}
	}
}

func TestDefaultInitIsPyTorchs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	tests := []struct {
		name     string
		layer    model.Layer
		fanIn    int
		nw, nAll int
	}{
		{"dense", model.Dense(50, 40), 50, 2000, 2000 + 40},
		{"conv", model.Conv([]int{3, 3}, 8, 40, model.Groups(2)), 4 * 9, 40 * 4 * 9, 40*4*9 + 40},
		// ConvTranspose's fanIn = out/groups·prod(kernel): 20·9, not
		// in/groups·9 = 36.
		{"convtranspose 2d groups", model.ConvTranspose([]int{3, 3}, 8, 40, model.Groups(2)), 20 * 9, 8 * 20 * 9, 8*20*9 + 40},
		{"convtranspose 1d", model.ConvTranspose([]int{5}, 30, 7), 7 * 5, 30 * 7 * 5, 30*7*5 + 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			θ, err := model.Init(tt.layer, rng)
			if err != nil {
				t.Fatal(err)
			}
			if len(θ) != tt.nAll {
				t.Fatalf("%d parameters, want %d", len(θ), tt.nAll)
			}
			bound := 1 / math.Sqrt(float64(tt.fanIn))
			sum2 := checkBound(t, θ, bound, tt.nw)
			if slices.Min(θ[:tt.nw]) == slices.Max(θ[:tt.nw]) || slices.Min(θ[tt.nw:]) == slices.Max(θ[tt.nw:]) {
				t.Fatal("weights or biases all equal")
			}
			// Uniform on ±b has variance b²/3; with this many draws the
			// sample variance is within 10 %.
			if v, want := sum2/float64(tt.nw), bound*bound/3; math.Abs(v-want) > 0.1*want {
				t.Errorf("weight variance %g, want ≈ %g (uniform on ±1/√%d)", v, want, tt.fanIn)
			}
		})
	}
	θ1, _ := model.Init(model.Dense(4, 4), rand.New(rand.NewPCG(1, 1)))
	θ2, _ := model.Init(model.Dense(4, 4), rand.New(rand.NewPCG(1, 1)))
	if d := cmp.Diff(θ1, θ2); d != "" {
		t.Errorf("Init is not deterministic for a seed:\n%s", d)
	}
	g, _ := model.Init(model.Dense(30, 20, model.WeightInit(model.GlorotUniform(1)), model.BiasInit(model.ConstantInit(0.5))), rng)
	b := math.Sqrt(6.0 / 50)
	for i, v := range g {
		if i < 600 && math.Abs(float64(v)) > b || i >= 600 && v != 0.5 {
			t.Fatalf("Glorot/Constant init: θ[%d] = %g", i, v)
		}
	}
}

// marker is a stateful layer that adds its state to x and records the
// number of times it ran in its first state value.
type marker struct{ n int }

func (m marker) Declare(*layout.Builder) error { return nil }
func (m marker) Init([]float32, *rand.Rand)    {}
func (m marker) DeclareState(b *layout.Builder) error {
	b.Add("s", m.n)
	return nil
}
func (m marker) InitState(s []float32) {
	for i := range s {
		s[i] = float32(m.n)
	}
}
func (m marker) Apply(c *model.Ctx, _, x ad.Var) ad.Var {
	s := c.LayerState()
	if len(s) != m.n {
		return x.Tape().Fail(errorString("marker saw a state range of the wrong length"))
	}
	s[0] += 100
	return x
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestStateRangesReachEachLayer(t *testing.T) {
	net := model.Chain(
		model.Dense(1, 1),
		marker{2},
		model.Skip(marker{3}, ad.Add),
		model.Parallel(ad.Add, marker{1}, model.Tanh(), marker{2}),
	)
	lay, err := model.StateLayout(net)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"1.s", "2.s", "3.0.s", "3.2.s"}, paths(t, lay)); d != "" {
		t.Fatalf("state paths (-want +got):\n%s", d)
	}
	s, err := model.InitState(net)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]float32{2, 2, 3, 3, 3, 1, 2, 2}, s); d != "" {
		t.Fatalf("InitState (-want +got):\n%s", d)
	}
	tape := ad.NewTape()
	θ := []float32{1, 0}
	c := &model.Ctx{State: s}
	net.Apply(c, tape.Param(θ), tape.Const(flat.Tensor{Shape: []int{1, 1}, Data: []float32{1}}))
	if err := tape.Err(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]float32{102, 2, 103, 3, 3, 101, 102, 2}, s); d != "" {
		t.Errorf("state after Apply (-want +got):\n%s", d)
	}
	tape.Reset()
	net.Apply(&model.Ctx{State: s[:4]}, tape.Param(θ), tape.Const(flat.Tensor{Shape: []int{1, 1}, Data: []float32{1}}))
	if err := tape.Err(); err == nil || !strings.Contains(err.Error(), "state buffer is too short") {
		t.Errorf("short state: error %v", err)
	}
}

// TestChainFusesConvRelu checks that Chain applies a Conv followed by
// Relu() as one op (fewer tape values) with the same values, gradient with
// respect to parameters and input, and Hessian-vector product as the same
// layers unfused (a Relu written as Func, which Chain does not fuse), on
// the direct path and on one the blocked kernel takes (8 output channels,
// 12×12 outputs).
func TestChainFusesConvRelu(t *testing.T) {
	for _, c := range []struct {
		name       string
		in, out, s int
	}{{"direct", 2, 3, 5}, {"blocked", 3, 8, 14}} {
		t.Run(c.name, func(t *testing.T) {
			fused := model.Chain(model.Conv([]int{3, 3}, c.in, c.out), model.Relu(),
				model.Conv([]int{3, 3}, c.out, c.out, model.Pad(1)), model.Relu(), model.GlobalMeanPool(), model.Flatten())
			plain := model.Chain(model.Conv([]int{3, 3}, c.in, c.out), model.Func("relu", ad.Relu),
				model.Conv([]int{3, 3}, c.out, c.out, model.Pad(1)), model.Func("relu", ad.Relu), model.GlobalMeanPool(), model.Flatten())
			rng := rand.New(rand.NewPCG(7, 8))
			θ, err := model.Init(fused, rng)
			if err != nil {
				t.Fatal(err)
			}
			xs := []int{2, c.in, c.s, c.s}
			x := randn(rng, 2*c.in*c.s*c.s)
			all := append(flat.Clone(θ), x...)
			loss := func(net model.Layer) func(p ad.Var) ad.Var {
				return func(p ad.Var) ad.Var {
					y := net.Apply(nil, ad.Slice(p, 0, len(θ)), ad.View(p, len(θ), xs...))
					return ad.Sum(ad.Tanh(y))
				}
			}
			var lens [2]int
			var grads [2][]float32
			for k, net := range []model.Layer{fused, plain} {
				tp := ad.NewTape()
				g, err := tp.Grad(loss(net)(tp.Param(all)))
				if err != nil {
					t.Fatal(err)
				}
				tp.Reset()
				loss(net)(tp.Param(all))
				lens[k], grads[k] = tp.Len(), flat.Clone(g)
			}
			if lens[0] >= lens[1] {
				t.Errorf("fused chain records %d values, unfused %d: want fewer", lens[0], lens[1])
			}
			if d := cmp.Diff(grads[1], grads[0]); d != "" {
				t.Errorf("gradient differs from the unfused chain's (-unfused +fused):\n%s", d)
			}
			dir := randn(rng, len(all))
			h0, err0 := ad.HVP(loss(fused), all, dir)
			h1, err1 := ad.HVPReverse(loss(plain), all, dir)
			if err0 != nil || err1 != nil {
				t.Fatal(err0, err1)
			}
			for i := range h0 {
				if math.Abs(float64(h0[i]-h1[i])) > 1e-5*(1+math.Abs(float64(h1[i]))) {
					t.Fatalf("HVP[%d] = %v, unfused reverse-over-reverse %v", i, h0[i], h1[i])
				}
			}
		})
	}
}

// A Var from before Tape.Reset is refused by every layer that checks its
// input's shape itself, with the same message.
func TestLayersRefuseDeadInput(t *testing.T) {
	tests := []struct {
		name  string
		layer model.Layer
		shape []int
	}{
		{"LayerNorm", model.LayerNorm([]int{4}), []int{2, 4}},
		{"BatchNorm", model.BatchNorm(2), []int{2, 2, 3}},
		{"MaxPool", model.MaxPool([]int{2}), []int{1, 2, 4}},
		{"AdaptiveMeanPool", model.AdaptiveMeanPool(1), []int{1, 2, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lay := mustLayout(t, tt.layer)
			tape := ad.NewTape()
			x := tape.Const(flat.New(tt.shape...))
			tape.Reset()
			tt.layer.Apply(nil, tape.Param(make([]float32, lay.Len())), x)
			checkMentions(t, tape.Err(), []string{"model: " + tt.name, "not a live value"})
		})
	}
}
