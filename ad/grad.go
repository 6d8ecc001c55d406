package ad

import (
	"slices"
)

func (t *Tape) checkScalar(op string, loss Var) bool {
	if !t.check(op, loss) {
		return false
	}
	if s := t.nodes[loss.id].shape; sizeOf(s) != 1 {
		t.fail(errorf("%s: the loss has shape %v; want a single number (use Sum or Mean)", op, s))
		return false
	}
	return true
}

// Backward computes the gradient of the scalar loss with respect to every
// Param recorded before it; GradWrt returns each. The gradients are owned by
// the tape until Reset.
func (t *Tape) Backward(loss Var) error {
	if t.err != nil {
		return t.err
	}
	if !t.checkScalar("Backward", loss) {
		return t.err
	}
	// The sweep overwrites the gradients (it writes every element), so
	// they are not zeroed first.
	for k, id := range t.params {
		if nd := &t.nodes[id]; nd.f64 {
			t.grads64[k] = t.f64.alloc(len(nd.data64))
		} else {
			t.grads[k] = t.f32.alloc(len(nd.data))
		}
	}
	seed := t.fullOf(loss.id, 1, t.nodes[loss.id].shape...)
	t.reverse(0, loss, seed, t.params, t.grads, t.grads64, true)
	if t.err != nil {
		clear(t.grads)
		clear(t.grads64)
	}
	return t.err
}

// Grad is Backward followed by GradWrt of the first Param on the tape: the
// gradient of loss with respect to it, a flat vector of its length, owned by
// the tape until Reset.
func (t *Tape) Grad(loss Var) ([]float32, error) {
	if t.err == nil && len(t.params) == 0 {
		t.fail(errorf("Grad: the tape has no Param to differentiate with respect to"))
	}
	if err := t.Backward(loss); err != nil {
		return nil, err
	}
	return t.GradWrt(Var{t: t, id: t.params[0], gen: t.gen}), nil
}

// GradWrt returns the gradient with respect to the Param p computed by the
// last Backward, or nil if p is not a Param of this tape or Backward has not
// run. For a float64 Param (ParamFloat64, Param64) it is the float64
// gradient rounded to float32, in the tape's memory; GradWrt64 gives it
// unrounded.
func (t *Tape) GradWrt(p Var) []float32 {
	k := t.paramIndex(p)
	switch {
	case k < 0:
		return nil
	case t.grads64[k] != nil:
		g64 := t.grads64[k]
		g := t.f32.alloc(len(g64))
		for i, v := range g64 {
			g[i] = float32(v)
		}
		return g
	}
	return t.grads[k]
}

// GradVar returns ∇f at x as a Var of x's shape that can itself be
// differentiated: use it inside a function that is differentiated again.
// f must return a scalar. f is differentiated with respect to its argument
// only: Vars that f captures (including x itself, if f closes over it) are
// constants of f, as in JAX, so perturbations of different levels never mix.
func GradVar(f func(Var) Var, x Var) Var {
	t := x.t
	if t == nil {
		panic("ad: GradVar at the zero Var")
	}
	if t.err != nil || !t.check("GradVar", x) {
		return t.failed()
	}
	lo := int32(len(t.nodes))
	xi := identity(x)
	y := f(xi)
	if t.err != nil || !t.checkScalar("GradVar", y) {
		return t.failed()
	}
	seed := t.fullOf(y.id, 1, y.Shape()...)
	g := t.reverse(lo, y, seed, []int32{xi.id}, nil, nil, false)
	if t.err != nil {
		return t.failed()
	}
	if g[0].IsZero() {
		return t.fullOf(x.id, 0, x.Shape()...)
	}
	return g[0]
}

// JVPVar returns the derivative of f at x along dir (J·dir) as a Var that
// can itself be differentiated: forward mode nested inside a function that
// is differentiated again, in either mode. dir must have x's shape and may
// depend on other Vars. As with GradVar, f is differentiated with respect
// to its argument only.
func JVPVar(f func(Var) Var, x, dir Var) Var {
	t := x.t
	if t == nil {
		panic("ad: JVPVar at the zero Var")
	}
	if t.err != nil || !t.check("JVPVar", x) || !t.check("JVPVar", dir) {
		return t.failed()
	}
	if !slices.Equal(x.Shape(), dir.Shape()) {
		return t.fail(errorf("JVPVar: dir has shape %v, want %v (x's)", dir.Shape(), x.Shape()))
	}
	lo := int32(len(t.nodes))
	xi := identity(x)
	y := f(xi)
	if t.err != nil || !t.check("JVPVar", y) {
		return t.failed()
	}
	slots := t.forwardSweep(lo, y.id+1, 1, []int32{xi.id}, []Var{dir})
	if t.err != nil {
		return t.failed()
	}
	if y.id < lo {
		return t.fullOf(y.id, 0, y.Shape()...) // f ignored its argument
	}
	if s := slots[y.id-lo]; s >= 0 {
		return Var{t: t, id: s, gen: t.gen}
	}
	return t.fullOf(y.id, 0, y.Shape()...)
}
