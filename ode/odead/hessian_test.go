package odead_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// cvsHessianRHS is CVODES's cvsHessian_ASA_FSA right-hand side:
// y1' = −p1·y1² − y3, y2' = −y2, y3' = −p2²·y2·y3.
func cvsHessianRHS(u, p ad.Var, _ float64) ad.Var {
	y1, y2, y3 := ad.Slice(u, 0, 1), ad.Slice(u, 1, 2), ad.Slice(u, 2, 3)
	p1, p2 := ad.Slice(p, 0, 1), ad.Slice(p, 1, 2)
	d1 := ad.Neg(ad.Add(ad.Mul(p1, ad.Square(y1)), y3))
	d3 := ad.Neg(ad.Mul(ad.Square(p2), ad.Mul(y2, y3)))
	return ad.Concat(0, d1, ad.Neg(y2), d3)
}

// The ad bridge's VJPJVP gives CVODES's Hessian of cvsHessian_ASA_FSA
// to 1e-6 relative, recorded at every call and replayed.
func TestVJPJVPCVODESHessian(t *testing.T) {
	wantH := []float64{0.1562804308205, -0.07867780659754, -0.07867780659754, 0.0898143436292}
	wantP := []float64{-0.1283786546563, 0.0180367608548}
	loss := ode.HvLoss[float64]{Loss: ode.Loss[float64]{
		Running: func(y []float64, _ []float32, _ float64) float64 { return (y[0]*y[0] + y[1]*y[1] + y[2]*y[2]) / 2 },
		RunningGradient: func(gu, _, y []float64, _ []float32, _ float64) {
			for i, v := range y {
				gu[i] += v
			}
		},
	}}
	for _, tc := range []struct {
		name string
		opts []odead.Option
		m    ode.Method
	}{
		{"Vern7", nil, ode.Vern7()},
		{"Vern7/replayed", []odead.Option{odead.Replayable()}, ode.Vern7()},
		{"Rodas5P/replayed", []odead.Option{odead.Replayable()}, ode.Rodas5P()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prob := odead.Derivs64(cvsHessianRHS, 3, tc.opts...)
			prob.U0, prob.T1, prob.P = []float64{1, 1, 1}, 2, []float32{1, 2}
			H, err := ode.FullHessian(context.Background(), prob, tc.m, loss, ode.InterpolatingAdjoint{}, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatal(err)
			}
			g, err := ode.HessianVector(context.Background(), prob, tc.m, loss, []float64{1, 0, 0, 0, 0}, ode.InterpolatingAdjoint{}, ode.Tol(1e-10, 1e-12))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				if e := math.Abs(g.P[i]-wantP[i]) / math.Abs(wantP[i]); e > 1e-6 {
					t.Errorf("dG/dp[%d] = %.12g, want %.12g", i, g.P[i], wantP[i])
				}
				for j := range 2 {
					if e := math.Abs(H[i*5+j]-wantH[i*2+j]) / math.Abs(wantH[i*2+j]); e > 1e-6 {
						t.Errorf("H[%d][%d] = %.12g, want %.12g (relative error %.2g > 1e-6)", i, j, H[i*5+j], wantH[i*2+j], e)
					}
				}
			}
		})
	}
}

// The ad bridge's VJPJVP of a neural right-hand side equals the VJP's
// wd part plus central differences of the VJP along (ud, pd), with pd as
// float32 took it, in many random directions.
func TestVJPJVPNeuralAgainstDifferences(t *testing.T) {
	net := model.Chain(model.Dense(2, 8), model.Tanh(), model.Dense(8, 2))
	rng := rand.New(rand.NewPCG(5, 6))
	θ, err := model.Init(net, rng)
	if err != nil {
		t.Fatal(err)
	}
	for _, replay := range []bool{false, true} {
		var opts []odead.Option
		if replay {
			opts = append(opts, odead.Replayable())
		}
		prob := odead.Derivs64(odead.NeuralRHS(net), 2, opts...)
		np := len(θ)
		gu, gp, hu, hp := make([]float64, 2), make([]float64, np), make([]float64, 2), make([]float64, np)
		au, ap, bu, bp := make([]float64, 2), make([]float64, np), make([]float64, 2), make([]float64, np)
		ppl, pmi := make([]float32, np), make([]float32, np)
		pd := make([]float64, np)
		for trial := range 20 {
			u := []float64{rng.NormFloat64(), rng.NormFloat64()}
			ud := []float64{rng.NormFloat64(), rng.NormFloat64()}
			w := []float64{rng.NormFloat64(), rng.NormFloat64()}
			wd := []float64{rng.NormFloat64(), rng.NormFloat64()}
			const h = 1e-4
			for k := range pd {
				d := rng.NormFloat64()
				ppl[k], pmi[k] = float32(float64(θ[k])+h*d), float32(float64(θ[k])-h*d)
				pd[k] = (float64(ppl[k]) - float64(pmi[k])) / (2 * h) // the direction float32 took
			}
			pdArg := pd
			if trial%2 == 1 { // no parameter direction
				pdArg = nil
				copy(ppl, θ)
				copy(pmi, θ)
			}
			for _, s := range [][]float64{gu, gp, hu, hp, au, ap, bu, bp} {
				clear(s)
			}
			prob.VJPJVP(gu, gp, hu, hp, w, wd, u, ud, θ, pdArg, 0)
			up := []float64{u[0] + h*ud[0], u[1] + h*ud[1]}
			um := []float64{u[0] - h*ud[0], u[1] - h*ud[1]}
			prob.VJP(au, ap, w, up, ppl, 0)
			prob.VJP(bu, bp, w, um, pmi, 0)
			wantU, wantP := make([]float64, 2), make([]float64, np)
			prob.VJP(wantU, wantP, wd, u, θ, 0)
			scale := 0.0
			for i := range wantU {
				wantU[i] += (au[i] - bu[i]) / (2 * h)
				scale = max(scale, math.Abs(wantU[i]))
			}
			for k := range wantP {
				wantP[k] += (ap[k] - bp[k]) / (2 * h)
				scale = max(scale, math.Abs(wantP[k]))
			}
			worst := 0.0
			for i := range wantU {
				worst = max(worst, math.Abs(hu[i]-wantU[i]))
			}
			for k := range wantP {
				worst = max(worst, math.Abs(hp[k]-wantP[k]))
			}
			if worst > 1e-6*scale {
				t.Fatalf("replay %v, trial %d: VJPJVP differs from differences of the VJP by %.2g of %.2g", replay, trial, worst, scale)
			}
			wantG, wantGP := make([]float64, 2), make([]float64, np)
			prob.VJP(wantG, wantGP, w, u, θ, 0)
			for i := range wantG {
				if gu[i] != wantG[i] {
					t.Fatalf("VJPJVP's gu[%d] = %g, VJP's %g", i, gu[i], wantG[i])
				}
			}
		}
		if err := prob.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// squaresLoss is Σ‖u(t)‖² over t = 0.5, 1 and 1.5.
func squaresLoss() ode.Loss[float32] {
	return odead.Loss([]float64{0.5, 1, 1.5}, func(_ []float64, us []ad.Var) ad.Var {
		s := ad.Sum(ad.Square(us[0]))
		for _, u := range us[1:] {
			s = ad.Add(s, ad.Sum(ad.Square(u)))
		}
		return s
	})
}

// Hessian-vector products of the neural ODE through the ad bridge
// allocate nothing once warm.
func TestHvNeuralAllocatesNothingWarm(t *testing.T) {
	prob := neuralProblem(t, model.Chain(model.Dense(2, 16), model.Tanh(), model.Dense(16, 2)))
	θ := prob.P
	loss := ode.HvLoss[float32]{Loss: squaresLoss()}
	hs, err := ode.NewHvSolver(prob, ode.Tsit5(), ode.InterpolatingAdjoint{}, ode.Tol(1e-5, 1e-7))
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(θ)+2)
	for i := range v {
		v[i] = float32(math.Sin(float64(i)))
	}
	for range 3 {
		if _, err := hs.Hv(context.Background(), θ, loss, v); err != nil {
			t.Fatal(err)
		}
	}
	a := testing.AllocsPerRun(5, func() {
		if _, err := hs.Hv(context.Background(), θ, loss, v); err != nil {
			t.Fatal(err)
		}
	})
	if a != 0 {
		t.Errorf("%v allocations per warm product, want 0", a)
	}
}
