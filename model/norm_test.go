package model_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/proptest"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// torchRef holds the reference values written by testdata/torch_norm.py.
type torchRef map[string]json.RawMessage

var (
	torchOnce sync.Once
	torchData torchRef
	torchErr  error
)

func loadTorch(t *testing.T) torchRef {
	t.Helper()
	torchOnce.Do(func() {
		b, err := os.ReadFile("testdata/torch_norm.json")
		if err != nil {
			torchErr = err
			return
		}
		torchErr = json.Unmarshal(b, &torchData)
	})
	if torchErr != nil {
		t.Fatalf("reading the PyTorch references (regenerate with /usr/bin/python3 model/testdata/torch_norm.py): %v", torchErr)
	}
	return torchData
}

func (r torchRef) raw(t *testing.T, name string) json.RawMessage {
	t.Helper()
	m, ok := r[name]
	if !ok {
		t.Fatalf("testdata/torch_norm.json has no %q", name)
	}
	return m
}

// tensor returns the named tensor, its values rounded to float32.
func (r torchRef) tensor(t *testing.T, name string) flat.Tensor {
	t.Helper()
	var v struct {
		Shape []int
		Data  []float64
	}
	if err := json.Unmarshal(r.raw(t, name), &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	out := flat.Tensor{Shape: v.Shape, Data: make([]float32, len(v.Data))}
	for i, x := range v.Data {
		out.Data[i] = float32(x)
	}
	return out
}

func (r torchRef) scalar(t *testing.T, name string) float64 {
	t.Helper()
	var v float64
	if err := json.Unmarshal(r.raw(t, name), &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func (r torchRef) labels(t *testing.T, name string) []int {
	t.Helper()
	var v struct{ Labels []int }
	if err := json.Unmarshal(r.raw(t, name), &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v.Labels
}

// close32 reports values further than tol·max(1, |want|) from want.
func close32(t *testing.T, what string, got []float32, want flat.Tensor, tol float64) {
	t.Helper()
	if len(got) != len(want.Data) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want.Data))
	}
	bad := 0
	for i, g := range got {
		w := float64(want.Data[i])
		if d := math.Abs(float64(g) - w); !(d <= tol*math.Max(1, math.Abs(w))) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %v, want %v (diff %.3g)", what, i, g, w, d)
			}
		}
	}
}

func concat(ts ...flat.Tensor) []float32 {
	var out []float32
	for _, x := range ts {
		out = append(out, x.Data...)
	}
	return out
}

func TestLayerNormMatchesPyTorch(t *testing.T) {
	ref := loadTorch(t)
	x := ref.tensor(t, "ln_x")
	θ := concat(ref.tensor(t, "ln_weight"), ref.tensor(t, "ln_bias"))
	y := applyLayer(t, model.LayerNorm([]int{3, 4}), nil, θ, x)
	if !slices.Equal(y.Shape, x.Shape) {
		t.Errorf("shape %v, want %v", y.Shape, x.Shape)
	}
	close32(t, "LayerNorm([3, 4])", y.Data, ref.tensor(t, "ln_y"), 1e-5)
	y1 := applyLayer(t, model.LayerNorm([]int{4}, model.NormEps(1e-3), model.NoAffine()), nil, nil, x)
	close32(t, "LayerNorm(4, eps 1e-3, no affine)", y1.Data, ref.tensor(t, "ln1_y"), 1e-5)
}

func TestBatchNormMatchesPyTorch(t *testing.T) {
	ref := loadTorch(t)
	θ := concat(ref.tensor(t, "bn_weight"), ref.tensor(t, "bn_bias"))
	x1, x2 := ref.tensor(t, "bn_x1"), ref.tensor(t, "bn_x2")
	second := func(_, b ad.Var) ad.Var { return b }
	// Alone, and as the second branch of a Parallel (whose output is that
	// branch's), where the state is the BatchNorm's range of a larger
	// buffer.
	tests := []struct {
		name   string
		net    model.Layer
		params []float32
		path   string // of the compared layer's state
	}{
		{"alone", model.BatchNorm(3), θ, ""},
		{"in a Parallel", model.Parallel(second, model.BatchNorm(3, model.NoAffine(), model.BNMomentum(0)), model.BatchNorm(3)), θ, "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state, err := model.InitState(tt.net)
			if err != nil {
				t.Fatal(err)
			}
			st := state
			if tt.path != "" {
				slay, err := model.StateLayout(tt.net)
				if err != nil {
					t.Fatal(err)
				}
				want := []string{"0.running_mean", "0.running_var", "1.running_mean", "1.running_var"}
				if d := cmp.Diff(want, paths(t, slay)); d != "" {
					t.Fatalf("state paths (-want +got):\n%s", d)
				}
				lo, hi, err := slay.Range(tt.path)
				if err != nil {
					t.Fatal(err)
				}
				st = state[lo:hi]
			}
			var y1, y2 flat.Tensor
			c := &model.Ctx{Train: true, State: state}
			y1 = applyLayer(t, tt.net, c, tt.params, x1)
			y2 = applyLayer(t, tt.net, c, tt.params, x2)
			close32(t, "train step 1", y1.Data, ref.tensor(t, "bn_y1"), 1e-5)
			close32(t, "train step 2", y2.Data, ref.tensor(t, "bn_y2"), 1e-5)
			close32(t, "running_mean", st[:3], ref.tensor(t, "bn_running_mean"), 1e-5)
			close32(t, "running_var", st[3:], ref.tensor(t, "bn_running_var"), 1e-5)
			if tt.path != "" {
				if want := []float32{0, 0, 0, 1, 1, 1}; !slices.Equal(state[:6], want) {
					t.Errorf("the first branch (momentum 0) changed its state to %v", state[:6])
				}
			}
			before := slices.Clone(st)
			close32(t, "eval", applyLayer(t, tt.net, &model.Ctx{State: state}, tt.params, x1).Data, ref.tensor(t, "bn_eval"), 1e-5)
			if !slices.Equal(before, st) {
				t.Error("test mode changed the running statistics")
			}
		})
	}
}

func TestBatchNorm1dMatchesPyTorch(t *testing.T) {
	ref := loadTorch(t)
	bn := model.BatchNorm(3, model.NoAffine(), model.BNMomentum(0.3), model.NormEps(1e-3))
	x := ref.tensor(t, "bn1_x")
	st, err := model.InitState(bn)
	if err != nil {
		t.Fatal(err)
	}
	close32(t, "train", applyLayer(t, bn, &model.Ctx{Train: true, State: st}, nil, x).Data, ref.tensor(t, "bn1_y"), 1e-5)
	close32(t, "running_mean", st[:3], ref.tensor(t, "bn1_running_mean"), 1e-5)
	close32(t, "running_var", st[3:], ref.tensor(t, "bn1_running_var"), 1e-5)
	close32(t, "eval", applyLayer(t, bn, &model.Ctx{State: st}, nil, x).Data, ref.tensor(t, "bn1_eval"), 1e-5)
}

// TestLayerNormStatistics: without affine parameters each normalised slice
// has mean 0 and variance var/(var + eps), for any input (a float64 check
// of the output).
func TestLayerNormStatistics(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(rt, "n")
		k := rapid.IntRange(2, 6).Draw(rt, "k")
		x := proptest.Floats(n*2*k).Draw(rt, "x")
		tp := ad.NewTape()
		y := model.LayerNorm([]int{2, k}, model.NoAffine()).Apply(nil, ad.Var{}, tp.Const(flat.Tensor{Shape: []int{n, 2, k}, Data: x}))
		if err := tp.Err(); err != nil {
			rt.Fatal(err)
		}
		m := 2 * k
		for b := range n {
			xs, ys := x[b*m:(b+1)*m], y.Data()[b*m:(b+1)*m]
			var mx, vx, my, vy float64
			for i := range m {
				mx += float64(xs[i]) / float64(m)
				my += float64(ys[i]) / float64(m)
			}
			for i := range m {
				vx += (float64(xs[i]) - mx) * (float64(xs[i]) - mx) / float64(m)
				vy += (float64(ys[i]) - my) * (float64(ys[i]) - my) / float64(m)
			}
			if math.Abs(my) > 1e-5 || math.Abs(vy-vx/(vx+1e-5)) > 1e-4 {
				rt.Fatalf("slice %d: mean %v, variance %v; want 0 and %v", b, my, vy, vx/(vx+1e-5))
			}
		}
	})
}

// normObjective returns a scalar function of [params ‖ x] through l, a
// weighted sum of y + y² so that first and second derivatives both
// matter. ctx makes the Ctx of each call. The weights are w plus a fixed
// pattern that is not constant along any axis: a normalisation's output
// has a fixed mean and nearly fixed mean square, so with equal weights
// (rapid shrinks w to all ones) the objective is constant up to rounding
// and the derivative checks compare rounding noise (a draw failed that
// way: H·u of 2.6e-4 from both modes, 0.5 % apart).
func normObjective(l model.Layer, nParams int, xShape []int, w []float32, ctx func() *model.Ctx) func(ad.Var) ad.Var {
	w = slices.Clone(w)
	for i := range w {
		w[i] += 0.3 * float32(i%7) / 7
	}
	return func(p ad.Var) ad.Var {
		var pv ad.Var
		if nParams > 0 {
			pv = ad.Slice(p, 0, nParams)
		}
		x := ad.View(p, nParams, xShape...)
		y := l.Apply(ctx(), pv, x)
		wv := p.Tape().Const(flat.Tensor{Shape: xShape, Data: w})
		return ad.Sum(ad.Mul(wv, ad.Add(y, ad.Square(y))))
	}
}

func TestNormDerivatives(t *testing.T) {
	fresh := func(l model.Layer, train bool) func() *model.Ctx {
		return func() *model.Ctx {
			// A fresh state per call: the running-statistics update is a
			// side effect that must not differ between the evaluations
			// the checkers make.
			s, err := model.InitState(l)
			if err != nil {
				panic(err)
			}
			for i := range s {
				s[i] += 0.25 // not the initial statistics
			}
			return &model.Ctx{Train: train, State: s}
		}
	}
	tests := []struct {
		name   string
		layer  model.Layer
		xShape []int
		train  bool
	}{
		{"LayerNorm 2 axes", model.LayerNorm([]int{3, 2}), []int{2, 3, 2}, false},
		{"LayerNorm last axis no affine", model.LayerNorm([]int{4}, model.NoAffine()), []int{3, 4}, false},
		{"BatchNorm2d train", model.BatchNorm(2), []int{3, 2, 2, 2}, true},
		{"BatchNorm1d train no affine", model.BatchNorm(3, model.NoAffine()), []int{4, 3}, true},
		{"BatchNorm1d spatial train", model.BatchNorm(2, model.BNMomentum(0.5)), []int{2, 2, 3}, true},
		{"BatchNorm2d test", model.BatchNorm(2), []int{3, 2, 2, 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lay := mustLayout(t, tt.layer)
			np := lay.Len()
			nx := 1
			for _, d := range tt.xShape {
				nx *= d
			}
			rapid.Check(t, func(rt *rapid.T) {
				θ := proptest.Floats(np).Draw(rt, "params")
				x := proptest.NoTies(nx).Draw(rt, "x")
				w := proptest.Floats(nx).Draw(rt, "w")
				f := normObjective(tt.layer, np, tt.xShape, w, fresh(tt.layer, tt.train))
				in := append(slices.Clone(θ), x...)
				proptest.CheckGrad(rt, f, in)
				proptest.CheckHVP(rt, f, in)
			})
		})
	}
}

func TestNormConfigurationErrors(t *testing.T) {
	tests := []layerCase{
		{"LayerNorm no shape", model.LayerNorm(nil), []string{"LayerNorm", "0 axes"}},
		{"LayerNorm zero dim", model.LayerNorm([]int{3, 0}), []string{"LayerNorm", "[3 0]", "axis 1"}},
		{"LayerNorm eps", model.LayerNorm([]int{3}, model.NormEps(-1)), []string{"LayerNorm", "NormEps is -1"}},
		{"BatchNorm channels", model.BatchNorm(0), []string{"BatchNorm", "0 channels"}},
		{"BatchNorm momentum", model.BatchNorm(2, model.BNMomentum(1.5)), []string{"BatchNorm", "BNMomentum is 1.5"}},
		{"BatchNorm eps", model.BatchNorm(2, model.NormEps(float32(math.NaN()))), []string{"BatchNorm", "NormEps is NaN"}},
		{"in a chain", model.Chain(model.Relu(), model.BatchNorm(-2)), []string{"1: BatchNorm", "-2 channels"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLayoutError(t, tt.net, tt.want)
			if _, err := model.StateLayout(tt.net); err == nil {
				t.Error("StateLayout: no error")
			}
			// Applying the misconfigured layer is a tape error too.
			tp := ad.NewTape()
			tt.net.Apply(&model.Ctx{State: make([]float32, 4)}, tp.Param(make([]float32, 4)), tp.Full(1, 2, 2))
			if tp.Err() == nil {
				t.Error("Apply: no tape error")
			}
		})
	}
}

func TestNormApplyErrors(t *testing.T) {
	st := []float32{0, 0, 1, 1}
	tests := []struct {
		name  string
		l     model.Layer
		c     *model.Ctx
		np    int
		shape []int
		want  []string
	}{
		{"LayerNorm shape", model.LayerNorm([]int{3, 4}), nil, 24, []int{2, 4, 3}, []string{"LayerNorm([3 4])", "[2 4 3]", "(…, 3, 4)"}},
		{"LayerNorm rank", model.LayerNorm([]int{2, 3, 4}), nil, 48, []int{3, 4}, []string{"[3 4]", "(…, 2, 3, 4)"}},
		{"LayerNorm params", model.LayerNorm([]int{4}), nil, 7, []int{2, 4}, []string{"LayerNorm", "[7]", "(8)"}},
		{"BatchNorm channels", model.BatchNorm(2), &model.Ctx{State: st}, 4, []int{3, 4}, []string{"BatchNorm(2)", "[3 4]", "(N, 2)"}},
		{"BatchNorm rank", model.BatchNorm(2), &model.Ctx{State: st}, 4, []int{2}, []string{"BatchNorm(2)", "[2]"}},
		{"BatchNorm nil ctx", model.BatchNorm(2), nil, 4, []int{3, 2}, []string{"BatchNorm(2)", "InitState", "Ctx"}},
		{"BatchNorm no state", model.BatchNorm(2), &model.Ctx{Train: true}, 4, []int{3, 2}, []string{"BatchNorm(2)", "no state", "InitState"}},
		{"BatchNorm short state", model.BatchNorm(2), &model.Ctx{State: st[:3]}, 4, []int{3, 2}, []string{"BatchNorm(2)", "3 floats", "want 4"}},
		{"BatchNorm one value", model.BatchNorm(2), &model.Ctx{Train: true, State: st}, 4, []int{1, 2, 1}, []string{"BatchNorm(2)", "1 value per channel"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before []float32
			if tt.c != nil {
				before = slices.Clone(tt.c.State)
			}
			tp := ad.NewTape()
			y := tt.l.Apply(tt.c, tp.Param(make([]float32, tt.np)), tp.Full(1, tt.shape...))
			err := tp.Err()
			if err == nil {
				t.Fatalf("no error; output %v", y)
			}
			checkMentions(t, err, tt.want)
			if tt.c != nil && !slices.Equal(before, tt.c.State) {
				t.Error("a failed Apply changed the state")
			}
		})
	}
}

// TestBatchNormAfterFailureKeepsState: a BatchNorm applied to a failed
// Var neither records a new error nor updates the running statistics.
func TestBatchNormAfterFailureKeepsState(t *testing.T) {
	st := []float32{0.5, 0.5, 2, 2}
	tp := ad.NewTape()
	x := ad.Reshape(tp.Full(1, 6), 4, 4) // first error
	model.BatchNorm(2).Apply(&model.Ctx{Train: true, State: st}, tp.Param([]float32{1, 1, 0, 0}), x)
	if err := tp.Err(); err == nil || !strings.Contains(err.Error(), "Reshape") {
		t.Errorf("error %v, want the Reshape one", err)
	}
	if !slices.Equal(st, []float32{0.5, 0.5, 2, 2}) {
		t.Errorf("state %v changed", st)
	}
}

// TestNormInit: weight ones, bias zeros; running mean zeros, variance ones.
func TestNormInit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	θ, err := model.Init(model.Chain(model.LayerNorm([]int{2}), model.BatchNorm(3)), rng)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{1, 1, 0, 0, 1, 1, 1, 0, 0, 0}; !slices.Equal(θ, want) {
		t.Errorf("params %v, want %v", θ, want)
	}
	s, err := model.InitState(model.Chain(model.LayerNorm([]int{2}), model.BatchNorm(3)))
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{0, 0, 0, 1, 1, 1}; !slices.Equal(s, want) {
		t.Errorf("state %v, want %v", s, want)
	}
	lay, err := model.Layout(model.BatchNorm(3, model.NoAffine()))
	if err != nil || lay.Len() != 0 {
		t.Errorf("NoAffine BatchNorm declares %v parameters (err %v), want none", lay, err)
	}
}

// TestNormStepAllocatesNothing pins a training step (forward in training
// mode with the state update, gradient) through LayerNorm and BatchNorm at
// zero allocations, and a test-mode step too.
func TestNormStepAllocatesNothing(t *testing.T) {
	net := model.Chain(model.LayerNorm([]int{3, 2}), model.BatchNorm(4), model.Relu(), model.BatchNorm(4, model.NoAffine()))
	θ, err := model.Init(net, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	st, err := model.InitState(net)
	if err != nil {
		t.Fatal(err)
	}
	x := flat.Tensor{Shape: []int{2, 4, 3, 2}, Data: make([]float32, 48)}
	for i := range x.Data {
		x.Data[i] = float32(i%11) * 0.2
	}
	tp := ad.NewTape()
	for _, train := range []bool{true, false} {
		c := &model.Ctx{Train: train, State: st}
		checkStepAllocs(t, fmt.Sprintf("train %v: a step", train), net, c, tp, θ, x, 20)
	}
}
