package wrongcube

import "github.com/flatkit/flatkit/ad"

// Cube is x³ elementwise with rules written with ad ops, so that they have
// derivatives too. Its VJP is scaled by VJPScale and its JVP by JVPScale;
// 1 gives the right rules. Both go through its derivative Deriv.
type Cube struct {
	VJPScale, JVPScale float32
	Deriv              *Square3
}

// Square3 is 3x², the derivative of Cube. It is a primitive too, whose own
// derivative 6x is scaled by Second; 1 is right.
type Square3 struct{ Second float32 }

// New is a Cube with the given scales of its VJP, its JVP and its
// derivative's derivative: New(1, 1, 1) has the right rules.
func New(vjp, jvp, second float32) *Cube {
	return &Cube{VJPScale: vjp, JVPScale: jvp, Deriv: &Square3{Second: second}}
}

func (*Cube) Name() string { return "Cube" }
func (*Cube) Shape(dst []int, in [][]int, _ ad.Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}
func (*Cube) Forward(f *ad.Forward) {
	for i, x := range f.In[0].Data {
		f.Out.Data[i] = x * x * x
	}
}
func (c *Cube) JVP(r *ad.Rule) ad.Var {
	return ad.Scale(ad.Mul(r.Tangent(0), ad.Apply(c.Deriv, ad.Attrs{}, r.In[0])), float64(c.JVPScale))
}
func (c *Cube) VJP(r *ad.Rule, cot ad.Var) {
	r.AddGrad(0, ad.Scale(ad.Mul(cot, ad.Apply(c.Deriv, ad.Attrs{}, r.In[0])), float64(c.VJPScale)))
}

func (*Square3) Name() string { return "Square3" }
func (*Square3) Shape(dst []int, in [][]int, _ ad.Attrs) ([]int, error) {
	return append(dst, in[0]...), nil
}
func (*Square3) Forward(f *ad.Forward) {
	for i, x := range f.In[0].Data {
		f.Out.Data[i] = 3 * x * x
	}
}
func (s *Square3) JVP(r *ad.Rule) ad.Var {
	return ad.Mul(r.Tangent(0), ad.Scale(r.In[0], float64(6*s.Second)))
}
func (s *Square3) VJP(r *ad.Rule, cot ad.Var) {
	r.AddGrad(0, ad.Mul(cot, ad.Scale(r.In[0], float64(6*s.Second))))
}
