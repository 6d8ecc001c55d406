package ad_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/layout"
)

var approx = cmpopts.EquateApprox(1e-5, 1e-6)

// quad is f(θ) = Σ_i a_i θ_i² + θ_0 θ_1, with a known gradient and Hessian.
func quad(p ad.Var) ad.Var {
	a := p.Tape().Const(flat.Tensor{Shape: []int{3}, Data: []float32{1, 2, 3}})
	sq := ad.Sum(ad.Mul(a, ad.Mul(p, p)))
	return ad.Add(sq, ad.Sum(ad.Mul(ad.Slice(p, 0, 1), ad.Slice(p, 1, 2))))
}

func TestJacobianAndHessian(t *testing.T) {
	θ := []float32{0.5, -1, 2}
	H, err := ad.Hessian(quad, θ)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{2, 1, 0, 1, 4, 0, 0, 0, 6}
	if diff := cmp.Diff(want, H.Data, approx); diff != "" {
		t.Errorf("Hessian (-want +got):\n%s", diff)
	}
	grad := func(p ad.Var) ad.Var { return ad.GradVar(quad, p) }
	J, err := ad.Jacobian(grad, θ) // the Jacobian of the gradient is the Hessian
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, J.Data, approx); diff != "" {
		t.Errorf("Jacobian of the gradient (-want +got):\n%s", diff)
	}
	// Two outputs of two inputs: reverse mode, row by row.
	tall := func(p ad.Var) ad.Var { return ad.Mul(ad.Reshape(ad.Slice(p, 0, 1), 1), p) } // p0·p
	J, err = ad.Jacobian(tall, []float32{2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float32{4, 0, 3, 2}, J.Data, approx); diff != "" {
		t.Errorf("Jacobian of p0·p (-want +got):\n%s", diff)
	}
	Jt, err := ad.Jacobian(func(p ad.Var) ad.Var { return ad.Sum(ad.Mul(p, p)) }, []float32{1, 2, 3})
	if err != nil || !cmp.Equal([]int{1, 3}, Jt.Shape) || !cmp.Equal([]float32{2, 4, 6}, Jt.Data) {
		t.Errorf("Jacobian of a scalar: %v, %v", Jt, err)
	}
	// More outputs than inputs: forward mode, all directions in one sweep.
	Jw, err := ad.Jacobian(func(p ad.Var) ad.Var { return ad.Concat(0, p, ad.Mul(p, p), ad.Scale(p, 3)) }, []float32{1, 2})
	want6 := []float32{1, 0, 0, 1, 2, 0, 0, 4, 3, 0, 0, 3}
	if err != nil || !cmp.Equal([]int{6, 2}, Jw.Shape) || !cmp.Equal(want6, Jw.Data) {
		t.Errorf("forward-mode Jacobian: %v, %v", Jw, err)
	}
}

func TestValueAndGradAux(t *testing.T) {
	v, aux, g, err := ad.ValueAndGradAux(func(p ad.Var) (ad.Var, string) {
		return ad.Sum(ad.Mul(p, p)), "aux"
	}, []float32{3, 4})
	if err != nil || v != 25 || aux != "aux" || !cmp.Equal(g, []float32{6, 8}) {
		t.Errorf("ValueAndGradAux = %v %q %v %v", v, aux, g, err)
	}
}

func TestGradWithRespectToInput(t *testing.T) {
	tp := ad.NewTape()
	θ := []float32{2, 3}
	in := []float32{5, 7}
	p := tp.Param(θ)
	xp := tp.Param(in)
	loss := ad.Sum(ad.Mul(p, xp))
	if err := tp.Backward(loss); err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(tp.GradWrt(p), in) || !cmp.Equal(tp.GradWrt(xp), θ) {
		t.Errorf("GradWrt: %v %v", tp.GradWrt(p), tp.GradWrt(xp))
	}
}

// TestViewsOfAParam checks the assembly of a flat gradient from views:
// disjoint views, a tied pair (the same range viewed twice), an overlapping
// pair, and a direct use of the whole vector, in first and second order.
func TestViewsOfAParam(t *testing.T) {
	f := func(p ad.Var) ad.Var {
		a := ad.View(p, 0, 2)    // θ0 θ1
		b := ad.View(p, 3, 2)    // θ3 θ4, a gap at θ2
		tied := ad.View(p, 3, 2) // the same range again
		over := ad.View(p, 4, 2) // θ4 θ5 overlaps b
		whole := ad.Sum(ad.Mul(p, p))
		s := ad.Add(ad.Sum(ad.Mul(a, a)), ad.Sum(ad.Mul(b, tied)))
		return ad.Add(ad.Add(s, ad.Sum(ad.Mul(over, over))), whole)
	}
	θ := []float32{1, 2, 3, 4, 5, 6}
	_, g, err := ad.ValueAndGrad(f, θ)
	if err != nil {
		t.Fatal(err)
	}
	// d/dθ: a²: 2θ0, 2θ1; b·tied = θ3²+θ4²: 2θ3, 2θ4; over²: 2θ4, 2θ5; whole: 2θ.
	want := []float32{4, 8, 6, 16, 30, 24}
	if !cmp.Equal(want, g) {
		t.Errorf("gradient %v, want %v", g, want)
	}
	H, err := ad.Hessian(f, θ)
	if err != nil {
		t.Fatal(err)
	}
	diag := []float32{4, 4, 2, 4, 6, 4}
	for i := range 6 {
		for j := range 6 {
			w := float32(0)
			if i == j {
				w = diag[i]
			}
			if got := H.Data[i*6+j]; math.Abs(float64(got-w)) > 1e-6 {
				t.Errorf("H[%d,%d] = %v, want %v", i, j, got, w)
			}
		}
	}
}

// TestForwardOverForward checks nested forward mode: the derivative along u
// of the derivative along v is ⟨u, H v⟩, for functions whose ops have
// JVP rules that are themselves differentiated in forward mode.
func TestForwardOverForward(t *testing.T) {
	fs := map[string]func(ad.Var) ad.Var{
		"LogSumExp": func(p ad.Var) ad.Var { return ad.Sum(ad.LogSumExp(ad.Reshape(p, 2, 3), 1)) },
		"Softmax·x": func(p ad.Var) ad.Var {
			x := ad.Reshape(p, 2, 3)
			return ad.Sum(ad.Mul(ad.Softmax(x, 1), x))
		},
		"Tanh MatMul": func(p ad.Var) ad.Var {
			a := ad.Reshape(ad.Slice(p, 0, 4), 2, 2)
			b := ad.Reshape(ad.Slice(p, 2, 6), 2, 2)
			return ad.Sum(ad.Tanh(ad.MatMul(a, b)))
		},
		"Max·Exp": func(p ad.Var) ad.Var { return ad.Sum(ad.Exp(ad.Max(ad.Reshape(p, 3, 2), 0))) },
	}
	θ := []float32{0.3, -0.8, 1.1, 0.4, -0.2, 0.9}
	u := []float32{0.5, 1, -0.25, 0.75, 1.5, -1}
	v := []float32{-1, 0.25, 0.5, 1, 0.125, 0.75}
	for name, f := range fs {
		t.Run(name, func(t *testing.T) {
			hv, err := ad.HVP(f, θ, v)
			if err != nil {
				t.Fatal(err)
			}
			want := float64(flat.Dot(u, hv))
			tp := ad.NewTape()
			x := tp.Param(θ)
			uv := tp.Const(flat.Tensor{Shape: []int{6}, Data: u})
			vv := tp.Const(flat.Tensor{Shape: []int{6}, Data: v})
			inner := func(y ad.Var) ad.Var { return ad.JVPVar(f, y, vv) }
			got := ad.JVPVar(inner, x, uv)
			if err := tp.Err(); err != nil {
				t.Fatal(err)
			}
			if math.Abs(float64(got.Item())-want) > 1e-5*(1+math.Abs(want)) {
				t.Errorf("forward-over-forward %v, ⟨u, H v⟩ %v", got.Item(), want)
			}
			// And reverse over forward: the gradient of the JVP is H v.
			tp.Reset()
			x = tp.Param(θ)
			vv = tp.Const(flat.Tensor{Shape: []int{6}, Data: v})
			g, err := tp.Grad(ad.JVPVar(f, x, vv))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(hv, g, cmpopts.EquateApprox(1e-5, 1e-6)); diff != "" {
				t.Errorf("reverse-over-forward (-HVP +got):\n%s", diff)
			}
		})
	}
}

func TestViewPath(t *testing.T) {
	b := layout.NewBuilder()
	b.Add("0.weight", 2, 2).Add("0.bias", 2)
	b.Group("1")
	lay, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	θ := []float32{1, 2, 3, 4, 5, 6}
	tp := ad.NewTape()
	p := tp.Param(θ)
	w := ad.ViewPath(p, lay, "0.weight")
	bias := ad.ViewPath(p, lay, "0.bias")
	g, err := tp.Grad(ad.Add(ad.Sum(ad.Mul(w, w)), ad.Sum(bias)))
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(w.Shape(), []int{2, 2}) || !cmp.Equal(g, []float32{2, 4, 6, 8, 1, 1}) {
		t.Errorf("ViewPath: shape %v, gradient %v", w.Shape(), g)
	}
	for _, tc := range []struct{ path, want string }{
		{"0.wieght", `"0.wieght": unknown path`},
		{"1", "group"},
	} {
		tp.Reset()
		ad.ViewPath(tp.Param(θ), lay, tc.path)
		wantErr(t, tp.Err(), tc.want)
	}
	tp.Reset()
	ad.ViewPath(tp.Param(θ[:4]), lay, "0.bias")
	wantErr(t, tp.Err(), "holds 4 floats, want 6")
}
