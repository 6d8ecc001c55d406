package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"gonum.org/v1/gonum/optimize"

	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/optimisers"
)

// Kinetics is the model: its fields become views of one flat vector.
type Kinetics struct {
	Rates []float32 `flat:"shape=4"` // α, β, δ, γ in x' = αx − βxy, y' = −δy + γxy
	Init  []float32 `flat:"shape=2"` // x(0), y(0)
}

var (
	trueRates = []float32{1.5, 1, 3, 1}
	trueInit  = []float32{1, 1}
)

// lv reads the rates from p[0:4].
func lv(du, u []float64, p []float32, t float64) {
	a, b, d, g := float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3])
	du[0] = a*u[0] - b*u[0]*u[1]
	du[1] = -d*u[1] + g*u[0]*u[1]
}

// lvJVP is ∂F/∂u·v + ∂F/∂p·dp.
func lvJVP(jv, u, v []float64, p []float32, dp []float64, t float64) {
	a, b, d, g := float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3])
	jv[0] = (a-b*u[1])*v[0] - b*u[0]*v[1]
	jv[1] = g*u[1]*v[0] + (-d+g*u[0])*v[1]
	if dp != nil {
		jv[0] += u[0]*dp[0] - u[0]*u[1]*dp[1]
		jv[1] += -u[1]*dp[2] + u[0]*u[1]*dp[3]
	}
}

// lvVJP adds wᵀ∂F/∂u into du and wᵀ∂F/∂p into dp.
func lvVJP(du, dp, w, u []float64, p []float32, t float64) {
	a, b, d, g := float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3])
	du[0] += w[0]*(a-b*u[1]) + w[1]*g*u[1]
	du[1] += -w[0]*b*u[0] + w[1]*(-d+g*u[0])
	if dp != nil {
		dp[0] += w[0] * u[0]
		dp[1] -= w[0] * u[0] * u[1]
		dp[2] -= w[1] * u[1]
		dp[3] += w[1] * u[0] * u[1]
	}
}

type config struct {
	sens  string
	seed  uint64
	noise float64
}

// result is what a run found, for the test.
type result struct {
	Rates, Init []float32
	Loss        float64
	StdErr      []float64 // of Rates then Init, by the Laplace approximation
	Gradients   int
	Status      optimize.Status
}

func main() {
	var cfg config
	flag.StringVar(&cfg.sens, "sens", "forward", "sensitivity method: forward, adjoint, discrete")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the observation noise")
	flag.Float64Var(&cfg.noise, "noise", 0.02, "standard deviation of the observation noise")
	flag.Parse()
	if _, err := run(context.Background(), os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "fitlv:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, cfg config) (*result, error) {
	var sens ode.Sensitivity
	switch cfg.sens {
	case "forward":
		sens = ode.ForwardSensitivity{}
	case "adjoint":
		sens = ode.InterpolatingAdjoint{}
	case "discrete":
		sens = ode.DiscreteAdjoint{}
	default:
		return nil, fmt.Errorf("-sens %q: want forward, adjoint or discrete", cfg.sens)
	}

	// Observations: the true model at t = 0.5, 1, …, 10 with Gaussian noise.
	ts := make([]float64, 20)
	for i := range ts {
		ts[i] = 0.5 * float64(i+1)
	}
	truth := append(append([]float32(nil), trueRates...), trueInit...)
	obs, err := observe(ctx, truth, ts, cfg)
	if err != nil {
		return nil, err
	}

	// The model to fit, from a guess 20–30 % off, as one flat vector.
	k := Kinetics{Rates: []float32{1.2, 0.8, 2.5, 1.2}, Init: []float32{0.8, 1.2}}
	θ, lay, err := layout.Destructure(&k)
	if err != nil {
		return nil, err
	}
	lo, _, err := lay.Range("Init") // where the initial state lives in θ
	if err != nil {
		return nil, err
	}
	prob := ode.Problem[float64]{F: lv, JVP: lvJVP, VJP: lvVJP, U0: make([]float64, 2), T1: 10, P: θ,
		U0From:    func(u0 []float64, p []float32) { u0[0], u0[1] = float64(p[lo]), float64(p[lo+1]) },
		U0FromVJP: func(dp, w []float64, p []float32) { dp[lo] += w[0]; dp[lo+1] += w[1] },
	}
	// L = Σ_i ‖u(t_i) − obs_i‖² / 2.
	loss := ode.Loss[float64]{At: ts, Point: func(i int, t float64, u, dLdu []float64) float64 {
		var v float64
		for j := range u {
			d := u[j] - obs[i][j]
			v += d * d / 2
			dLdu[j] = d
		}
		return v
	}}
	gs, err := ode.NewGradientSolver(prob, ode.Tsit5(), sens, ode.Tol(1e-8, 1e-10))
	if err != nil {
		return nil, err
	}
	res := &result{}
	var spent time.Duration
	// gs.Objective is the loss of θ in the form Minimize takes. A failed
	// solve comes back as its error: Minimize steps back from such a point
	// and keeps the error as the cause if the run cannot recover.
	obj := gs.Objective(ctx, loss)
	fg := func(θ, grad []float32) (float64, error) {
		start := time.Now()
		f, err := obj(θ, grad)
		spent += time.Since(start)
		res.Gradients++
		return f, err
	}
	// The rates must stay positive: L-BFGS works on z = log(rates) (the
	// Positive transform by path), and the fit is read back in the model's
	// units. The initial values are fitted as they are.
	tr, err := optimisers.TransformsByPath(lay, map[string]optimisers.Transform{"Rates": optimisers.Positive()})
	if err != nil {
		return nil, err
	}
	z := make([]float32, len(θ))
	if err := tr.FromUser(z, θ); err != nil {
		return nil, err
	}
	r, err := optimisers.Minimize(tr.Wrap(fg), z, &optimize.LBFGS{}, &optimize.Settings{GradientThreshold: 1e-4})
	if r == nil {
		return nil, err
	}
	if err := tr.ToUser(θ, z); err != nil {
		return nil, err
	}
	// L-BFGS on float32 parameters can end in a failed line search at the
	// optimum (float32 rounding leaves no decrease to find): the fit is
	// still what it found; report gonum's status beside it.
	if err := layout.Restructure(θ, lay, &k); err != nil {
		return nil, err
	}
	res.Rates, res.Init, res.Loss, res.Status = k.Rates, k.Init, r.F, r.Status
	lap, lerr := standardErrors(ctx, prob, θ, lay, loss, 2*len(ts))
	if lerr != nil {
		return nil, lerr
	}
	res.StdErr = lap.StdErr
	fmt.Fprintf(w, "Lotka-Volterra fit to %d noisy observations of both species (σ = %g), gradients by %s, Tsit5 at rtol 1e-8\n",
		len(ts), cfg.noise, sens.Name())
	fmt.Fprintf(w, "%-8s %-10s %-10s %-10s %s\n", "path", "fitted", "stderr", "true", "start")
	start := []float32{1.2, 0.8, 2.5, 1.2, 0.8, 1.2}
	for _, leaf := range lay.Leaves() {
		for j := range leaf.Shape[0] {
			i := leaf.Offset + j
			fmt.Fprintf(w, "%-8s %-10.5f %-10.5f %-10.5f %.5f\n", fmt.Sprintf("%s.%d", leaf.Path, j), θ[i], lap.StdErr[i], truth[i], start[i])
		}
	}
	fmt.Fprintf(w, "loss %.6g (noise alone: about %.3g), L-BFGS status %v\n", r.F, float64(2*len(ts))*cfg.noise*cfg.noise/2, r.Status)
	fmt.Fprintf(w, "%d gradients, %.0f µs each on average (the first ones warm the solver up)\n", res.Gradients, float64(spent.Microseconds())/float64(res.Gradients))
	if err != nil {
		fmt.Fprintf(w, "Minimize: %v\n", err)
	}
	return res, nil
}

// observe solves the true model and adds seeded noise.
func observe(ctx context.Context, truth []float32, ts []float64, cfg config) ([][]float64, error) {
	prob := ode.Problem[float64]{F: lv, U0: []float64{float64(truth[4]), float64(truth[5])}, T1: 10, P: truth[:4]}
	sol, err := ode.Solve(ctx, prob, ode.Tsit5(), ode.Tol(1e-10, 1e-12), ode.SaveAt(ts...))
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.seed, 7))
	for _, u := range sol.U {
		for j := range u {
			u[j] += cfg.noise * rng.NormFloat64()
		}
	}
	return sol.U, nil
}
