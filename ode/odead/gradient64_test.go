package odead_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/lotkavolterra"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// Issue 33's bar: the ad right-hand sides in float64 give every
// sensitivity method the gradients of the hand-written products, to the
// references of ode's tests (cvsLotkaVolterra_ASA's dG/dp, dG/du0, dG/dT1
// to 1e-7 at rtol 1e-10; cvsRoberts_ASAi_dns's dG/dp), and agree with the
// hand-written products' gradients far closer than that.

var lvRefG = 0.00442487407340801

func lvLoss64() ode.Loss[float64] {
	return odead.Loss64([]float64{10}, func(_ []float64, us []ad.Var) ad.Var {
		d := ad.Sub(ad.FullLike(us[0], 1, 2), us[0])
		return ad.Scale(ad.Sum(ad.Mul(d, d)), 0.5)
	})
}

func lvHandLoss() ode.Loss[float64] {
	return ode.Loss[float64]{At: []float64{10}, Saved: func(ts []float64, us, dl [][]float64) float64 {
		a, b := 1-us[0][0], 1-us[0][1]
		dl[0][0], dl[0][1] = -a, -b
		return (a*a + b*b) / 2
	}}
}

func lvMaxRelErr64(g *ode.GradientResult[float64]) float64 {
	e := math.Abs(g.Value-lvRefG) / lvRefG
	for i, w := range lvRefP {
		e = max(e, math.Abs(g.P[i]-w)/math.Abs(w))
	}
	for i, w := range lvRefU0 {
		e = max(e, math.Abs(g.U0[i]-w)/math.Abs(w))
	}
	return max(e, math.Abs(g.T1-lvRefT1)/lvRefT1, math.Abs(g.T0+lvRefT1)/lvRefT1)
}

// relDiff is the largest relative difference between two gradients.
func relDiff(a, b *ode.GradientResult[float64]) float64 {
	e := math.Abs(a.Value-b.Value) / math.Abs(b.Value)
	for i := range b.P {
		e = max(e, math.Abs(a.P[i]-b.P[i])/math.Abs(b.P[i]))
	}
	for i := range b.U0 {
		e = max(e, math.Abs(a.U0[i]-b.U0[i])/math.Abs(b.U0[i]))
	}
	return max(e, math.Abs(a.T1-b.T1)/math.Abs(b.T1))
}

func TestLotkaVolterraGradientAD64(t *testing.T) {
	prob, err := odead.Problem(adLV, []float64{1, 1}, 0, 10, []float32{1.5, 1, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	hand := ode.Problem[float64]{F: lotkavolterra.F64, JVP: lotkavolterra.JVP64, VJP: lotkavolterra.VJP64, Jac: lotkavolterra.Jac64,
		U0: []float64{1, 1}, T0: 0, T1: 10, P: []float32{1.5, 1, 3, 1}}
	sens := []ode.Sensitivity{ode.ForwardSensitivity{}, ode.InterpolatingAdjoint{}, ode.InterpolatingAdjoint{Checkpoints: 10},
		ode.BacksolveAdjoint{}, ode.DiscreteAdjoint{}, ode.DiscreteAdjoint{Checkpoints: 10}}
	for _, m := range []ode.Method{ode.Tsit5(), ode.Vern7(), ode.Rodas5P(), ode.BDF()} {
		for k, s := range sens {
			_, discrete := s.(ode.DiscreteAdjoint)
			_, ia := s.(ode.InterpolatingAdjoint)
			if discrete && (m.Name() == "Rodas5P" || m.Name() == "BDF") || ia && k == 2 && m.Name() == "BDF" {
				continue // not supported by ode (issue 28)
			}
			t.Run(m.Name()+"/"+s.Name()+map[bool]string{true: "-ckpt"}[k == 2 || k == 5], func(t *testing.T) {
				opts := []ode.GradientOption{ode.Tol(1e-10, 1e-12)}
				g, err := ode.Gradient(context.Background(), prob, m, lvLoss64(), s, opts...)
				if err != nil {
					t.Fatal(err)
				}
				h, err := ode.Gradient(context.Background(), hand, m, lvHandLoss(), s, opts...)
				if err != nil {
					t.Fatal(err)
				}
				e, d := lvMaxRelErr64(g), relDiff(g, h)
				t.Logf("G=%.15g P=%.12g U0=%.12g T1=%.12g err=%.2e, against hand-written %.2e", g.Value, g.P, g.U0, g.T1, e, d)
				// BDF (order ≤ 5, not in ode's hand-written reference test)
				// is as far from the reference with hand-written products.
				if bound := map[bool]float64{false: 1e-7, true: 1e-6}[m.Name() == "BDF"]; e > bound {
					t.Errorf("max relative error against the reference %.3g > %g", e, bound)
				}
				if d > 1e-9 {
					t.Errorf("max relative difference from the hand-written products' gradient %.3g > 1e-9", d)
				}
			})
		}
	}
}

// robertson64 is cvsRoberts_ASAi_dns's right-hand side written with ad
// ops, for any precision: p = (0.04, 1e4, 3e7).
func robertson64(u, p ad.Var, _ float64) ad.Var {
	y1, y2, y3 := ad.Slice(u, 0, 1), ad.Slice(u, 1, 2), ad.Slice(u, 2, 3)
	r1 := ad.Mul(ad.Slice(p, 0, 1), y1)
	r2 := ad.Mul(ad.Slice(p, 1, 2), ad.Mul(y2, y3))
	r3 := ad.Mul(ad.Slice(p, 2, 3), ad.Square(y2))
	return ad.Concat(0, ad.Sub(r2, r1), ad.Sub(ad.Sub(r1, r2), r3), r3)
}

var (
	robRefG = 3.99825282e7
	robRefP = []float64{7.683773e5, -3.068921, 5.114890e-4}
)

func TestRobertsonGradientAD64(t *testing.T) {
	prob, err := odead.Problem(robertson64, []float64{1, 0, 0}, 0, 4e7, []float32{0.04, 1e4, 3e7})
	if err != nil {
		t.Fatal(err)
	}
	loss := ode.Loss[float64]{
		Running:         func(u []float64, p []float32, t float64) float64 { return u[2] },
		RunningGradient: func(du, dp, u []float64, p []float32, t float64) { du[2] += 1 },
	}
	opts := []ode.GradientOption{ode.TolPerComponent(1e-8, []float64{1e-10, 1e-16, 1e-8}), ode.MaxSteps(1e6)}
	for _, s := range []ode.Sensitivity{ode.InterpolatingAdjoint{}, ode.InterpolatingAdjoint{Checkpoints: 20}, ode.ForwardSensitivity{}} {
		t.Run(s.Name(), func(t *testing.T) {
			g, err := ode.Gradient(context.Background(), prob, ode.Rodas5P(), loss, s, opts...)
			if err != nil {
				t.Fatal(err)
			}
			e := math.Abs(g.Value-robRefG) / robRefG
			for i, w := range robRefP {
				e = max(e, math.Abs(g.P[i]-w)/math.Abs(w))
			}
			t.Logf("G=%.9g dG/dp=%.7g err=%.2e steps fwd %d bwd %d", g.Value, g.P, e, g.Forward.Accepted, g.Backward.Accepted)
			// The reference has 7 digits; ode's hand-written test holds 1e-4.
			if e > 1e-4 {
				t.Errorf("max relative error %.3g > 1e-4", e)
			}
		})
	}
}

// A universal ODE in float64: known terms plus NeuralRHS, the network's
// weights read from the float32 θ and computed in float64. Its adjoint
// gradient agrees with ForwardSensitivity's and with central differences
// of float64 solves in θ, far below float32's rounding.
func TestUniversalODEFloat64(t *testing.T) {
	net := model.Chain(model.Dense(2, 8), model.Tanh(), model.Dense(8, 2))
	θ, err := model.Init(net, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	nn := odead.NeuralRHS(net)
	rhs := func(u, p, _ ad.Var) ad.Var { return ad.Add(ad.Scale(u, -0.5), nn(u, p, 0)) }
	prob, err := odead.Problem(rhs, []float64{1, -0.5}, 0, 2, θ)
	if err != nil {
		t.Fatal(err)
	}
	loss := odead.Loss64([]float64{2}, func(_ []float64, us []ad.Var) ad.Var { return ad.Sum(ad.Square(us[0])) })
	ctx := context.Background()
	opts := []ode.GradientOption{ode.Tol(1e-11, 1e-13)}
	adj, err := ode.Gradient(ctx, prob, ode.Vern7(), loss, ode.InterpolatingAdjoint{}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := ode.Gradient(ctx, prob, ode.Vern7(), loss, ode.ForwardSensitivity{}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	value := func(θ []float32) float64 {
		p := prob
		p.P = θ
		sol, err := ode.Solve(ctx, p, ode.Vern7(), ode.Tol(1e-12, 1e-14))
		if err != nil {
			t.Fatal(err)
		}
		u := sol.U[len(sol.U)-1]
		return u[0]*u[0] + u[1]*u[1]
	}
	t.Logf("L=%.12g dL/dθ[:3]=%.12g (adjoint) %.12g (forward)", adj.Value, adj.P[:3], fwd.P[:3])
	for _, i := range []int{0, 5, 13, len(θ) - 1} {
		// A step of a power of two times θ_i's ulp keeps θ ± h exact in
		// float32; the difference is then the float64 solve's.
		h := float32(1.0 / 64)
		tp, tm := append([]float32(nil), θ...), append([]float32(nil), θ...)
		tp[i] += h
		tm[i] -= h
		fd := (value(tp) - value(tm)) / float64(2*h)
		if d := math.Abs(adj.P[i] - fwd.P[i]); d > 1e-8*math.Abs(fwd.P[i])+1e-12 {
			t.Errorf("dL/dθ[%d]: adjoint %.12g, forward %.12g", i, adj.P[i], fwd.P[i])
		}
		// Central differences at h have an O(h²) error: a loose bound here,
		// the tight one is between the two methods above.
		if d := math.Abs(adj.P[i] - fd); d > 1e-3*math.Abs(fd)+1e-6 {
			t.Errorf("dL/dθ[%d]: adjoint %.12g, finite differences %.12g", i, adj.P[i], fd)
		}
	}
}
