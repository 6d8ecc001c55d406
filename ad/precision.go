package ad

import (
	"fmt"

	"github.com/flatkit/flatkit/flat"
)

// Precisions. Every value on a tape is float32 or float64: its Precision.
// The parameters are one float32 buffer (a Param); a computation that needs
// float64, such as a stiff mechanistic model at tight tolerances, takes
// them in float64 (ParamFloat64, or Convert of a float32 value) and runs
// every later op in float64. Each op computes in the precision of its
// inputs, which must agree: an op given a float32 and a float64 value is an
// error naming the op and both precisions, never a silent rounding. The op
// set and its derivative rules are written once for both: rules are ops, so
// a tangent or a cotangent has the precision of its value, and the kernels
// are generic over the element type, with float32 fast paths (SIMD) where
// the float32 kernels have them. A primitive without a float64 kernel (the
// conv, pooling and batch-norm families, ChannelAffine, and a user's
// primitive that does not implement Float64Kernel) given float64 inputs is
// an error naming the op and the precision.

// Precision is the element type of a value on a tape.
type Precision uint8

const (
	// Float32 is the default: the parameter buffer's element type.
	Float32 Precision = iota
	// Float64 values are computed in float64, with float64 tangents and
	// cotangents.
	Float64
)

func (p Precision) String() string {
	switch p {
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	}
	return fmt.Sprintf("Precision(%d)", uint8(p))
}

func precOf(f64 bool) Precision {
	if f64 {
		return Float64
	}
	return Float32
}

// Float64Kernel is a Primitive whose kernel also computes in float64:
// Forward64 computes f.Out64 from f.In64 (see Forward), and is called for
// float64 inputs in place of Forward. A primitive that is not a
// Float64Kernel, given float64 inputs, records an error naming it.
type Float64Kernel interface {
	Forward64(f *Forward)
}

// Aliaser64 is an Aliaser for float64 inputs: Alias64 returns the output's
// float64 data, a view of an input's.
type Aliaser64 interface {
	Alias64(in []flat.Tensor64, a Attrs) []float64
}

// Precision returns v's precision; Float32 for a Var that is not live.
func (v Var) Precision() Precision {
	if n := v.node(); n != nil && n.f64 {
		return Float64
	}
	return Float32
}

func (nd *node) size() int {
	if nd.f64 {
		return len(nd.data64)
	}
	return len(nd.data)
}

// dataOf returns nd's values as []T; T must be nd's element type.
func dataOf[T flat.Float](nd *node) []T {
	if p, ok := any(&nd.data).(*[]T); ok {
		return *p
	}
	return *any(&nd.data64).(*[]T)
}

// ParamFloat64 records θ, a float32 buffer such as the parameters, as a
// differentiable float64 input: its values are converted into the tape's
// memory on the way in, later ops on it compute in float64, and its
// gradient accumulates in float64. GradWrt64 returns the gradient as it is;
// GradWrt rounds it to float32. Since θ is copied, a replay sees new values
// in θ only after a Rebind of the Param to θ (which converts them again).
func (t *Tape) ParamFloat64(θ []float32) Var {
	if t.err != nil {
		return t.failed()
	}
	shape := t.ints.alloc(1)
	shape[0] = len(θ)
	d := t.f64.alloc(len(θ))
	for i, x := range θ {
		d[i] = float64(x)
	}
	return t.pushParam(node{kind: kindParam, shape: shape, data64: d, f64: true, converted: true})
}

// Param64 records x as a differentiable float64 input, such as the state
// of an ODE whose derivatives are wanted. Like Param, x is not copied: the
// tape reads it in place, so it must not change until the tape is Reset.
// Its gradient is a []float64 (GradWrt64).
func (t *Tape) Param64(x []float64) Var {
	if t.err != nil {
		return t.failed()
	}
	shape := t.ints.alloc(1)
	shape[0] = len(x)
	return t.pushParam(node{kind: kindParam, shape: shape, data64: x, f64: true})
}

// Const64 records a float64 tensor that is not differentiated. Like Const,
// its data is not copied.
func (t *Tape) Const64(x flat.Tensor64) Var {
	if t.err != nil {
		return t.failed()
	}
	n, err := flat.SizeOf(x.Shape)
	if err != nil {
		return t.fail(errorf("Const64: %w", err))
	}
	if n != len(x.Data) {
		return t.fail(errorf("Const64: shape %v holds %d numbers, data has %d, want %d", x.Shape, n, len(x.Data), n))
	}
	return t.push(node{kind: kindConst, shape: t.ints.copyOf(x.Shape), data64: x.Data, f64: true})
}

// Scalar64 records a constant float64 scalar.
func (t *Tape) Scalar64(x float64) Var { return t.full(Float64, x, nil) }

// Full64 records a constant float64 tensor of the given shape filled with x.
func (t *Tape) Full64(x float64, shape ...int) Var { return t.full(Float64, x, shape) }

// full records a constant of precision p and the given shape filled with
// x (rounded to float32 for Float32).
func (t *Tape) full(p Precision, x float64, shape []int) Var {
	if t.err != nil {
		return t.failed()
	}
	n, err := flat.SizeOf(shape)
	if err != nil {
		return t.fail(errorf("Full: %w", err))
	}
	if p == Float64 {
		d := t.f64.alloc(n)
		for i := range d {
			d[i] = x
		}
		return t.push(node{kind: kindConst, shape: t.ints.copyOf(shape), data64: d, f64: true})
	}
	d := t.f32.alloc(n)
	flat.Fill(d, float32(x))
	return t.push(node{kind: kindConst, shape: t.ints.copyOf(shape), data: d})
}

// ScalarLike records a constant scalar x in v's precision, on v's tape:
// the way to write a constant into code that runs in either precision
// (Tape.Scalar makes a float32 one).
func ScalarLike(v Var, x float64) Var { return FullLike(v, x) }

// FullLike records a constant of the given shape filled with x, in v's
// precision, on v's tape.
func FullLike(v Var, x float64, shape ...int) Var {
	if v.t == nil {
		panic("ad: FullLike of the zero Var")
	}
	if !v.t.live(v) && !v.t.check("FullLike", v) {
		return v.t.failed()
	}
	return v.t.full(v.Precision(), x, shape)
}

// fullOf is FullLike for node id's precision.
func (t *Tape) fullOf(id int32, x float64, shape ...int) Var {
	return t.full(precOf(t.nodes[id].f64), x, shape)
}

// Value64 returns a float64 v's value as a tensor viewing the tape's memory
// (or the caller's, for Param64 and Const64). Do not modify it. A float32
// Var's Value64 has v's shape and no data; use Value.
func (v Var) Value64() flat.Tensor64 {
	if n := v.read(); n != nil {
		return flat.Tensor64{Shape: n.shape, Data: n.data64}
	}
	return flat.Tensor64{}
}

// Data64 returns a float64 v's values in row-major order; see Value64. It
// is nil for a float32 Var; use Data.
func (v Var) Data64() []float64 {
	if n := v.read(); n != nil {
		return n.data64
	}
	return nil
}

// Item64 returns the value of a one-element Var in float64 (exact for a
// float32 Var too), or NaN if v has another size.
func (v Var) Item64() float64 {
	n := v.read()
	switch {
	case n == nil || n.size() != 1:
		return float64(nan32)
	case n.f64:
		return n.data64[0]
	}
	return float64(n.data[0])
}

// GradWrt64 returns the gradient with respect to the float64 Param p
// (ParamFloat64 or Param64) computed by the last Backward, or nil if p is
// not a float64 Param of this tape or Backward has not run.
func (t *Tape) GradWrt64(p Var) []float64 {
	if k := t.paramIndex(p); k >= 0 {
		return t.grads64[k]
	}
	return nil
}

// Grad64 is Backward followed by GradWrt64 of the first Param on the tape,
// which must be a float64 one.
func (t *Tape) Grad64(loss Var) ([]float64, error) {
	if t.err == nil {
		switch {
		case len(t.params) == 0:
			t.fail(errorf("Grad64: the tape has no Param to differentiate with respect to"))
		case !t.nodes[t.params[0]].f64:
			t.fail(errorf("Grad64: the first Param is float32; want a float64 one (ParamFloat64, Param64), or use Grad"))
		}
	}
	if err := t.Backward(loss); err != nil {
		return nil, err
	}
	return t.grads64[0], nil
}

// paramIndex returns p's index among the tape's Params, or -1.
func (t *Tape) paramIndex(p Var) int {
	if p.t != t || p.gen != t.gen {
		return -1
	}
	for k, id := range t.params {
		if id == p.id {
			return k
		}
	}
	return -1
}

// Convert returns v in precision p: rounded to float32, or widened to
// float64 (exactly). It is the only op that takes a value of one precision
// and gives another; its derivative converts tangents and cotangents the
// same way. Converting to v's own precision returns v.
func Convert(v Var, p Precision) Var {
	if v.t == nil {
		return v
	}
	if !v.t.live(v) {
		return v.failedOn("Convert")
	}
	if v.Precision() == p {
		return v
	}
	if p != Float32 && p != Float64 {
		return v.t.fail(errorf("Convert: precision %v; want float32 or float64", p))
	}
	return Apply(convertOp, Attrs{Ints: []int{int(p)}}, v)
}

type convertPrim struct{}

var convertOp = &convertPrim{}

func (*convertPrim) Name() string { return "Convert" }
func (*convertPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	if len(a.Ints) != 1 || a.Ints[0] != int(Float32) && a.Ints[0] != int(Float64) {
		return dst, fmt.Errorf("attributes %v; want the target precision", a.Ints)
	}
	return append(dst, in[0]...), nil
}
func (*convertPrim) Forward(f *Forward) {
	if f.In64 == nil { // float32 to float64
		for i, x := range f.In[0].Data {
			f.Out64.Data[i] = float64(x)
		}
		return
	}
	for i, x := range f.In64[0].Data {
		f.Out.Data[i] = float32(x)
	}
}
func (p *convertPrim) Forward64(f *Forward) { p.Forward(f) }
func (*convertPrim) JVP(r *Rule) Var {
	return Convert(r.Tangent(0), Precision(r.Attrs.Ints[0]))
}
func (*convertPrim) VJP(r *Rule, c Var) {
	r.AddGrad(0, Convert(c, r.In[0].Precision()))
}

// outPrecision returns the precision of p's output for inputs in, or an
// error if they mix precisions (only Convert may).
func (t *Tape) outPrecision(p Primitive, a Attrs, in []int32) (bool, error) {
	if p == Primitive(convertOp) {
		return len(a.Ints) == 1 && a.Ints[0] == int(Float64), nil
	}
	f64 := t.nodes[in[0]].f64
	for i, id := range in[1:] {
		if t.nodes[id].f64 != f64 {
			return false, errorf("%s: input 0 is %v and input %d is %v; want one precision (Convert one of them, or make constants with ScalarLike/FullLike)",
				p.Name(), precOf(f64), i+1, precOf(t.nodes[id].f64))
		}
	}
	return f64, nil
}

// apply64 is apply's second half for an op with a float64 input or output:
// it checks that the inputs agree (or that p is Convert) and runs p's
// float64 kernel, or records an error naming the op and the precision.
func (t *Tape) apply64(p Primitive, ca Attrs, ids []int32, shape []int, n int) Var {
	out64, err := t.outPrecision(p, ca, ids)
	if err != nil {
		return t.fail(err)
	}
	in64 := t.nodes[ids[0]].f64
	nd := node{kind: kindOp, prim: p, in: ids, shape: shape, attrs: ca, f64: out64}
	var args32 []flat.Tensor
	var args64 []flat.Tensor64
	if in64 {
		if cap(t.fwdArgs64) < len(ids) {
			t.fwdArgs64 = make([]flat.Tensor64, len(ids))
		}
		args64 = t.fwdArgs64[:len(ids)]
		for i, id := range ids {
			args64[i].Shape, args64[i].Data = t.nodes[id].shape, t.nodes[id].data64
		}
	} else {
		if cap(t.fwdArgs) < len(ids) {
			t.fwdArgs = make([]flat.Tensor, len(ids))
		}
		args32 = t.fwdArgs[:len(ids)]
		for i, id := range ids {
			args32[i].Shape, args32[i].Data = t.nodes[id].shape, t.nodes[id].data
		}
	}
	defer func() {
		for i := range args32 {
			args32[i].Shape, args32[i].Data = nil, nil
		}
		for i := range args64 {
			args64[i].Shape, args64[i].Data = nil, nil
		}
	}()
	if _, ok := aliaserOf(p); ok {
		al, ok := asRule[Aliaser64](p)
		if !ok {
			return t.fail(errorf("%s has no float64 form (Alias64); its input is float64", p.Name()))
		}
		nd.data64, nd.alias = al.Alias64(args64, ca), true
		return t.push(nd)
	}
	k, ok := asRule[Float64Kernel](p)
	if !ok {
		return t.fail(errorf("%s has a float32 kernel only; its inputs are float64 (Convert them to float32, or give the primitive a Forward64)", p.Name()))
	}
	f := &t.fwd
	f.In, f.In64, f.Attrs, f.t, f.saved = args32, args64, ca, t, nil
	f.Out.Shape, f.Out64.Shape = shape, shape
	if out64 {
		f.Out64.Data = t.f64.alloc(n)
	} else {
		f.Out.Data = t.f32.alloc(n)
	}
	k.Forward64(f)
	nd.data, nd.data64, nd.saved = f.Out.Data, f.Out64.Data, f.saved
	f.In, f.In64, f.Out, f.Out64, f.Attrs, f.saved = nil, nil, flat.Tensor{}, flat.Tensor64{}, Attrs{}, nil
	return t.push(nd)
}
