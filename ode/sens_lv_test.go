package ode_test

import (
	"context"
	"math"
	"testing"

	"github.com/flatkit/flatkit/internal/lotkavolterra"
	"github.com/flatkit/flatkit/ode"
)

// The Lotka-Volterra gradient of SUNDIALS' cvsLotkaVolterra_ASA problem:
// p = (1.5, 1, 3, 1), u0 = (1, 1), t ∈ [0, 10], G = ‖1 − u(10)‖²/2.
// Reference values from CVODES at rtol 1e-12, good to ~1e-9.
var (
	lvRefG    = 0.00442487407340801
	lvRefP    = []float64{0.621961585551281, 0.0680014041508743, 0.169176463995893, 0.272560693950007}
	lvRefU0   = []float64{0.299599508303682, -0.0141518163448535}
	lvRefT1   = 0.178103386841548
	lvRefUEnd = []float64{1.02634476757509, 0.909691078136042}
)

// lvF, lvJVP, lvVJP and lvJac are the problem with its exact products.
var (
	lvF   = lotkavolterra.F64
	lvJVP = lotkavolterra.JVP64
	lvVJP = lotkavolterra.VJP64
	lvJac = lotkavolterra.Jac64

	lvParamJac = lotkavolterra.ParamJac64
)

func lvProblem() ode.Problem[float64] {
	return ode.Problem[float64]{F: lvF, JVP: lvJVP, VJP: lvVJP, Jac: lvJac,
		U0: []float64{1, 1}, T0: 0, T1: 10, P: []float32{1.5, 1, 3, 1}}
}

func lvLoss() ode.Loss[float64] {
	return ode.Loss[float64]{At: []float64{10}, Saved: func(ts []float64, us, dl [][]float64) float64 {
		a, b := 1-us[0][0], 1-us[0][1]
		dl[0][0], dl[0][1] = -a, -b
		return (a*a + b*b) / 2
	}}
}

// maxRelErr is the largest relative error of got against want over all
// components of the gradient.
func lvMaxRelErr(g *ode.GradientResult[float64]) float64 {
	e := math.Abs(g.Value-lvRefG) / lvRefG
	for i, w := range lvRefP {
		e = max(e, math.Abs(g.P[i]-w)/math.Abs(w))
	}
	for i, w := range lvRefU0 {
		e = max(e, math.Abs(g.U0[i]-w)/math.Abs(w))
	}
	e = max(e, math.Abs(g.T1-lvRefT1)/lvRefT1, math.Abs(g.T0+lvRefT1)/lvRefT1)
	return e
}

func TestLotkaVolterraGradientReference(t *testing.T) {
	methods := []struct {
		name string
		m    ode.Method
	}{{"Tsit5", ode.Tsit5()}, {"Vern7", ode.Vern7()}, {"DP5", ode.DP5()}, {"Rodas5P", ode.Rodas5P()}}
	sens := []ode.Sensitivity{ode.ForwardSensitivity{}, ode.ForwardSensitivity{NoErrorControl: true}, ode.InterpolatingAdjoint{}, ode.InterpolatingAdjoint{Checkpoints: 10},
		ode.BacksolveAdjoint{}, ode.DiscreteAdjoint{}, ode.DiscreteAdjoint{Checkpoints: 10}}
	for _, m := range methods {
		for _, s := range sens {
			name := m.name + "/" + s.Name()
			if fs, ok := s.(ode.ForwardSensitivity); ok && fs.NoErrorControl {
				name += "-noerrcon"
			}
			if ia, ok := s.(ode.InterpolatingAdjoint); ok && ia.Checkpoints > 0 {
				name += "-ckpt"
			}
			if da, ok := s.(ode.DiscreteAdjoint); ok {
				if m.name == "Rodas5P" {
					continue
				}
				if da.Checkpoints > 0 {
					name += "-ckpt"
				}
			}
			t.Run(name, func(t *testing.T) {
				g, err := ode.Gradient(context.Background(), lvProblem(), m.m, lvLoss(), s, ode.Tol(1e-10, 1e-12))
				if err != nil {
					t.Fatal(err)
				}
				e := lvMaxRelErr(g)
				t.Logf("G=%.15g P=%.12g U0=%.12g T0=%.12g T1=%.12g err=%.2e fwd=%d bwd=%d", g.Value, g.P, g.U0, g.T0, g.T1, e, g.Forward.Accepted, g.Backward.Accepted)
				if e > 1e-7 {
					t.Errorf("max relative error %.3g > 1e-7", e)
				}
			})
		}
	}
}

// ForwardSensitivity's sensitivity matrices, in the order of Loss.At,
// against finite differences of the solution in u0.
func TestForwardSensitivityMatrices(t *testing.T) {
	loss := lvLoss()
	loss.At = []float64{10, 2.5, 5}
	g, err := ode.Gradient(context.Background(), lvProblem(), ode.Tsit5(), loss, ode.ForwardSensitivity{}, ode.Tol(1e-10, 1e-12))
	if err != nil {
		t.Fatal(err)
	}
	solve := func(u0 []float64) [][]float64 {
		p := lvProblem()
		p.U0 = u0
		sol, err := ode.Solve(context.Background(), p, ode.Tsit5(), ode.Tol(1e-12, 1e-14), ode.SaveAt(loss.At...))
		if err != nil {
			t.Fatal(err)
		}
		return sol.U // ascending: 2.5, 5, 10
	}
	const h = 1e-5
	for j := 0; j < 2; j++ {
		up, um := []float64{1, 1}, []float64{1, 1}
		up[j] += h
		um[j] -= h
		sp, sm := solve(up), solve(um)
		for i, ti := range loss.At {
			k := map[float64]int{2.5: 0, 5: 1, 10: 2}[ti]
			for c := 0; c < 2; c++ {
				fd := (sp[k][c] - sm[k][c]) / (2 * h)
				got := g.Sens[i][(4+j)*2+c] // column 4+j: ∂u/∂u0_j
				if math.Abs(got-fd) > 1e-5*max(1, math.Abs(fd)) {
					t.Errorf("∂u_%d(%g)/∂u0_%d = %.9g, finite differences %.9g", c, ti, j, got, fd)
				}
			}
		}
	}
}

// ForwardSensitivity evaluates the sensitivities by n VJPs (the rows of
// the Jacobian) when the problem has a VJP and 2n ≤ len(p)+n, by Jac and
// ParamJac when it has both (then it needs neither JVP nor VJP), else by
// one JVP per column: each against the reference, and against the JVPs'.
func TestLotkaVolterraForwardSensitivityRowsAndJVPs(t *testing.T) {
	for _, m := range []ode.Method{ode.Tsit5(), ode.Vern7(), ode.Rodas5P()} {
		var gs [3]*ode.GradientResult[float64]
		for k, how := range []string{"JVPs", "VJP rows", "Jac and ParamJac"} {
			prob := lvProblem()
			switch how {
			case "JVPs":
				prob.VJP = nil
			case "Jac and ParamJac":
				prob.JVP, prob.VJP, prob.ParamJac = nil, nil, lvParamJac
			}
			g, err := ode.Gradient(context.Background(), prob, m, lvLoss(), ode.ForwardSensitivity{}, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatalf("%s, %s: %v", m.Name(), how, err)
			}
			if e := lvMaxRelErr(g); e > 1e-7 {
				t.Errorf("%s, %s: max relative error %.3g > 1e-7", m.Name(), how, e)
			}
			gs[k] = g
		}
		a := gs[0]
		for k, b := range gs[1:] {
			for i := range a.P {
				if d := math.Abs(a.P[i] - b.P[i]); d > 1e-8*math.Abs(a.P[i]) {
					t.Errorf("%s: dG/dp_%d by JVPs %.12g, by rows (%d) %.12g", m.Name(), i, a.P[i], k, b.P[i])
				}
			}
			for i := range a.U0 {
				if d := math.Abs(a.U0[i] - b.U0[i]); d > 1e-8*math.Abs(a.U0[i]) {
					t.Errorf("%s: dG/du0_%d by JVPs %.12g, by rows (%d) %.12g", m.Name(), i, a.U0[i], k, b.U0[i])
				}
			}
		}
		// The rows from Jac and ParamJac are those the unit VJPs give
		// (x·1 + y·0), so the two solves take the same steps.
		if gs[1].Forward != gs[2].Forward {
			t.Errorf("%s: VJP rows took %+v, Jac and ParamJac %+v", m.Name(), gs[1].Forward, gs[2].Forward)
		}
	}
}

// Plain Go F with finite-difference products (the methods' FiniteDiff):
// float64 state at rtol 1e-10, within the documented accuracy (the
// parameter columns ~1e-5 relative at worst; LV is linear in p, so its
// central differences are exact to rounding).
func TestLotkaVolterraGradientFiniteDiff(t *testing.T) {
	prob := ode.Problem[float64]{F: lvF, U0: []float64{1, 1}, T1: 10, P: []float32{1.5, 1, 3, 1}}
	for _, c := range []struct{ s, fd ode.Sensitivity }{
		{ode.ForwardSensitivity{}, ode.ForwardSensitivity{FiniteDiff: true}},
		{ode.InterpolatingAdjoint{}, ode.InterpolatingAdjoint{FiniteDiff: true}},
		{ode.DiscreteAdjoint{}, ode.DiscreteAdjoint{FiniteDiff: true}},
	} {
		t.Run(c.s.Name(), func(t *testing.T) {
			if _, err := ode.Gradient(context.Background(), prob, ode.Tsit5(), lvLoss(), c.s); err == nil {
				t.Fatal("no JVP/VJP and no FiniteDiff: want an error naming the missing product")
			} else {
				t.Log(err)
			}
			g, err := ode.Gradient(context.Background(), prob, ode.Tsit5(), lvLoss(), c.fd, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatal(err)
			}
			e := lvMaxRelErr(g)
			t.Logf("err=%.2e", e)
			if e > 1e-6 {
				t.Errorf("max relative error %.3g > 1e-6", e)
			}
		})
	}
}
