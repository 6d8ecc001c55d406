package ad

import (
	"fmt"

	"github.com/flatkit/flatkit/flat"
)

// Reductions: Sum and Mean over any axes, written with SumTo, and Max and
// Min over one axis.

// Sum returns the sum of v over the given axes, which are removed; with no
// axes, over all elements (a scalar).
func Sum(v Var, axes ...int) Var {
	s := v.Shape()
	if v.t == nil || v.t.err != nil || s == nil {
		return v.failedOn("Sum")
	}
	var keep, out [maxRank]int
	r := len(s)
	if r > maxRank {
		return v.t.fail(errRank("Sum", s))
	}
	if len(axes) == 0 && r > 0 {
		return SumTo(v) // to a scalar in one op (its cotangent is one BroadcastTo)
	}
	copy(keep[:], s)
	for _, ax := range axes {
		if ax < 0 {
			ax += r
		}
		if ax < 0 || ax >= r {
			return v.t.fail(errAxis("Sum", axes, s))
		}
		keep[ax] = 1
	}
	k := 0
	for i := range r {
		if !contains(axes, i, r) && len(axes) > 0 {
			out[k] = s[i]
			k++
		}
	}
	return Reshape(SumTo(v, keep[:r]...), out[:k]...)
}

// Mean returns the mean of v over the given axes (all with none).
func Mean(v Var, axes ...int) Var {
	s := v.Shape()
	if s == nil {
		return v.failedOn("Mean")
	}
	n := 1
	if len(axes) == 0 {
		n = sizeOf(s)
	}
	for _, ax := range axes {
		if ax < 0 {
			ax += len(s)
		}
		if ax >= 0 && ax < len(s) {
			n *= s[ax]
		}
	}
	if v.Precision() == Float32 {
		return Scale(Sum(v, axes...), float64(1/float32(n)))
	}
	return Scale(Sum(v, axes...), 1/float64(n))
}

func contains(axes []int, i, r int) bool {
	for _, ax := range axes {
		if ax == i || ax+r == i {
			return true
		}
	}
	return false
}

// Max and Min over one axis. The forward kernel saves the position of the
// chosen element (a flat index into the input) as a residual, so the rules
// are the linear index ops: the tangent is gathered from the chosen
// positions and the cotangent is scattered back to them. Ties choose the
// first position along the axis; a NaN is chosen over any number.

type extremumPrim struct {
	name string
	min  bool
}

var (
	maxOp = &extremumPrim{"Max", false}
	minOp = &extremumPrim{"Min", true}
)

// Max returns the maximum of x over axis, which is removed; a negative axis
// counts from the end. Its derivative flows to the first maximal element
// along the axis.
func Max(x Var, axis int) Var { return applyAxis(maxOp, x, axis) }

// Min returns the minimum of x over axis, which is removed; a negative axis
// counts from the end. Its derivative flows to the first minimal element
// along the axis.
func Min(x Var, axis int) Var { return applyAxis(minOp, x, axis) }

// applyAxis applies a primitive whose only attribute is an axis.
func applyAxis(p Primitive, x Var, axis int) Var {
	ints := [1]int{axis}
	return Apply(p, Attrs{Ints: ints[:]}, x)
}

// normAxis returns axis of a rank-r shape counted from the start, or false
// if it is out of range.
func normAxis(axis, r int) (int, bool) {
	if axis < 0 {
		axis += r
	}
	return axis, axis >= 0 && axis < r
}

// axisShape checks that a.Ints holds one axis of shape s and returns it,
// counted from the start.
func axisShape(a Attrs, s []int) (int, error) {
	if len(a.Ints) != 1 {
		return 0, fmt.Errorf("attributes %v; want one axis", a.Ints)
	}
	ax, ok := normAxis(a.Ints[0], len(s))
	if !ok {
		return 0, fmt.Errorf("axis %d out of range for shape %v, want %s", a.Ints[0], s, axisWant(len(s), false))
	}
	return ax, nil
}

// reducedShape appends s without axis ax to dst.
func reducedShape(dst, s []int, ax int) []int {
	dst = append(dst, s[:ax]...)
	return append(dst, s[ax+1:]...)
}

// axisSplit returns the sizes of the axes before ax, of ax, and after ax.
func axisSplit(s []int, ax int) (outer, n, inner int) {
	return sizeOf(s[:ax]), s[ax], sizeOf(s[ax+1:])
}

func (p *extremumPrim) Name() string { return p.name }
func (p *extremumPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	ax, err := axisShape(a, in[0])
	if err != nil {
		return dst, err
	}
	if in[0][ax] == 0 {
		return dst, fmt.Errorf("axis %d of shape %v is empty; want at least one element", a.Ints[0], in[0])
	}
	return reducedShape(dst, in[0], ax), nil
}

func (p *extremumPrim) Forward(f *Forward) {
	extremum(f.In[0], f.Out.Data, f.Save(len(f.Out.Data)), f.Attrs, p.min)
}
func (p *extremumPrim) Forward64(f *Forward) {
	extremum(f.In64[0], f.Out64.Data, f.Save(len(f.Out64.Data)), f.Attrs, p.min)
}

// extremum sets out to the maximum (or with isMin the minimum) of x over the
// axis of a, and arg to the flat positions in x of the chosen elements.
func extremum[T flat.Float](x flat.TensorOf[T], out []T, arg []int, a Attrs, isMin bool) {
	ax, _ := normAxis(a.Ints[0], len(x.Shape))
	outer, n, inner := axisSplit(x.Shape, ax)
	for o := 0; o < outer; o++ {
		base := o * n * inner
		best := out[o*inner : (o+1)*inner]
		pos := arg[o*inner : (o+1)*inner]
		copy(best, x.Data[base:base+inner])
		for i := range pos {
			pos[i] = base + i
		}
		for k := 1; k < n; k++ {
			off := base + k*inner
			row := x.Data[off : off+inner]
			if isMin {
				for i, v := range row {
					if v < best[i] || v != v && best[i] == best[i] {
						best[i], pos[i] = v, off+i
					}
				}
			} else {
				for i, v := range row {
					if v > best[i] || v != v && best[i] == best[i] {
						best[i], pos[i] = v, off+i
					}
				}
			}
		}
	}
}

func (p *extremumPrim) JVP(r *Rule) Var {
	return Gather(r.Tangent(0), r.Saved, r.Out.Shape()...)
}

func (p *extremumPrim) VJP(r *Rule, c Var) {
	r.AddGrad(0, ScatterAdd(c, r.Saved, r.In[0].Shape()...))
}
