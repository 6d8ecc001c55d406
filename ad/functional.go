package ad

import (
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/freelist"
)

// The functional API differentiates a Go function of one parameter Var,
// recorded on a fresh tape. These functions allocate their results; for a
// loop that allocates nothing, reuse a Tape with Param, Grad and Reset.

// tapes recycles the tapes of the functional API: a fresh tape per call
// would pay for new arenas (page faults, zeroing, GC) on every call. Results
// are copied out before a tape goes back. A freelist rather than a
// sync.Pool, as in odead.Func: a GC does not empty it, so a warm loop of
// calls never pays for a new tape again.
var tapes freelist.List[Tape]

func release(t *Tape) {
	t.Reset()
	tapes.Put(t)
}

// record runs f on a recycled tape; the caller must release it.
func record(f func(Var) Var, θ []float32) (*Tape, Var, Var) {
	t := tapes.Get()
	if t.gen == 0 { // a new zero Tape from the list: start it as NewTape does
		t.gen = 1
	}
	p, y := recordOn(t, f, θ)
	return t, p, y
}

func recordOn(t *Tape, f func(Var) Var, θ []float32) (Var, Var) {
	p := t.Param(θ)
	y := f(p)
	if y.t == nil {
		t.fail(errorf("the function returned the zero Var"))
	} else if y.t != t {
		t.fail(errorf("the function returned a Var of another tape"))
	}
	// A function that computes in float64 inside gives its result rounded
	// to float32, the precision of θ and of every result here.
	return p, Convert(y, Float32)
}

// ValueAndGrad returns f(θ) and its gradient. f must return a scalar.
func ValueAndGrad(f func(Var) Var, θ []float32) (float32, []float32, error) {
	t, _, y := record(f, θ)
	defer release(t)
	g, err := t.Grad(y)
	if err != nil {
		return 0, nil, err
	}
	return y.Item(), flat.Clone(g), nil
}

// ValueAndGradAux is ValueAndGrad for a function that also returns an
// auxiliary value, which is passed through undifferentiated (JAX's has_aux).
// Vars inside aux stay readable: the tape is not reset.
func ValueAndGradAux[A any](f func(Var) (Var, A), θ []float32) (float32, A, []float32, error) {
	var aux A
	// The tape is not pooled: aux may hold Vars that must stay readable.
	t := NewTape()
	_, y := recordOn(t, func(p Var) Var {
		var v Var
		v, aux = f(p)
		return v
	}, θ)
	g, err := t.Grad(y)
	if err != nil {
		return 0, aux, nil, err
	}
	return y.Item(), aux, flat.Clone(g), nil
}

// VJP returns Jᵀu, where J is the Jacobian of f at θ and u has f's output size.
func VJP(f func(Var) Var, θ, u []float32) ([]float32, error) {
	t, p, y := record(f, θ)
	defer release(t)
	if t.err != nil {
		return nil, t.err
	}
	if len(u) != y.Size() {
		return nil, errorf("VJP: u has %d elements, want %d (f's output, shape %v)", len(u), y.Size(), y.Shape())
	}
	g := make([]float32, len(θ))
	t.reverse(p.id, y, t.Const(flat.Tensor{Shape: y.Shape(), Data: u}), []int32{p.id}, [][]float32{g}, nil, false)
	return g, t.err
}

// JVP returns J·dir, where J is the Jacobian of f at θ, by forward mode.
func JVP(f func(Var) Var, θ, dir []float32) ([]float32, error) {
	t, p, y := record(f, θ)
	defer release(t)
	if t.err != nil {
		return nil, t.err
	}
	if len(dir) != len(θ) {
		return nil, errorf("JVP: dir has %d elements, want %d (θ's length)", len(dir), len(θ))
	}
	tan := t.tangent(p, y, dir)
	if t.err != nil {
		return nil, t.err
	}
	return flat.Clone(tan), nil
}

// tangent runs one forward sweep from p with direction dir and returns the
// tangent of y (zeros if y does not depend on p), owned by the tape.
func (t *Tape) tangent(p, y Var, dir []float32) []float32 {
	seed := Convert(t.Const(flat.Tensor{Shape: p.Shape(), Data: dir}), p.Precision())
	slots := t.forwardSweep(p.id, y.id+1, 1, []int32{p.id}, []Var{seed})
	if t.err != nil {
		return nil
	}
	out := t.f32.zeroed(y.Size())
	if s := slots[y.id-p.id]; s >= 0 {
		if nd := &t.nodes[s]; nd.f64 {
			for i, v := range nd.data64 {
				out[i] = float32(v)
			}
		} else {
			copy(out, nd.data)
		}
	}
	return out
}

// gradVarOf is the differentiable gradient of y with respect to the Param p.
func (t *Tape) gradVarOf(p, y Var) Var {
	if !t.checkScalar("gradient", y) {
		return t.failed()
	}
	g := t.reverse(p.id, y, t.fullOf(y.id, 1, y.Shape()...), []int32{p.id}, nil, nil, false)
	if t.err != nil {
		return t.failed()
	}
	if g[0].IsZero() {
		return t.fullOf(p.id, 0, p.Shape()...)
	}
	return g[0]
}

// HVP returns H·dir, where H is the Hessian of the scalar f at θ, by
// forward-over-reverse: the forward-mode derivative of the recorded gradient.
func HVP(f func(Var) Var, θ, dir []float32) ([]float32, error) {
	t, p, g := recordGrad("HVP", f, θ, dir)
	defer release(t)
	if t.err != nil {
		return nil, t.err
	}
	hv := t.tangent(p, g, dir)
	return flat.Clone(hv), t.err
}

// recordGrad records f at θ on a recycled tape (the caller must release
// it) and its differentiable gradient g with respect to p, for a Hessian
// product along dir, whose length it checks against θ's (the error names
// the caller, name). Errors are left on the tape.
func recordGrad(name string, f func(Var) Var, θ, dir []float32) (t *Tape, p, g Var) {
	t, p, y := record(f, θ)
	if len(dir) != len(θ) && t.err == nil {
		t.fail(errorf("%s: dir has %d elements, want %d (θ's length)", name, len(dir), len(θ)))
	}
	return t, p, t.gradVarOf(p, y)
}

// HVPOf returns H·dir, where H is the Hessian of the scalar loss recorded on
// t with respect to its Param p, by forward-over-reverse on this tape. The
// result is owned by the tape until Reset; with a reused tape the call
// allocates nothing once warm.
func (t *Tape) HVPOf(loss, p Var, dir []float32) ([]float32, error) {
	if t.err == nil && t.check("HVPOf", p) && len(dir) != p.Size() {
		t.fail(errorf("HVPOf: dir has %d elements, want %d (the Param's size)", len(dir), p.Size()))
	}
	if t.err == nil && t.nodes[p.id].kind != kindParam {
		t.fail(errorf("HVPOf: p is not a Param"))
	}
	if t.err != nil {
		return nil, t.err
	}
	g := t.gradVarOf(p, loss)
	if t.err != nil {
		return nil, t.err
	}
	hv := t.tangent(p, g, dir)
	return hv, t.err
}

// HVPReverse returns H·dir by reverse-over-reverse: the gradient of
// ⟨∇f, dir⟩. It cross-checks HVP.
func HVPReverse(f func(Var) Var, θ, dir []float32) ([]float32, error) {
	t, p, g := recordGrad("HVPReverse", f, θ, dir)
	defer release(t)
	if t.err != nil {
		return nil, t.err
	}
	s := Sum(Mul(g, t.Const(flat.Tensor{Shape: p.Shape(), Data: dir})))
	if t.err != nil {
		return nil, t.err
	}
	hv := make([]float32, len(θ))
	t.reverse(p.id, s, t.Full(1), []int32{p.id}, [][]float32{hv}, nil, false)
	return hv, t.err
}

// Jacobian returns the Jacobian of f at θ as a tensor with one row per
// output and one column per element of θ. It runs reverse mode row by row when f has fewer
// outputs than inputs, and forward mode otherwise, all directions in one
// sweep.
func Jacobian(f func(Var) Var, θ []float32) (flat.Tensor, error) {
	t, p, y := record(f, θ)
	defer release(t)
	if t.err != nil {
		return flat.Tensor{}, t.err
	}
	return t.jacobian(p, y)
}

func (t *Tape) jacobian(p, y Var) (flat.Tensor, error) {
	m, n := y.Size(), p.Size()
	J := flat.New(m, n)
	if m <= n {
		for i := 0; i < m; i++ {
			seed := t.Full(0, y.Shape()...)
			seed.Data()[i] = 1
			t.reverse(p.id, y, seed, []int32{p.id}, [][]float32{J.Data[i*n : (i+1)*n]}, nil, false)
		}
		return J, t.err
	}
	if err := t.forwardColumns(J, p, y); err != nil {
		return flat.Tensor{}, err
	}
	return J, nil
}

// forwardColumns sets column j of J (out.Size() × p.Size()) to the forward
// derivative of out along the j-th coordinate direction of p, all
// directions in one sweep.
func (t *Tape) forwardColumns(J flat.Tensor, p, out Var) error {
	n := p.Size()
	seeds := make([]Var, n)
	for j := range seeds {
		e := t.Full(0, n)
		e.Data()[j] = 1
		seeds[j] = e
	}
	slots := t.forwardSweep(p.id, out.id+1, n, []int32{p.id}, seeds)
	if t.err != nil {
		return t.err
	}
	for j := 0; j < n; j++ {
		if s := slots[int(out.id-p.id)*n+j]; s >= 0 {
			for i, v := range t.nodes[s].data {
				J.Data[i*n+j] = v
			}
		}
	}
	return nil
}

// Hessian returns the Hessian of the scalar f at θ as a square tensor of
// side len(θ). It is the forward-mode Jacobian of the recorded gradient,
// all directions in one sweep.
func Hessian(f func(Var) Var, θ []float32) (flat.Tensor, error) {
	t, p, y := record(f, θ)
	defer release(t)
	g := t.gradVarOf(p, y)
	if t.err != nil {
		return flat.Tensor{}, t.err
	}
	n := len(θ)
	H := flat.New(n, n)
	if err := t.forwardColumns(H, p, g); err != nil {
		return flat.Tensor{}, err
	}
	return H, nil
}
