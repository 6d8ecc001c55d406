package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/layout"
)

// FuncLayer applies a function without parameters; see Func.
type FuncLayer struct {
	Name string
	f    func(ad.Var) ad.Var
	relu bool // made by Relu: Chain may fuse it into the Conv before it
}

// Func wraps a function of one Var as a parameter-free layer, as Lux's
// WrappedFunction does: model.Func("square", ad.Square). The name appears
// in error messages.
func Func(name string, f func(ad.Var) ad.Var) *FuncLayer { return &FuncLayer{Name: name, f: f} }

// Declare declares nothing; a nil function is a configuration error.
func (l *FuncLayer) Declare(*layout.Builder) error {
	if l.f == nil {
		return fmt.Errorf("%s: the function is nil", l.Name)
	}
	return nil
}

// Init does nothing: the layer has no parameters.
func (*FuncLayer) Init([]float32, *rand.Rand) {}

// Apply returns f(x).
func (l *FuncLayer) Apply(_ *Ctx, _, x ad.Var) ad.Var {
	if l.f == nil {
		return fail(x, errorf("%s: the function is nil", l.Name))
	}
	return l.f(x)
}

// Relu is the layer max(x, 0).
func Relu() *FuncLayer { return &FuncLayer{Name: "Relu", f: ad.Relu, relu: true} }

// Tanh is the layer tanh(x).
func Tanh() *FuncLayer { return Func("Tanh", ad.Tanh) }

// Sigmoid is the layer 1/(1 + e^−x).
func Sigmoid() *FuncLayer { return Func("Sigmoid", ad.Sigmoid) }

// Gelu is the layer x·Φ(x) with the exact normal CDF Φ, PyTorch's default
// GELU.
func Gelu() *FuncLayer { return Func("Gelu", ad.Gelu) }

// Softplus is the layer log(1 + e^x).
func Softplus() *FuncLayer { return Func("Softplus", ad.Softplus) }

// Swish is the layer x·sigmoid(x), also called SiLU.
func Swish() *FuncLayer { return Func("Swish", ad.Swish) }

// LeakyRelu is the layer max(x, slope·x) for 0 ≤ slope ≤ 1.
func LeakyRelu(slope float32) *FuncLayer {
	return Func("LeakyRelu", func(x ad.Var) ad.Var { return ad.LeakyRelu(x, float64(slope)) })
}

// Elu is the layer x for x > 0, alpha·(e^x − 1) otherwise.
func Elu(alpha float32) *FuncLayer {
	return Func("Elu", func(x ad.Var) ad.Var { return ad.Elu(x, float64(alpha)) })
}

// Softmax is the layer softmax over axis. For inputs (N, C, …) the axis is
// usually 1; a negative axis counts from the end.
func Softmax(axis int) *FuncLayer {
	return Func("Softmax", func(x ad.Var) ad.Var { return ad.Softmax(x, axis) })
}

// LogSoftmax is the layer log-softmax over axis.
func LogSoftmax(axis int) *FuncLayer {
	return Func("LogSoftmax", func(x ad.Var) ad.Var { return ad.LogSoftmax(x, axis) })
}

// Flatten is the layer that reshapes each sample to one axis, like
// PyTorch's nn.Flatten: (N, d1, …, dk) becomes (N, d1·…·dk).
func Flatten() *FuncLayer { return Func("Flatten", flatten) }

func flatten(x ad.Var) ad.Var {
	s := x.Shape()
	if len(s) == 0 {
		return fail(x, errorf("Flatten: input is a scalar, want (N, …)"))
	}
	if len(s) == 2 {
		return x
	}
	return ad.Reshape(x, s[0], -1)
}
