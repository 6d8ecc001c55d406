package ad

import (
	"fmt"
	"math"

	"github.com/flatkit/flatkit/flat"
)

// The softmax family over one axis. LogSumExp is a primitive with a stable
// forward kernel (shifted by the maximum, accumulated in float64); its rules
// are written with ops through the softmax exp(x − lse), so they compose to
// any order. Softmax and LogSoftmax are composites of LogSumExp.

type logSumExpPrim struct{}

var logSumExpOp = &logSumExpPrim{}

// LogSumExp returns log Σ exp(x) over axis, which is removed; a negative
// axis counts from the end. It is computed stably: inputs of ±1e4 neither
// overflow nor underflow.
func LogSumExp(x Var, axis int) Var { return applyAxis(logSumExpOp, x, axis) }

// Softmax returns the exponentials of x over axis, divided by their sum; a
// negative axis counts from the end. It is computed stably, as the
// exponential of x − LogSumExp(x).
func Softmax(x Var, axis int) Var { return Exp(LogSoftmax(x, axis)) }

// LogSoftmax returns x − LogSumExp(x) over axis; a negative axis counts
// from the end.
func LogSoftmax(x Var, axis int) Var {
	lse := LogSumExp(x, axis) // records any error about x or axis
	keep, r, _, ok := keepDims(x, axis)
	if !ok {
		return lse
	}
	return Sub(x, Reshape(lse, keep[:r]...))
}

// keepDims returns x's shape with axis (normalised to ax) set to 1: the
// shape that broadcasting arithmetic expands along axis. It reports false
// if x is not live or the axis does not fit its shape; a LogSumExp or Max
// over the same axis has then recorded the error.
func keepDims(x Var, axis int) (keep [maxRank]int, r, ax int, ok bool) {
	s := x.Shape()
	if s == nil || len(s) > maxRank {
		return keep, 0, 0, false
	}
	r = len(s)
	if ax, ok = normAxis(axis, r); !ok {
		return keep, 0, 0, false
	}
	copy(keep[:], s)
	keep[ax] = 1
	return keep, r, ax, true
}

func (*logSumExpPrim) Name() string { return "LogSumExp" }
func (*logSumExpPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	ax, err := axisShape(a, in[0])
	if err != nil {
		return dst, err
	}
	if len(in[0]) > maxRank {
		return dst, fmt.Errorf("rank of %v exceeds %d", in[0], maxRank)
	}
	return reducedShape(dst, in[0], ax), nil
}

func (*logSumExpPrim) Forward(f *Forward)   { logSumExpAxis(f.In[0], f.Out.Data, f.Attrs) }
func (*logSumExpPrim) Forward64(f *Forward) { logSumExpAxis(f.In64[0], f.Out64.Data, f.Attrs) }

// logSumExpAxis sets out to log Σ exp(x) over the axis of a.
func logSumExpAxis[T flat.Float](x flat.TensorOf[T], out []T, a Attrs) {
	ax, _ := normAxis(a.Ints[0], len(x.Shape))
	outer, n, inner := axisSplit(x.Shape, ax)
	for o := 0; o < outer; o++ {
		base := o * n * inner
		for i := 0; i < inner; i++ {
			out[o*inner+i] = logSumExp(x.Data[base+i:], n, inner)
		}
	}
}

// logSumExp returns log Σ_k exp(x[k·stride]) for k < n, shifted by the
// maximum and accumulated in float64 (float32's result is rounded once).
func logSumExp[T flat.Float](x []T, n, stride int) T {
	m := T(math.Inf(-1))
	for k := 0; k < n; k++ {
		if v := x[k*stride]; v > m || v != v {
			m = v
		}
	}
	if math.IsInf(float64(m), 0) || m != m {
		return m // all −∞ (or empty), some +∞, or a NaN
	}
	s := 0.0
	mf := float64(m)
	for k := 0; k < n; k++ {
		s += math.Exp(float64(x[k*stride]) - mf)
	}
	return T(mf + math.Log(s))
}

// softmaxOf returns exp(x − lse) for lse = LogSumExp(x, axis), and the
// keepdims shape of lse, as ops: the softmax the rules of LogSumExp need.
func softmaxOf(x, lse Var, axis int) (Var, [maxRank]int, int) {
	keep, r, _, _ := keepDims(x, axis)
	return Exp(Sub(x, Reshape(lse, keep[:r]...))), keep, r
}

// JVP: d lse = Σ_axis softmax(x) · dx.
func (*logSumExpPrim) JVP(r *Rule) Var {
	sm, keep, rank := softmaxOf(r.In[0], r.Out, r.Attrs.Ints[0])
	// Sum over the axis as SumTo + Reshape: Sum's variadic axes would
	// allocate.
	return Reshape(SumTo(Mul(sm, r.Tangent(0)), keep[:rank]...), r.Out.Shape()...)
}

// VJP: x̄ = softmax(x)·c, with c expanded along the axis.
func (*logSumExpPrim) VJP(r *Rule, c Var) {
	sm, keep, rank := softmaxOf(r.In[0], r.Out, r.Attrs.Ints[0])
	r.AddGrad(0, Mul(sm, Reshape(c, keep[:rank]...)))
}
