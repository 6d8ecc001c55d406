package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"

	"gonum.org/v1/gonum/optimize"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
	"github.com/flatkit/flatkit/optimisers"
)

// PK is the model's parameters: its fields become views of one flat
// vector.
type PK struct {
	Ka        []float32 `flat:"shape=1"` // absorption rate, 1/h
	Ke        []float32 `flat:"shape=1"` // elimination rate, 1/h
	V         []float32 `flat:"shape=1"` // volume of distribution, L
	Threshold []float32 `flat:"shape=1"` // the concentration, mg/L, below which the extra dose is given
}

// The regimen, known to the fit: oral doses of dose mg at doseTimes, and
// one more when the concentration first falls below the threshold. The
// samples are taken every hour from 1 h to t1.
var (
	doseTimes = []float64{0, 8, 16}
	truth     = PK{Ka: []float32{1.2}, Ke: []float32{0.15}, V: []float32{25}, Threshold: []float32{1}}
	guess     = PK{Ka: []float32{1.5}, Ke: []float32{0.12}, V: []float32{30}, Threshold: []float32{0.8}}
)

const (
	dose  = 100.0 // mg
	t1    = 48.0  // h
	nObs  = 48
	sigma = 0.05 // mg/L, the noise of the samples
)

// The state is u = (A, C, s): the amount in the gut A (mg), the
// concentration C (mg/L) and the switch s, 1 until the extra dose is given
// and 0 after, so that the threshold doses once. θ = (ka, ke, V, c*).
//
//	A' = −ka·A,  C' = ka·A/V − ke·C,  s' = 0.
func rhs(u, p ad.Var, _ float64) ad.Var {
	A, C, s := ad.Slice(u, 0, 1), ad.Slice(u, 1, 2), ad.Slice(u, 2, 3)
	ka, ke, V := ad.Slice(p, 0, 1), ad.Slice(p, 1, 2), ad.Slice(p, 2, 3)
	absorbed := ad.Mul(ka, A)
	return ad.Concat(0, ad.Neg(absorbed), ad.Sub(ad.Div(absorbed, V), ad.Mul(ke, C)), ad.Scale(s, 0))
}

// below is the event's condition C − c*, watched for falling crossings.
func below(u, p, _ ad.Var) ad.Var { return ad.Sub(ad.Slice(u, 1, 2), ad.Slice(p, 3, 4)) }

// extra gives the extra dose, s·dose, and turns the switch off.
func extra(u, _, _ ad.Var) ad.Var {
	A, C, s := ad.Slice(u, 0, 1), ad.Slice(u, 1, 2), ad.Slice(u, 2, 3)
	return ad.Concat(0, ad.Add(A, ad.Scale(s, dose)), C, ad.Scale(s, 0))
}

// scheduled gives a scheduled dose into the gut.
func scheduled(u, _, _ ad.Var) ad.Var {
	return ad.Concat(0, ad.Add(ad.Slice(u, 0, 1), ad.ScalarLike(u, dose)), ad.Slice(u, 1, 3))
}

// problem is the model at θ, with its schedule and its event.
func problem(θ []float32) (ode.Problem[float64], error) {
	prob, err := odead.Problem(rhs, []float64{0, 0, 1}, 0, t1, θ)
	if err != nil {
		return prob, err
	}
	if err := odead.AddSchedule(&prob, doseTimes, scheduled); err != nil {
		return prob, err
	}
	return prob, odead.AddEvent(&prob, below, extra, odead.Direction(-1))
}

type config struct {
	sens string
	seed uint64
	out  string // the plot's path; empty for none
	tol  float64
}

// result is what a run found, for the test.
type result struct {
	Fit, True   []float32
	StdErr      []float64 // by the Laplace approximation at the fit
	Names       []string
	Loss        float64
	Gradients   int
	ExtraDose   float64 // the time of the extra dose under the fit
	Status      optimize.Status
	PlotWritten bool
}

func main() {
	cfg := config{sens: "forward", seed: 1, out: "dosing.png", tol: 1e-8}
	flag.StringVar(&cfg.sens, "sens", cfg.sens, "sensitivity method: forward, adjoint, discrete")
	flag.Uint64Var(&cfg.seed, "seed", cfg.seed, "seed of the observation noise")
	flag.StringVar(&cfg.out, "out", cfg.out, "path of the PNG plot; empty for none")
	flag.Parse()
	if _, err := run(context.Background(), os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "dosing:", err)
		os.Exit(1)
	}
}

// sensitivity is the method -sens names.
func sensitivity(name string) (ode.Sensitivity, error) {
	switch name {
	case "forward":
		return ode.ForwardSensitivity{}, nil
	case "adjoint":
		return ode.InterpolatingAdjoint{}, nil
	case "discrete":
		return ode.DiscreteAdjoint{}, nil
	}
	return nil, fmt.Errorf("-sens %q: want forward, adjoint or discrete", name)
}

func run(ctx context.Context, w io.Writer, cfg config) (*result, error) {
	sens, err := sensitivity(cfg.sens)
	if err != nil {
		return nil, err
	}
	ts := make([]float64, nObs)
	for i := range ts {
		ts[i] = t1 * float64(i+1) / nObs
	}
	θtrue, lay, err := layout.Destructure(&truth)
	if err != nil {
		return nil, err
	}
	obs, err := observe(ctx, θtrue, ts, cfg.seed)
	if err != nil {
		return nil, err
	}

	k := PK{Ka: []float32{guess.Ka[0]}, Ke: []float32{guess.Ke[0]}, V: []float32{guess.V[0]}, Threshold: []float32{guess.Threshold[0]}}
	θ, _, err := layout.Destructure(&k)
	if err != nil {
		return nil, err
	}
	start := append([]float32(nil), θ...)
	prob, err := problem(θ)
	if err != nil {
		return nil, err
	}
	// L = Σ_i (C(t_i) − obs_i)² / (2σ²).
	loss := ode.Loss[float64]{At: ts, Point: func(i int, t float64, u, dLdu []float64) float64 {
		d := (u[1] - obs[i]) / sigma
		dLdu[1] = d / sigma
		return d * d / 2
	}}
	gs, err := ode.NewGradientSolver(prob, ode.Tsit5(), sens, ode.Tol(cfg.tol, cfg.tol/100))
	if err != nil {
		return nil, err
	}
	res := &result{True: θtrue}
	obj := gs.Objective(ctx, loss)
	counted := func(θ, grad []float32) (float64, error) {
		res.Gradients++
		return obj(θ, grad)
	}
	// Every parameter is positive and they differ in scale by two orders:
	// L-BFGS works on their logarithms.
	tr, err := optimisers.TransformsByPath(lay, map[string]optimisers.Transform{
		"Ka": optimisers.Positive(), "Ke": optimisers.Positive(), "V": optimisers.Positive(), "Threshold": optimisers.Positive()})
	if err != nil {
		return nil, err
	}
	z := make([]float32, len(θ))
	if err := tr.FromUser(z, θ); err != nil {
		return nil, err
	}
	r, err := optimisers.Minimize(tr.Wrap(counted), z, &optimize.LBFGS{}, &optimize.Settings{GradientThreshold: 1e-4})
	if r == nil {
		return nil, err
	}
	if err := tr.ToUser(θ, z); err != nil {
		return nil, err
	}
	res.Fit, res.Loss, res.Status = θ, r.F, r.Status
	for _, leaf := range lay.Leaves() {
		res.Names = append(res.Names, leaf.Path)
	}
	curve, err := simulate(ctx, θ)
	if err != nil {
		return nil, err
	}
	res.ExtraDose = curve.extra
	lap, err := standardErrors(ctx, prob, θ, lay, loss, cfg.tol)
	if err != nil {
		return nil, fmt.Errorf("standard errors: %w", err)
	}
	res.StdErr = lap.StdErr

	fmt.Fprintf(w, "one-compartment model with first-order absorption: doses of %g mg at t = %v h and one more when C falls below the threshold\n", dose, doseTimes)
	fmt.Fprintf(w, "fitted to %d noisy samples of C (σ = %g mg/L), gradients by %s through the doses, Tsit5 at rtol %g\n", nObs, sigma, sens.Name(), cfg.tol)
	fmt.Fprintf(w, "%-10s %-10s %-10s %-10s %-10s %s\n", "parameter", "fitted", "std.err", "true", "error", "start")
	for i, name := range res.Names {
		fmt.Fprintf(w, "%-10s %-10.5g %-10.2g %-10.5g %-10s %.5g\n", name, θ[i], lap.StdErr[i], θtrue[i], fmt.Sprintf("%+.2f %%", 100*(float64(θ[i])/float64(θtrue[i])-1)), start[i])
	}
	fmt.Fprintf(w, "standard errors by the Laplace approximation: the Hessian of the loss through the doses and the extra dose's event\n")
	fmt.Fprintf(w, "extra dose at t = %.3f h; loss %.4g (noise alone: about %d), L-BFGS status %v, %d gradients\n",
		curve.extra, r.F, nObs/2, r.Status, res.Gradients)
	if err != nil {
		fmt.Fprintf(w, "Minimize: %v\n", err)
	}
	if cfg.out != "" {
		if err := plotFit(cfg.out, ts, obs, curve, float64(θ[3])); err != nil {
			return nil, err
		}
		res.PlotWritten = true
		fmt.Fprintf(w, "plot: %s\n", cfg.out)
	}
	return res, nil
}

// observe solves the true model and adds seeded noise to C at ts.
func observe(ctx context.Context, θ []float32, ts []float64, seed uint64) ([]float64, error) {
	prob, err := problem(θ)
	if err != nil {
		return nil, err
	}
	sol, err := ode.Solve(ctx, prob, ode.Tsit5(), ode.Tol(1e-10, 1e-12), ode.SaveAt(ts...))
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 29))
	obs := make([]float64, len(ts))
	for i, u := range sol.U {
		obs[i] = u[1] + sigma*rng.NormFloat64()
	}
	return obs, nil
}

// curve is a solve at fine resolution, for the plot, and the time of the
// extra dose (NaN if it was not given).
type curve struct {
	t, c  []float64
	extra float64
}

// simulate solves the model at θ on a fine grid and finds the extra dose
// as the first saved step where the switch is off.
func simulate(ctx context.Context, θ []float32) (curve, error) {
	prob, err := problem(θ)
	if err != nil {
		return curve{}, err
	}
	sol, err := ode.Solve(ctx, prob, ode.Tsit5(), ode.Tol(1e-10, 1e-12), ode.Dense(), ode.SaveEveryStep())
	if err != nil {
		return curve{}, err
	}
	cv := curve{extra: math.NaN()}
	for i, u := range sol.U {
		if u[2] == 0 {
			cv.extra = sol.T[i]
			break
		}
	}
	const m = 960
	for i := range m + 1 {
		t := t1 * float64(i) / m
		u, err := sol.At(t)
		if err != nil {
			return curve{}, err
		}
		cv.t, cv.c = append(cv.t, t), append(cv.c, u[1])
	}
	return cv, nil
}
