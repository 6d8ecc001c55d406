package layout

import (
	"fmt"
	"unsafe"
)

// Binder restructures values of the struct type S over one layout, typed:
// b.Restructure(θ, &s) takes a *S, not an any, so a local S need not escape
// to the heap, and it allocates nothing at all. That is the form for hot
// callbacks: an ODE right-hand side, a per-sample loss, a sampler's step.
//
//	b, err := layout.Bind[Params](lay, nil) // once
//	f := func(du, u []float64, θ []float32, t float64) {
//		var p Params                     // on the stack
//		if err := b.Restructure(θ, &p); err != nil { … }
//		… p.Rates[0] …
//	}
//
// For an ensemble whose trajectories have their own θ, the same Binder
// serves every trajectory and worker. Set each trajectory's θ as its
// problem's P in Ensemble's Modify, or give it a per-trajectory closure F
// there. F restructures the θ it is handed into its own local struct.
// A Binder is safe for concurrent use.
type Binder[S any] struct {
	lay  *Layout
	b    *binding
	name string // "*S", for errors: formatting s itself would make it escape
}

// Bind makes the Binder of struct type S over lay. shape, if not nil, is a
// value with the shape lay was made from: the lengths of its slices of
// structs, and which of its pointers are non-nil. A nil shape means the
// zero S, which fits a struct of []float32 fields, nested structs and
// arrays of structs. Bind checks that the fields and the layout's leaves match one to
// one, as Restructure does.
func Bind[S any](lay *Layout, shape *S) (*Binder[S], error) {
	if lay == nil {
		return nil, errorf("Bind: nil layout")
	}
	if shape == nil {
		shape = new(S)
	}
	b, _, err := lay.compile(shape)
	if err != nil {
		return nil, wrap("Bind", err)
	}
	return &Binder[S]{lay: lay, b: b, name: fmt.Sprintf("%T", shape)}, nil
}

// Layout returns the layout b restructures over.
func (b *Binder[S]) Layout() *Layout { return b.lay }

// Restructure points every []float32 field of *s at its range of θ, as
// Restructure does, without allocating. *s must have the shape the Binder
// was made for (a zero S does, when Bind's shape was nil); a value of
// another shape takes the reflective path of Restructure, which
// reports what differs.
func (b *Binder[S]) Restructure(θ []float32, s *S) error {
	if len(θ) != b.lay.n {
		return errorf("Binder.Restructure: buffer has %d floats, layout wants %d", len(θ), b.lay.n)
	}
	if s == nil {
		return errorf("Binder.Restructure: nil %s", b.name)
	}
	base := unsafe.Pointer(s)
	c := cursor{}
	if !b.b.walk(b.b.plan, base, &c, modeCheck, nil) || c.e != len(b.b.spans) || c.d != len(b.b.dyn) {
		// Not Restructure(θ, b.lay, s): passing s as an any would make
		// every caller's *s escape, the allocation a Binder exists to avoid.
		return errorf("Binder.Restructure: the %s has another shape than the Binder was made for (a slice of structs of another length, or a nil or non-nil pointer where Bind's shape had the other; around field %d of %d): Bind with a value of this shape, or use Restructure", b.name, c.e, len(b.b.spans))
	}
	c = cursor{}
	b.b.walk(b.b.plan, base, &c, modeView, θ)
	return nil
}
