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
	wantErr(t, err, "MatMul", "[2 3]", "inner dimensions")
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
	wantErr(t, err, "u has 1 elements", "2")

	tp = ad.NewTape()
	tp.Const(flat.Tensor{Shape: []int{2, 2}, Data: []float32{1}})
	wantErr(t, tp.Err(), "Const", "shape [2 2]")
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
