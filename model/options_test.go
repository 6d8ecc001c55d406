package model_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/typecheck"
	"github.com/flatkit/flatkit/model"
)

// optionUse is one option, as a value and as Go source, with the layers it
// applies to.
type optionUse struct {
	src string
	opt any
	to  []string
}

var (
	everyLayer   = []string{"Conv", "ConvTranspose", "Dense", "Embedding", "LayerNorm", "BatchNorm", "MaxPool", "MeanPool"}
	windowLayers = []string{"Conv", "ConvTranspose", "MaxPool", "MeanPool"}
	convLayers   = []string{"Conv", "ConvTranspose"}
	affineLayers = []string{"Conv", "ConvTranspose", "Dense"}
	weightLayers = []string{"Conv", "ConvTranspose", "Dense", "Embedding"}
	normLayers   = []string{"LayerNorm", "BatchNorm"}
)

// optionUses are the options with values that are valid on every layer
// they apply to, as layerCalls builds them.
func optionUses() []optionUse {
	return []optionUse{
		{"model.Stride(2)", model.Stride(2), windowLayers},
		{"model.Pad(1)", model.Pad(1), windowLayers},
		{"model.PadSides([]int{1}, []int{0})", model.PadSides([]int{1}, []int{0}), windowLayers},
		{"model.Dilation(2)", model.Dilation(2), convLayers},
		{"model.Groups(2)", model.Groups(2), convLayers},
		{"model.OutputPad(0)", model.OutputPad(0), []string{"ConvTranspose"}},
		{"model.NoBias()", model.NoBias(), affineLayers},
		{"model.BiasInit(model.ConstantInit(0.5))", model.BiasInit(model.ConstantInit(0.5)), affineLayers},
		{"model.Activation(ad.Tanh)", model.Activation(ad.Tanh), affineLayers},
		{"model.WeightInit(model.ConstantInit(0.5))", model.WeightInit(model.ConstantInit(0.5)), weightLayers},
		{"model.NormEps(1e-3)", model.NormEps(1e-3), normLayers},
		{"model.NoAffine()", model.NoAffine(), normLayers},
		{"model.BNMomentum(0.2)", model.BNMomentum(0.2), []string{"BatchNorm"}},
	}
}

// layerSources are the layer constructors as Go source, the option in
// place of %s.
var layerSources = map[string]string{
	"Conv":          "model.Conv([]int{3}, 2, 4, %s)",
	"ConvTranspose": "model.ConvTranspose([]int{3}, 2, 4, %s)",
	"Dense":         "model.Dense(2, 4, %s)",
	"Embedding":     "model.Embedding(5, 3, %s)",
	"LayerNorm":     "model.LayerNorm([]int{4}, %s)",
	"BatchNorm":     "model.BatchNorm(2, %s)",
	"MaxPool":       "model.MaxPool([]int{2}, %s)",
	"MeanPool":      "model.MeanPool([]int{2}, %s)",
}

// layerCall builds a layer with one option and gives an input it accepts.
type layerCall struct {
	build func(o any) model.Layer
	x     flat.Tensor
}

// as is o as the option interface O, or nil when o is nil.
func as[O any](o any) O {
	if o == nil {
		var none O
		return none
	}
	return o.(O)
}

// layerCalls are layerSources as values: the same constructors, with
// inputs of the shapes they take.
func layerCalls() map[string]layerCall {
	signal := flat.Tensor{Shape: []int{1, 2, 6}, Data: []float32{1, 2, 3, 4, 5, 6, 6, 5, 4, 3, 2, 1}}
	return map[string]layerCall{
		"Conv": {func(o any) model.Layer { return model.Conv([]int{3}, 2, 4, as[model.ConvOption](o)) }, signal},
		"ConvTranspose": {func(o any) model.Layer {
			return model.ConvTranspose([]int{3}, 2, 4, as[model.ConvTransposeOption](o))
		}, signal},
		"Dense":     {func(o any) model.Layer { return model.Dense(2, 4, as[model.DenseOption](o)) }, flat.Tensor{Shape: []int{3, 2}, Data: []float32{1, 2, 3, 4, 5, 6}}},
		"Embedding": {func(o any) model.Layer { return model.Embedding(5, 3, as[model.EmbeddingOption](o)) }, flat.Tensor{Shape: []int{2}, Data: []float32{0, 4}}},
		"LayerNorm": {func(o any) model.Layer { return model.LayerNorm([]int{4}, as[model.LayerNormOption](o)) }, flat.Tensor{Shape: []int{2, 4}, Data: []float32{1, 2, 3, 5, 0, 1, 0, 2}}},
		"BatchNorm": {func(o any) model.Layer { return model.BatchNorm(2, as[model.BatchNormOption](o)) }, flat.Tensor{Shape: []int{3, 2}, Data: []float32{1, 2, 3, 5, 0, 1}}},
		"MaxPool":   {func(o any) model.Layer { return model.MaxPool([]int{2}, as[model.PoolOption](o)) }, signal},
		"MeanPool":  {func(o any) model.Layer { return model.MeanPool([]int{2}, as[model.PoolOption](o)) }, signal},
	}
}

// Every layer accepts the options that apply to it, and is laid out,
// initialised and applied in training mode with them. (The options' types
// keep the others out; see the test below.)
func TestOptionsThatApply(t *testing.T) {
	calls := layerCalls()
	for _, u := range optionUses() {
		for _, name := range u.to {
			if err := runLayer(calls[name].build(u.opt), calls[name].x); err != nil {
				t.Errorf("%s given to %s: %v, want no error", u.src, name, err)
			}
		}
	}
}

// A nil option is skipped: the layer is the one without it.
func TestNilOptionIsSkipped(t *testing.T) {
	for name, c := range layerCalls() {
		if err := runLayer(c.build(nil), c.x); err != nil {
			t.Errorf("%s with a nil option: %v, want no error", name, err)
		}
	}
	var none model.WindowOption // a typed nil, as a conditional option is
	want := mustLayout(t, model.Conv([]int{3}, 2, 4))
	if got := mustLayout(t, model.Conv([]int{3}, 2, 4, none, model.ConvOption(nil))); got.Len() != want.Len() {
		t.Errorf("Conv with nil options: %d parameters, want %d", got.Len(), want.Len())
	}
}

// runLayer lays l out, initialises its parameters and state and applies it
// to x in training mode. It returns the first error.
func runLayer(l model.Layer, x flat.Tensor) error {
	θ, err := model.Init(l, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		return err
	}
	state, err := model.InitState(l)
	if err != nil {
		return err
	}
	tp := ad.NewTape()
	c := &model.Ctx{Train: true, State: state}
	y := l.Apply(c, tp.Param(θ), tp.Const(x))
	if _, err := tp.Grad(ad.Sum(y)); err != nil {
		return err
	}
	return tp.Err()
}

// An option that does not apply to a layer does not compile: each
// constructor with each option is type-checked against model's export
// data.
func TestOptionsThatDoNotApplyDoNotCompile(t *testing.T) {
	imp := typecheck.Importer(t, "github.com/flatkit/flatkit/model")
	var uses []typecheck.Use
	for _, u := range optionUses() {
		uses = append(uses, typecheck.Use{Src: u.src, To: u.to})
	}
	typecheck.Pairings(t, imp, everyLayer, uses, func(target, src string) string {
		return layerFileOf(fmt.Sprintf(layerSources[target], src))
	})
}

// layerFileOf is a Go file with the expression call in a function.
func layerFileOf(call string) string {
	return `package p

import (
	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/model"
)

var _ = ad.Tanh

func _() { _ = ` + call + ` }
`
}
