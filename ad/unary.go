package ad

import (
	"fmt"
	"slices"

	"github.com/flatkit/flatkit/internal/vmath"
)

// Elementwise functions of one input. Each primitive has a forward kernel
// and a derivative written with ops, so that it composes to any order.

type unaryPrim struct {
	name string
	f    func(x float32) float32
	// kernel, if set, maps a whole slice; it saves an indirect call per
	// element on hot activations.
	kernel func(out, x []float32)
	// deriv returns d out/d x as a Var, from the input x and the output y.
	deriv func(x, y Var) Var
	// scale, if set, returns t·d out/d x for a tangent or cotangent t (the
	// Jacobian is diagonal, so one map serves both modes), in place of
	// Mul(t, deriv(x, y)): it lets Relu mask t in one pass, without
	// materialising its 0/1 derivative.
	scale func(t, x, y Var) Var
}

func (p *unaryPrim) Name() string { return p.name }
func (p *unaryPrim) Shape(dst []int, in [][]int, _ Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}
func (p *unaryPrim) Forward(f *Forward) {
	x, out := f.In[0].Data, f.Out.Data
	if p.kernel != nil {
		splitElems(elemJob{kind: elemUnary, unary: p.kernel, out: out, a: x})
		return
	}
	for i, v := range x {
		out[i] = p.f(v)
	}
}
func (p *unaryPrim) times(t Var, r *Rule) Var {
	if p.scale != nil {
		return p.scale(t, r.In[0], r.Out)
	}
	return Mul(t, p.deriv(r.In[0], r.Out))
}
func (p *unaryPrim) JVP(r *Rule) Var    { return p.times(r.Tangent(0), r) }
func (p *unaryPrim) VJP(r *Rule, c Var) { r.AddGrad(0, p.times(c, r)) }

var negOp = &negPrim{}

type negPrim struct{}

// Neg returns −v.
func Neg(v Var) Var { return Apply(negOp, Attrs{}, v) }

func (*negPrim) Name() string { return "Neg" }
func (*negPrim) Shape(dst []int, in [][]int, _ Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}
func (*negPrim) Forward(f *Forward) {
	for i, v := range f.In[0].Data {
		f.Out.Data[i] = -v
	}
}
func (*negPrim) JVP(r *Rule) Var    { return Neg(r.Tangent(0)) }
func (*negPrim) VJP(r *Rule, c Var) { r.AddGrad(0, Neg(c)) }

var tanhOp = &unaryPrim{
	name: "Tanh",
	// A float32 rational approximation; vmath.Tanh vectorises it (AVX-512,
	// AVX2) and agrees with vmath.TanhScalar bit for bit.
	f:      vmath.TanhScalar,
	kernel: vmath.Tanh,
	// 1 − y²
	deriv: func(_, y Var) Var { return Sub(y.t.Scalar(1), Mul(y, y)) },
}

// Tanh returns tanh(v) elementwise.
func Tanh(v Var) Var { return Apply(tanhOp, Attrs{}, v) }

func (v Var) failedOn(op string) Var {
	if v.t == nil {
		panic("ad: " + op + " of the zero Var")
	}
	if v.t.err == nil {
		v.t.check(op, v)
	}
	return v.t.failed()
}

func errRank(op string, s []int) error {
	return errorf("%s: rank of %v exceeds %d", op, s, maxRank)
}

// axisWant says which axes a shape of the given rank has, for an error
// (negative axes count from the end); a scalar has none.
func axisWant(rank int, each bool) string {
	switch {
	case rank == 0:
		return "no axis: a scalar has none"
	case each:
		return fmt.Sprintf("%d ≤ axis < %d for each", -rank, rank)
	}
	return fmt.Sprintf("%d ≤ axis < %d", -rank, rank)
}

func errAxis(op string, axes, s []int) error {
	// Copies, so that the callers' variadic axes need not escape.
	return errorf("%s: axes %v out of range for shape %v, want %s", op, slices.Clone(axes), slices.Clone(s), axisWant(len(s), true))
}
