package ad_test

import (
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/wanterr"
)

// wantErr fails t unless err is an error whose text mentions every
// fragment.
func wantErr(t *testing.T, err error, fragments ...string) {
	t.Helper()
	wanterr.Mentions(t, err, fragments...)
}

func TestErrorsAreStickyAndNamed(t *testing.T) {
	tp := ad.NewTape()
	p := tp.Param(make([]float32, 6))
	a := ad.Reshape(p, 2, 3)
	bad := ad.MatMul(a, a) // (2×3)·(2×3)
	later := ad.Tanh(ad.Add(bad, a))
	if later.Data() != nil {
		t.Error("an op after the error produced a value")
	}
	_, err := tp.Grad(ad.Sum(later))
	wantErr(t, err, "MatMul", "[2 3]", "inner dimensions", "is (2×3)·(2×3), want (2×3)·(3×3)")
	if tp.Err() != err {
		t.Error("Err does not return the first error")
	}
	tp.Reset()
	if tp.Err() != nil {
		t.Error("Reset kept the error")
	}
}

func TestStaleAndForeignVars(t *testing.T) {
	tp := ad.NewTape()
	old := tp.Param([]float32{1, 2})
	tp.Reset()
	y := ad.Sum(old)
	if y.Data() != nil {
		t.Error("an op on a stale Var produced a value")
	}
	wantErr(t, tp.Err(), "Reset", "generation")

	t1, t2 := ad.NewTape(), ad.NewTape()
	a := t1.Param([]float32{1})
	b := t2.Param([]float32{1})
	ad.Add(a, b)
	wantErr(t, t1.Err(), "another tape")
}

func TestGradErrors(t *testing.T) {
	tp := ad.NewTape()
	p := tp.Param([]float32{1, 2})
	_, err := tp.Grad(p)
	wantErr(t, err, "shape [2]", "single number")

	tp = ad.NewTape()
	c := tp.Const(flat.Tensor{Shape: []int{}, Data: []float32{1}})
	_, err = tp.Grad(c)
	wantErr(t, err, "no Param")

	_, err = ad.VJP(func(p ad.Var) ad.Var { return ad.Scale(p, 2) }, []float32{1, 2}, []float32{1})
	wantErr(t, err, "u has 1 elements, want 2")

	tp = ad.NewTape()
	tp.Const(flat.Tensor{Shape: []int{2, 2}, Data: []float32{1}})
	wantErr(t, tp.Err(), "Const", "shape [2 2]", "data has 1, want 4")
}

// forwardOnly has a kernel and no rules.
type forwardOnly struct{}

func (forwardOnly) Name() string { return "ForwardOnly" }
func (forwardOnly) Shape(dst []int, in [][]int, _ ad.Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}
func (forwardOnly) Forward(f *ad.Forward) { copy(f.Out.Data, f.In[0].Data) }

// firstOrderOnly is x² with rules that use forwardOnly, so its first
// derivatives work and its second derivatives must report the missing rule.
type firstOrderOnly struct{}

func (firstOrderOnly) Name() string { return "FirstOrderOnly" }
func (firstOrderOnly) Shape(dst []int, in [][]int, _ ad.Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}
func (firstOrderOnly) Forward(f *ad.Forward) {
	for i, x := range f.In[0].Data {
		f.Out.Data[i] = x * x
	}
}
func (firstOrderOnly) JVP(r *ad.Rule) ad.Var {
	return ad.Mul(r.Tangent(0), ad.Apply(forwardOnly{}, ad.Attrs{}, ad.Scale(r.In[0], 2)))
}
func (firstOrderOnly) VJP(r *ad.Rule, c ad.Var) {
	r.AddGrad(0, ad.Mul(c, ad.Apply(forwardOnly{}, ad.Attrs{}, ad.Scale(r.In[0], 2))))
}

func TestMissingRulesAreErrorsNotZeros(t *testing.T) {
	f := func(p ad.Var) ad.Var { return ad.Sum(ad.Apply(forwardOnly{}, ad.Attrs{}, p)) }
	_, _, err := ad.ValueAndGrad(f, []float32{1, 2})
	wantErr(t, err, "ForwardOnly", "VJP", "order 1")
	_, err = ad.JVP(f, []float32{1, 2}, []float32{1, 0})
	wantErr(t, err, "ForwardOnly", "JVP", "order 1")

	g := func(p ad.Var) ad.Var { return ad.Sum(ad.Apply(firstOrderOnly{}, ad.Attrs{}, p)) }
	_, grad, err := ad.ValueAndGrad(g, []float32{1, 2})
	if err != nil || grad[0] != 2 || grad[1] != 4 {
		t.Fatalf("first derivative: %v, %v", grad, err)
	}
	_, err = ad.HVP(g, []float32{1, 2}, []float32{1, 0})
	wantErr(t, err, "ForwardOnly", "order 2")
	_, err = ad.HVPReverse(g, []float32{1, 2}, []float32{1, 0})
	wantErr(t, err, "ForwardOnly", "order 2")
}

// TestErrorsSayWhatWasWanted checks that errors naming a bad size, shape,
// axis or count also say what was wanted.
func TestErrorsSayWhatWasWanted(t *testing.T) {
	six := func(tp *ad.Tape) ad.Var { return tp.Param(make([]float32, 6)) }
	m23 := func(tp *ad.Tape) ad.Var { return ad.Reshape(six(tp), 2, 3) }
	checkTapeErrs(t, []tapeErrCase{
		{"Reshape dimension", func(tp *ad.Tape) ad.Var { return ad.Reshape(six(tp), -2, 3) },
			[]string{"Reshape", "dimension 0 is -2, want ≥ 0 (or -1 in one dimension)"}},
		{"Reshape -1", func(tp *ad.Tape) ad.Var { return ad.Reshape(six(tp), 4, -1) },
			[]string{"Reshape", "want the other dimensions' product (4) nonzero and dividing 6"}},
		{"Reshape count", func(tp *ad.Tape) ad.Var { return ad.Reshape(six(tp), 4, 2) },
			[]string{"Reshape", "shape [4 2] holds 8, want 6"}},
		{"BroadcastTo", func(tp *ad.Tape) ad.Var { return ad.BroadcastTo(m23(tp), 3, 3) },
			[]string{"BroadcastTo", "[2 3]", "[3 3]", "want rank ≤ 2 and each dimension, aligned at the end, 1 or the target's"}},
		{"Add broadcast", func(tp *ad.Tape) ad.Var { return ad.Add(m23(tp), tp.Param(make([]float32, 4))) },
			[]string{"Add", "(axis 1: 3 vs 4), want equal dimensions or one of them 1"}},
		{"MatMul batch", func(tp *ad.Tape) ad.Var {
			return ad.MatMul(ad.Reshape(tp.Param(make([]float32, 24)), 2, 3, 4), ad.Reshape(tp.Param(make([]float32, 60)), 3, 4, 5))
		}, []string{"MatMul", "batch sizes 2 and 3 differ", "want equal sizes or one of them 1"}},
		{"Slice range", func(tp *ad.Tape) ad.Var { return ad.Slice(six(tp), 2, 7) },
			[]string{"Slice [2, 7) of shape [6], want 0 ≤ lo ≤ hi ≤ 6"}},
		{"Slice scalar", func(tp *ad.Tape) ad.Var { return ad.Slice(tp.Scalar(1), 0, 1) },
			[]string{"Slice [0, 1) of shape [], want rank ≥ 1"}},
		{"View range", func(tp *ad.Tape) ad.Var { return ad.View(six(tp), 4, 3) },
			[]string{"View", "[4, 7)", "want a range within [0, 6)"}},
		{"Transpose rank", func(tp *ad.Tape) ad.Var { return ad.Transpose(m23(tp), 0) },
			[]string{"Transpose", "[0]", "want a permutation of its 2 axes"}},
		{"Sum axes", func(tp *ad.Tape) ad.Var { return ad.Sum(m23(tp), 0, 5) },
			[]string{"Sum", "axes [0 5]", "want -2 ≤ axis < 2 for each"}},
		{"Sum axes of a scalar", func(tp *ad.Tape) ad.Var { return ad.Sum(tp.Scalar(1), 0) },
			[]string{"Sum", "axes [0]", "shape [], want no axis: a scalar has none"}},
		{"SliceAxis of a scalar", func(tp *ad.Tape) ad.Var { return ad.SliceAxis(tp.Scalar(1), 0, 0, 1) },
			[]string{"SliceAxis", "axis 0", "shape [], want no axis: a scalar has none"}},
		{"Const shape", func(tp *ad.Tape) ad.Var {
			return tp.Const(flat.Tensor{Shape: []int{2, -1}, Data: make([]float32, 2)})
		}, []string{"Const", "dimension 1 of shape [2 -1] is -1, want ≥ 0"}},
		{"BatchNorm empty", func(tp *ad.Tape) ad.Var {
			y, _ := ad.BatchNorm(ad.Reshape(tp.Param(nil), 0, 2), ad.Var{}, ad.Var{}, 1e-5)
			return y
		}, []string{"BatchNorm", "[0 2] is empty, want N ≥ 1 and C ≥ 1"}},
		{"JVPVar shape", func(tp *ad.Tape) ad.Var { return ad.JVPVar(ad.Tanh, m23(tp), six(tp)) },
			[]string{"JVPVar", "dir has shape [6], want [2 3]"}},
	})

	f := func(p ad.Var) ad.Var { return ad.Sum(ad.Mul(p, p)) }
	_, err := ad.JVP(f, []float32{1, 2}, []float32{1})
	wantErr(t, err, "JVP", "dir has 1 elements, want 2 (θ's length)")
	_, err = ad.HVP(f, []float32{1, 2}, []float32{1})
	wantErr(t, err, "HVP", "dir has 1 elements, want 2 (θ's length)")
	tp := ad.NewTape()
	p := tp.Param([]float32{1, 2})
	_, err = tp.HVPOf(f(p), p, []float32{1, 2, 3})
	wantErr(t, err, "HVPOf", "dir has 3 elements, want 2 (the Param's size)")

	tp = ad.NewTape()
	p = tp.Param([]float32{1, 2})
	y := ad.Tanh(p)
	wantErr(t, tp.VJPOf(y, tp.Param([]float32{1, 2, 3}), []ad.Var{p}, []ad.Var{{}}), "VJPOf", "w has shape [3], want [2] (y's)")
	tp = ad.NewTape()
	p = tp.Param([]float32{1, 2})
	wantErr(t, tp.VJPOf(ad.Tanh(p), tp.Param([]float32{1, 2}), []ad.Var{p}, nil), "VJPOf", "0 results for 1 Params, want 1 (one per Param)")
	tp = ad.NewTape()
	p = tp.Param([]float32{1, 2})
	_, err = tp.JVPOf(ad.Tanh(p), []ad.Var{p}, nil)
	wantErr(t, err, "JVPOf", "0 directions for 1 Params, want 1 (one per Param)")
	tp = ad.NewTape()
	p = tp.Param([]float32{1, 2})
	_, err = tp.JVPOf(ad.Tanh(p), []ad.Var{p}, []ad.Var{tp.Const(flat.Tensor{Shape: []int{3}, Data: make([]float32, 3)})})
	wantErr(t, err, "JVPOf", "dirs[0] has shape [3], want [2] (the Param's)")
	tp = ad.NewTape()
	p = tp.Param([]float32{1, 2})
	wantErr(t, tp.AddVJP(ad.Tanh(p), []float32{1, 1}, []ad.Var{p}, nil), "AddVJP", "0 destinations for 1 Params, want 1 (one per Param)")
}
