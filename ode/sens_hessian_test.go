package ode_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/flatkit/flatkit/internal/lotkavolterra"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/proptest"
)

// CVODES's cvsHessian_ASA_FSA problem: y1' = −p1·y1² − y3, y2' = −y2,
// y3' = −p2²·y2·y3, y(0) = (1, 1, 1), p = (1, 2), on [0, 2], with
// G = ∫ ½‖y‖² dt. Reference values from issue 31.
var (
	cvhG = 0.53087859062954
	cvhP = []float64{-0.1283786546563, 0.0180367608548}
	cvhH = []float64{0.1562804308205, -0.07867780659754, -0.07867780659754, 0.0898143436292}
)

func cvhF(du, y []float64, p []float32, _ float64) {
	p1, p2 := float64(p[0]), float64(p[1])
	du[0] = -p1*y[0]*y[0] - y[2]
	du[1] = -y[1]
	du[2] = -p2 * p2 * y[1] * y[2]
}

func cvhJVP(jv, y, v []float64, p []float32, dp []float64, _ float64) {
	p1, p2 := float64(p[0]), float64(p[1])
	jv[0] = -2*p1*y[0]*v[0] - v[2]
	jv[1] = -v[1]
	jv[2] = -p2 * p2 * (v[1]*y[2] + y[1]*v[2])
	if dp != nil {
		jv[0] -= dp[0] * y[0] * y[0]
		jv[2] -= 2 * p2 * dp[1] * y[1] * y[2]
	}
}

func cvhVJP(gu, gp, w, y []float64, p []float32, _ float64) {
	p1, p2 := float64(p[0]), float64(p[1])
	gu[0] += -2 * p1 * y[0] * w[0]
	gu[1] += -w[1] - p2*p2*y[2]*w[2]
	gu[2] += -w[0] - p2*p2*y[1]*w[2]
	if gp != nil {
		gp[0] -= w[0] * y[0] * y[0]
		gp[1] -= 2 * p2 * y[1] * y[2] * w[2]
	}
}

func cvhVJPJVP(gu, gp, hu, hp, w, wd, y, yd []float64, p []float32, pd []float64, t float64) {
	cvhVJP(gu, gp, w, y, p, t)
	cvhVJP(hu, hp, wd, y, p, t)
	p1, p2 := float64(p[0]), float64(p[1])
	var d1, d2 float64
	if pd != nil {
		d1, d2 = pd[0], pd[1]
	}
	hu[0] += -2 * (d1*y[0] + p1*yd[0]) * w[0]
	hu[1] += -(2*p2*d2*y[2] + p2*p2*yd[2]) * w[2]
	hu[2] += -(2*p2*d2*y[1] + p2*p2*yd[1]) * w[2]
	hp[0] -= 2 * w[0] * y[0] * yd[0]
	hp[1] -= 2 * (d2*y[1]*y[2] + p2*(yd[1]*y[2]+y[1]*yd[2])) * w[2]
}

func cvhProblem() ode.Problem[float64] {
	return ode.Problem[float64]{F: cvhF, JVP: cvhJVP, VJP: cvhVJP, VJPJVP: cvhVJPJVP,
		U0: []float64{1, 1, 1}, T0: 0, T1: 2, P: []float32{1, 2}}
}

func cvhLoss(exact bool) ode.HvLoss[float64] {
	l := ode.HvLoss[float64]{Loss: ode.Loss[float64]{
		Running: func(y []float64, _ []float32, _ float64) float64 {
			return (y[0]*y[0] + y[1]*y[1] + y[2]*y[2]) / 2
		},
		RunningGradient: func(gu, _, y []float64, _ []float32, _ float64) {
			for i, v := range y {
				gu[i] += v
			}
		},
	}}
	if exact {
		l.RunningHv = func(hu, _, _, yd []float64, _ []float32, _ []float64, _ float64) {
			for i, v := range yd {
				hu[i] += v
			}
		}
	}
	return l
}

// The Hessian of cvsHessian_ASA_FSA matches CVODES's figures to 1e-6
// relative, with explicit and stiff methods, with the exact products and
// with the loss's second derivative by differences.
func TestHessianVectorCVODES(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		m     ode.Method
		exact bool
	}{
		{"Vern7", ode.Vern7(), true},
		{"Tsit5", ode.Tsit5(), true},
		{"Rodas5P", ode.Rodas5P(), true},
		{"BDF", ode.BDF(), true},
		{"Vern7/loss-by-differences", ode.Vern7(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prob := cvhProblem()
			hs, err := ode.NewHvSolver(prob, tc.m, ode.InterpolatingAdjoint{}, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatal(err)
			}
			loss := cvhLoss(tc.exact)
			for k := range 2 {
				v := make([]float64, 5)
				v[k] = 1
				r, err := hs.Hv(ctx, prob.P, loss, v)
				if err != nil {
					t.Fatal(err)
				}
				worst := relErr(r.Value, cvhG)
				for i := range 2 {
					worst = max(worst, relErr(r.P[i], cvhP[i]), relErr(r.HvP[i], cvhH[k*2+i]))
				}
				t.Logf("v = e%d: worst relative error %.2g (Hv %.13g)", k, worst, r.HvP)
				if worst > 1e-6 {
					t.Errorf("v = e%d: G = %.13g, dG/dp = %.13g, Hv = %.13g; want %.13g, %.13g, %.13g (worst relative error %.2g > 1e-6)",
						k, r.Value, r.P, r.HvP, cvhG, cvhP, cvhH[2*k:2*k+2], worst)
				}
			}
		})
	}
}

// With FiniteDiff and no VJPJVP the second-order product is taken by
// differences of VJPs: the Hessian is then good to about 1e-5.
func TestHessianVectorFiniteDiffProducts(t *testing.T) {
	prob := cvhProblem()
	prob.VJPJVP = nil
	if _, err := ode.NewHvSolver(prob, ode.Vern7(), ode.InterpolatingAdjoint{}); err == nil {
		t.Fatal("NewHvSolver without VJPJVP and FiniteDiff: no error, want one naming VJPJVP")
	}
	prob.JVP = nil
	H, err := ode.FullHessian(context.Background(), prob, ode.Vern7(), cvhLoss(false), ode.InterpolatingAdjoint{FiniteDiff: true}, ode.Tol(1e-10, 1e-12))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		for j := range 2 {
			if e := relErr(H[i*5+j], cvhH[i*2+j]); e > 1e-5 {
				t.Errorf("H[%d][%d] = %.10g, want %.10g (relative error %.2g > 1e-5)", i, j, H[i*5+j], cvhH[i*2+j], e)
			}
		}
	}
}

func lvHvProblem() ode.Problem[float64] {
	prob := lvProblem()
	prob.VJPJVP = lotkavolterra.VJPJVP[float64]
	return prob
}

// lvPointLoss is a loss at several times with a Point form, whose
// second derivative HvSolver takes by differences unless exact.
func lvPointLoss(exact bool) ode.HvLoss[float64] {
	l := ode.HvLoss[float64]{Loss: ode.Loss[float64]{At: []float64{3, 10, 6.5},
		Point: func(i int, _ float64, u, dl []float64) float64 {
			c := float64(i + 1)
			a, b := 1-u[0], 1-u[1]
			dl[0], dl[1] = -c*a+c*u[1]*u[1], -c*b+2*c*u[0]*u[1]
			return c*(a*a+b*b)/2 + c*u[0]*u[1]*u[1]
		},
		Running: func(u []float64, p []float32, _ float64) float64 {
			return float64(p[0]) * u[0] * u[1] / 10
		},
		RunningGradient: func(du, dp, u []float64, p []float32, _ float64) {
			du[0] += float64(p[0]) * u[1] / 10
			du[1] += float64(p[0]) * u[0] / 10
			dp[0] += u[0] * u[1] / 10
		},
	}}
	if exact {
		l.PointHv = func(i int, _ float64, u, ud, hv []float64) {
			c := float64(i + 1)
			hv[0] = c*ud[0] + 2*c*u[1]*ud[1]
			hv[1] = c*ud[1] + 2*c*u[1]*ud[0] + 2*c*u[0]*ud[1]
		}
		l.RunningHv = func(hu, hp, u, ud []float64, p []float32, pd []float64, _ float64) {
			p0 := float64(p[0])
			hu[0] += p0 * ud[1] / 10
			hu[1] += p0 * ud[0] / 10
			hp[0] += (ud[0]*u[1] + u[0]*ud[1]) / 10
			if pd != nil {
				hu[0] += pd[0] * u[1] / 10
				hu[1] += pd[0] * u[0] / 10
			}
		}
	}
	return l
}

// lvGradAt is dL/d(θ, u0) at θ (float32-exact) and u0, by the adjoint.
func lvGradAt(t *testing.T, gs *ode.GradientSolver[float64], loss ode.Loss[float64], θ []float32, u0 []float64) []float64 {
	t.Helper()
	prob := lvHvProblem()
	prob.P, prob.U0 = θ, u0
	g, err := gs.GradientFor(context.Background(), prob, loss)
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]float64(nil), g.P...), g.U0...)
}

// lvHessianRef is the Lotka-Volterra Hessian of loss with respect to θ
// and u0 (row-major, side 6) at lvHvProblem's θ and u0 by
// Richardson-extrapolated central differences of the gradient with steps
// 2^-9 and 2^-10, exact in float32 for these θ, and its largest
// magnitude.
func lvHessianRef(t *testing.T, loss ode.Loss[float64]) ([]float64, float64) {
	t.Helper()
	θ := []float32{1.5, 1, 3, 1}
	u0 := []float64{1, 1}
	gs, err := ode.NewGradientSolver(lvHvProblem(), ode.Vern7(), ode.InterpolatingAdjoint{}, ode.Tol(1e-12, 1e-14))
	if err != nil {
		t.Fatal(err)
	}
	const N = 6
	ref := make([]float64, N*N)
	for k := range N {
		copy(ref[k*N:], richardsonColumn(func(s float64) []float64 {
			th, u := append([]float32(nil), θ...), append([]float64(nil), u0...)
			if k < 4 {
				th[k] = float32(float64(th[k]) + s)
			} else {
				u[k-4] += s
			}
			return lvGradAt(t, gs, loss, th, u)
		}))
	}
	var scale float64
	for _, v := range ref {
		scale = max(scale, math.Abs(v))
	}
	return ref, scale
}

// The Lotka-Volterra Hessian by products along the unit vectors is
// symmetric and equals central differences of the gradient, with the
// save-time and running costs' second derivatives exact or by differences,
// explicit and stiff.
func TestHessianVectorLotkaVolterra(t *testing.T) {
	ctx := context.Background()
	const N = 6
	ref, scale := lvHessianRef(t, lvPointLoss(true).Loss)
	for _, tc := range []struct {
		name  string
		m     ode.Method
		exact bool
	}{
		{"Vern7", ode.Vern7(), true},
		{"Vern7/loss-by-differences", ode.Vern7(), false},
		{"Rodas5P", ode.Rodas5P(), true},
		{"BDF", ode.BDF(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tol := ode.Tol(1e-11, 1e-13)
			want, sym := 1e-7, 1e-9
			if tc.name == "BDF" {
				tol, want, sym = ode.Tol(1e-9, 1e-11), 1e-6, 1e-6
			}
			H, err := ode.FullHessian(ctx, lvHvProblem(), tc.m, lvPointLoss(tc.exact), ode.InterpolatingAdjoint{}, tol)
			if err != nil {
				t.Fatal(err)
			}
			var asym, dev float64
			for i := range N * N {
				asym = max(asym, math.Abs(H[i]-H[(i%N)*N+i/N])/scale)
				dev = max(dev, math.Abs(H[i]-ref[i])/scale)
			}
			t.Logf("asymmetry %.2g, against differences %.2g of max|H|", asym, dev)
			for i := range N {
				for j := range N {
					if e := math.Abs(H[i*N+j]-H[j*N+i]) / scale; e > sym {
						t.Errorf("H not symmetric: H[%d][%d] = %.12g, H[%d][%d] = %.12g (%.2g of max|H| > %.0g)", i, j, H[i*N+j], j, i, H[j*N+i], e, sym)
					}
					if e := math.Abs(H[i*N+j]-ref[i*N+j]) / scale; e > want {
						t.Errorf("H[%d][%d] = %.12g, differences of the gradient %.12g (%.2g of max|H| > %.0g)", i, j, H[i*N+j], ref[i*N+j], e, want)
					}
				}
			}
		})
	}
}

// checkHvU0 runs proptest.CheckHv on the initial state of prob at u0:
// the products' u0 rows against Richardson differences of the gradient
// with respect to u0, and their symmetry.
func checkHvU0(t *testing.T, prob ode.Problem[float64], loss ode.HvLoss[float64], u0 []float64) {
	t.Helper()
	ctx := context.Background()
	gs, err := ode.NewGradientSolver(prob, ode.Vern7(), ode.InterpolatingAdjoint{}, ode.Tol(1e-12, 1e-14))
	if err != nil {
		t.Fatal(err)
	}
	hs, err := ode.NewHvSolver(prob, ode.Vern7(), ode.InterpolatingAdjoint{}, ode.Tol(1e-12, 1e-14))
	if err != nil {
		t.Fatal(err)
	}
	grad := func(u0, g []float64) error {
		p := prob
		p.U0 = u0
		r, err := gs.GradientFor(ctx, p, loss.Loss)
		if err != nil {
			return err
		}
		copy(g, r.U0)
		return nil
	}
	v := make([]float64, len(prob.P)+len(u0))
	hv := func(u0, dir, out []float64) error {
		p := prob
		p.U0 = u0
		copy(v[len(prob.P):], dir)
		r, err := hs.HvFor(ctx, p, loss, v)
		if err != nil {
			return err
		}
		copy(out, r.HvU0)
		return nil
	}
	proptest.CheckHv(t, grad, hv, u0)
}

// proptest.CheckHv on the initial state of Lotka-Volterra, for several
// parameter sets.
func TestHessianVectorCheckHv(t *testing.T) {
	for _, θ := range [][]float32{{1.5, 1, 3, 1}, {0.75, 0.5, 1.25, 2}, {2, 1.5, 1, 0.5}} {
		prob := lvHvProblem()
		prob.P = θ
		checkHvU0(t, prob, lvPointLoss(true), []float64{1, 1.2})
	}
}

// A float32 state: the exact products give the float64 Hessian to
// float32's accuracy.
func TestHessianVectorFloat32(t *testing.T) {
	ctx := context.Background()
	H64, err := ode.FullHessian(ctx, lvHvProblem(), ode.Tsit5(), ode.HvLoss[float64]{Loss: lvLoss()}, ode.InterpolatingAdjoint{}, ode.Tol(1e-10, 1e-12))
	if err != nil {
		t.Fatal(err)
	}
	prob := ode.Problem[float32]{F: lotkavolterra.F[float32], JVP: lotkavolterra.JVP[float32], VJP: lotkavolterra.VJP[float32],
		VJPJVP: lotkavolterra.VJPJVP[float32], U0: []float32{1, 1}, T1: 10, P: []float32{1.5, 1, 3, 1}}
	loss := ode.HvLoss[float32]{Loss: ode.Loss[float32]{At: []float64{10}, Saved: func(_ []float64, us, dl [][]float32) float64 {
		a, b := 1-us[0][0], 1-us[0][1]
		dl[0][0], dl[0][1] = -a, -b
		return float64(a*a+b*b) / 2
	}}}
	H32, err := ode.FullHessian(ctx, prob, ode.Tsit5(), loss, ode.InterpolatingAdjoint{}, ode.Tol(1e-5, 1e-7))
	if err != nil {
		t.Fatal(err)
	}
	scale := 0.0
	for _, v := range H64 {
		scale = max(scale, math.Abs(v))
	}
	for i, v := range H32 {
		if e := math.Abs(float64(v)-H64[i]) / scale; e > 1e-3 {
			t.Errorf("float32 H[%d] = %g, float64 %g (%.2g of max|H| > 1e-3)", i, v, H64[i], e)
		}
	}
}

// A warm HvSolver allocates nothing per product.
func TestHessianVectorAllocatesNothingWarm(t *testing.T) {
	for _, m := range []ode.Method{ode.Tsit5(), ode.Rodas5P()} {
		for _, exact := range []bool{true, false} {
			prob := lvHvProblem()
			if !exact { // the second-order product by differences too
				prob.VJPJVP = nil
			}
			hs, err := ode.NewHvSolver(prob, m, ode.InterpolatingAdjoint{FiniteDiff: !exact}, ode.Tol(1e-6, 1e-8))
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s (exact products %v)", m.Name(), exact)
			checkHvWarmAllocs(t, name, hs, []float32{1.5, 1, 3, 1}, lvPointLoss(exact), []float64{0.3, -1, 0.5, 0.25, 1, -0.5})
		}
	}
}

// The unsupported cases and wrong arguments are errors that say what was
// wanted.
func TestHessianVectorErrors(t *testing.T) {
	ctx := context.Background()
	loss := ode.HvLoss[float64]{Loss: lvLoss()}
	for _, tc := range []struct {
		name string
		edit func(*ode.Problem[float64]) (ode.Method, ode.InterpolatingAdjoint)
	}{
		{"matrix-free structure with a direct solver", func(p *ode.Problem[float64]) (ode.Method, ode.InterpolatingAdjoint) {
			p.JacStructure = ode.MatrixFreeJacobian{}
			return ode.Rodas5PMethod{Linear: ode.DenseLU{}}, ode.InterpolatingAdjoint{}
		}},
		{"no JVP", func(p *ode.Problem[float64]) (ode.Method, ode.InterpolatingAdjoint) {
			p.JVP = nil
			return ode.Tsit5(), ode.InterpolatingAdjoint{}
		}},
	} {
		prob := lvHvProblem()
		m, s := tc.edit(&prob)
		hs, err := ode.NewHvSolver(prob, m, s)
		if err == nil { // some are found when the first product builds the solves
			_, err = hs.Hv(ctx, prob.P, loss, make([]float64, 6))
		}
		if err == nil {
			t.Errorf("%s: no error", tc.name)
		} else {
			t.Logf("%s: %v", tc.name, err)
		}
	}
	// Checkpoints are supported (sens_hessian_ckpt_test.go).
	if _, err := ode.NewHvSolver(lvHvProblem(), ode.Tsit5(), ode.InterpolatingAdjoint{Checkpoints: 4}); err != nil {
		t.Errorf("Checkpoints 4: %v, want no error", err)
	}
	hs, err := ode.NewHvSolver(lvHvProblem(), ode.Tsit5(), ode.InterpolatingAdjoint{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hs.Hv(ctx, []float32{1.5, 1, 3, 1}, loss, make([]float64, 5)); err == nil {
		t.Error("a direction of 5 components: no error, want one asking for 6")
	}
	if _, err := hs.Hv(ctx, []float32{1.5, 1, 3, 1}, loss, []float64{0, 0, 0, 0, math.NaN(), 0}); err == nil {
		t.Error("a NaN direction: no error")
	}
	if err := hs.Hessian(ctx, lvHvProblem(), loss, make([]float64, 35)); err == nil {
		t.Error("Hessian into 35 values: no error, want one asking for 36")
	}
}

// A span integrated backwards in time, with save times at both ends and
// a running cost: the products still match differences of the gradient.
func TestHessianVectorBackwardSpan(t *testing.T) {
	prob := lvHvProblem()
	prob.T0, prob.T1 = 3, 0
	loss := lvPointLoss(true)
	loss.At = []float64{3, 1.5, 0}
	checkHvU0(t, prob, loss, []float64{1, 1.2})
}

// With U0From the products are those of the loss as a function of θ
// alone: against Richardson differences of the gradient (which takes
// U0From through U0FromVJP) in θ's unit directions, for a linear U0From
// and a quadratic one.
func TestHessianVectorU0From(t *testing.T) {
	ctx := context.Background()
	θ := []float32{1.5, 1, 3, 1, 1, 1.25}
	for _, quadratic := range []bool{false, true} {
		prob := lvHvProblem()
		prob.P = θ
		prob.U0From = func(u0 []float64, p []float32) {
			u0[0], u0[1] = float64(p[4]), float64(p[5])
			if quadratic {
				u0[0] *= float64(p[4])
			}
		}
		prob.U0FromVJP = func(dp, w []float64, p []float32) {
			if quadratic {
				dp[4] += 2 * float64(p[4]) * w[0]
			} else {
				dp[4] += w[0]
			}
			dp[5] += w[1]
		}
		loss := lvPointLoss(true)
		tol := ode.Tol(1e-12, 1e-14)
		gs, err := ode.NewGradientSolver(prob, ode.Vern7(), ode.InterpolatingAdjoint{}, tol)
		if err != nil {
			t.Fatal(err)
		}
		gradAt := func(k int, s float64) []float64 {
			p := prob
			p.P = append([]float32(nil), θ...)
			p.P[k] = float32(float64(p.P[k]) + s)
			g, err := gs.GradientFor(ctx, p, loss.Loss)
			if err != nil {
				t.Fatal(err)
			}
			return append([]float64(nil), g.P...)
		}
		hs, err := ode.NewHvSolver(prob, ode.Vern7(), ode.InterpolatingAdjoint{}, tol)
		if err != nil {
			t.Fatal(err)
		}
		for k := range θ {
			col := richardsonColumn(func(s float64) []float64 { return gradAt(k, s) })
			v := make([]float64, 8)
			v[k] = 1
			r, err := hs.Hv(ctx, θ, loss, v)
			if err != nil {
				t.Fatal(err)
			}
			scale := 0.0
			for _, x := range col {
				scale = max(scale, math.Abs(x))
			}
			for i, want := range col {
				if e := math.Abs(r.HvP[i]-want) / scale; e > 1e-7 {
					t.Errorf("quadratic %v: (H·e%d)[%d] = %.12g, differences of the gradient %.12g (%.2g of the column's max)", quadratic, k, i, r.HvP[i], want, e)
				}
			}
		}
	}
}

// richardsonColumn is the derivative at 0 of the gradient grad(s) along
// one coordinate: central differences with steps 2^-9 and 2^-10, exact in
// float32 for the parameters of these tests, Richardson-extrapolated.
func richardsonColumn(grad func(s float64) []float64) []float64 {
	d := func(h float64) []float64 {
		gp, gm := grad(h), grad(-h)
		for i := range gp {
			gp[i] = (gp[i] - gm[i]) / (2 * h)
		}
		return gp
	}
	d1, d2 := d(0x1p-9), d(0x1p-10)
	for i := range d1 {
		d1[i] = (4*d2[i] - d1[i]) / 3
	}
	return d1
}
