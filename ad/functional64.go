package ad

import (
	"slices"

	"github.com/flatkit/flatkit/flat"
)

// The float64 forms of the functional helpers: x is recorded with Param64,
// f computes in float64 (its result must be float64: make constants with
// ScalarLike or FullLike), and the derivatives come out in float64. Like
// the float32 helpers they run on a recycled tape and allocate their
// results.

// record64 runs f on a recycled tape with x as a float64 Param; the caller
// must release the tape. The result must be float64.
func record64(f func(Var) Var, x []float64) (*Tape, Var, Var) {
	t := tapes.Get()
	if t.gen == 0 {
		t.gen = 1
	}
	p := t.Param64(x)
	y := f(p)
	switch {
	case y.t == nil:
		t.fail(errorf("the function returned the zero Var"))
	case y.t != t:
		t.fail(errorf("the function returned a Var of another tape"))
	case t.err == nil && y.Precision() != Float64:
		t.fail(errorf("the function returned a %v value; want float64 (Convert it, or compute in float64 throughout)", y.Precision()))
	}
	return t, p, y
}

// ValueAndGrad64 returns f(x) and its gradient, in float64. f must return
// a float64 scalar.
func ValueAndGrad64(f func(Var) Var, x []float64) (float64, []float64, error) {
	t, _, y := record64(f, x)
	defer release(t)
	g, err := t.Grad64(y)
	if err != nil {
		return 0, nil, err
	}
	return y.Item64(), slices.Clone(g), nil
}

// VJP64 returns Jᵀu, where J is the Jacobian of f at x, in float64.
func VJP64(f func(Var) Var, x, u []float64) ([]float64, error) {
	t, p, y := record64(f, x)
	defer release(t)
	if t.err != nil {
		return nil, t.err
	}
	if len(u) != y.Size() {
		return nil, errorf("VJP64: u has %d elements, want %d (f's output, shape %v)", len(u), y.Size(), y.Shape())
	}
	g := make([]float64, len(x))
	t.reverse(p.id, y, t.Const64(flat.Tensor64{Shape: y.Shape(), Data: u}), []int32{p.id}, [][]float32{nil}, [][]float64{g}, false)
	return g, t.err
}

// JVP64 returns J·dir, where J is the Jacobian of f at x, by forward mode
// in float64.
func JVP64(f func(Var) Var, x, dir []float64) ([]float64, error) {
	t, p, y := record64(f, x)
	defer release(t)
	if t.err != nil {
		return nil, t.err
	}
	if len(dir) != len(x) {
		return nil, errorf("JVP64: dir has %d elements, want %d (x's length)", len(dir), len(x))
	}
	return t.tangent64(p, y, dir), t.err
}

// tangent64 is tangent for a float64 p and y: the tangent of y along dir,
// zeros if y does not depend on p, in a new slice.
func (t *Tape) tangent64(p, y Var, dir []float64) []float64 {
	seed := t.Const64(flat.Tensor64{Shape: p.Shape(), Data: dir})
	slots := t.forwardSweep(p.id, y.id+1, 1, []int32{p.id}, []Var{seed})
	if t.err != nil {
		return nil
	}
	out := make([]float64, y.Size())
	if s := slots[y.id-p.id]; s >= 0 {
		copy(out, t.nodes[s].data64)
	}
	return out
}

// HVP64 returns H·dir, where H is the Hessian of the scalar f at x, by
// forward-over-reverse in float64.
func HVP64(f func(Var) Var, x, dir []float64) ([]float64, error) {
	t, p, y := record64(f, x)
	defer release(t)
	if len(dir) != len(x) && t.err == nil {
		t.fail(errorf("HVP64: dir has %d elements, want %d (x's length)", len(dir), len(x)))
	}
	g := t.gradVarOf(p, y)
	if t.err != nil {
		return nil, t.err
	}
	return t.tangent64(p, g, dir), t.err
}

// HVPReverse64 returns H·dir by reverse-over-reverse in float64: the
// gradient of ⟨∇f, dir⟩. It cross-checks HVP64.
func HVPReverse64(f func(Var) Var, x, dir []float64) ([]float64, error) {
	t, p, y := record64(f, x)
	defer release(t)
	if len(dir) != len(x) && t.err == nil {
		t.fail(errorf("HVPReverse64: dir has %d elements, want %d (x's length)", len(dir), len(x)))
	}
	g := t.gradVarOf(p, y)
	s := Sum(Mul(g, t.Const64(flat.Tensor64{Shape: p.Shape(), Data: dir})))
	if t.err != nil {
		return nil, t.err
	}
	hv := make([]float64, len(x))
	t.reverse(p.id, s, t.Full64(1), []int32{p.id}, [][]float32{nil}, [][]float64{hv}, false)
	return hv, t.err
}
