package main

import (
	"context"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/flatkit/flatkit/ode"
)

// lotkaVolterra is the right-hand side, its constants written as float64
// literals.
func lotkaVolterra(du, u []float64, _ []float32, _ float64) {
	du[0] = 1.5*u[0] - u[0]*u[1]
	du[1] = -3*u[1] + u[0]*u[1]
}

// config is what the flags set.
type config struct {
	n       int    // trajectories
	out     string // PNG path; "" draws nothing
	workers int
	seed    uint64
	points  int // saved states per trajectory, evenly spaced on [0, 10]
}

// Summary is what one run computed.
type Summary struct {
	N, Failed           int
	Mean, Min, Max      [2]float64 // of the final states u(10)
	Steps, FEvals       int        // over all trajectories
	SolveTime, PlotTime time.Duration
	Paths               [][]float64 // per trajectory: u1, u2 at the saved times, interleaved
	T1                  float64
}

// solve runs the ensemble: trajectory i starts from (1, 1) perturbed by up
// to ±25 % in each population, drawn from the trajectory's own generator.
// Its output is its path at cfg.points evenly spaced times (the last at
// T1); Reduce sums the final states for the mean.
func solve(ctx context.Context, cfg config) (*ode.EnsembleResult[float64], time.Duration, error) {
	const t1 = 10.0
	ts := make([]float64, cfg.points)
	for k := range ts {
		ts[k] = t1 * float64(k) / float64(cfg.points-1)
	}
	k := 2 * cfg.points
	ens := ode.Ensemble[float64]{
		Base: ode.Problem[float64]{F: lotkaVolterra, U0: []float64{1, 1}, T0: 0, T1: t1},
		N:    cfg.n,
		Seed: cfg.seed,
		Modify: func(_ int, rng *rand.Rand, p *ode.Problem[float64]) {
			p.U0[0] = 1 + 0.5*(rng.Float64()-0.5)
			p.U0[1] = 1 + 0.5*(rng.Float64()-0.5)
		},
		OutputSize: k,
		Output: func(out []float64, _ int, it *ode.Integrator[float64]) {
			_, us := it.Saved() // the SaveAt points, in order
			for j, u := range us {
				out[2*j], out[2*j+1] = u[0], u[1]
			}
		},
		ReduceSize: 2,
		Reduce: func(acc []float64, _ int, out []float64) {
			acc[0] += out[k-2]
			acc[1] += out[k-1]
		},
	}
	start := time.Now()
	res, err := ens.Solve(ctx, ode.Tsit5(), ode.Tol(1e-8, 1e-10), ode.SaveAt(ts...), ode.Workers(cfg.workers))
	return res, time.Since(start), err
}

// run solves the ensemble, writes the summary to w and the phase portrait
// to cfg.out.
func run(ctx context.Context, w io.Writer, cfg config) (*Summary, error) {
	if cfg.n < 1 || cfg.points < 2 || cfg.workers < 1 {
		return nil, fmt.Errorf("want -n ≥ 1, -points ≥ 2 and -workers ≥ 1")
	}
	res, el, err := solve(ctx, cfg)
	if res == nil {
		return nil, err
	}
	if err != nil { // some trajectories failed: report them, summarise the rest
		fmt.Fprintf(w, "warning: %v\n", err)
	}
	s := &Summary{N: cfg.n, Failed: len(res.Errors), Steps: res.Stats.Accepted, FEvals: res.Stats.FEvals,
		SolveTime: el, Paths: res.U, T1: 10}
	s.Min = [2]float64{math.Inf(1), math.Inf(1)}
	s.Max = [2]float64{math.Inf(-1), math.Inf(-1)}
	k := 2 * cfg.points
	for _, p := range res.U {
		if math.IsNaN(p[k-2]) {
			continue // a failed trajectory
		}
		for j := range 2 {
			s.Min[j] = min(s.Min[j], p[k-2+j])
			s.Max[j] = max(s.Max[j], p[k-2+j])
		}
	}
	ok := float64(cfg.n - s.Failed)
	s.Mean = [2]float64{res.Acc[0] / ok, res.Acc[1] / ok}

	fmt.Fprintf(w, "Lotka-Volterra ensemble: %d trajectories from (1, 1) ± 25%%, t in [0, %g], Tsit5 at rtol 1e-8, %d workers\n",
		cfg.n, s.T1, cfg.workers)
	fmt.Fprintf(w, "final state u(%g)   prey u1     predators u2\n", s.T1)
	fmt.Fprintf(w, "  mean          %9.6f    %9.6f\n", s.Mean[0], s.Mean[1])
	fmt.Fprintf(w, "  min           %9.6f    %9.6f\n", s.Min[0], s.Min[1])
	fmt.Fprintf(w, "  max           %9.6f    %9.6f\n", s.Max[0], s.Max[1])
	fmt.Fprintf(w, "%d steps, %d f evaluations, %d failed; solved in %v (%.1f µs per trajectory)\n",
		s.Steps, s.FEvals, s.Failed, s.SolveTime.Round(time.Microsecond),
		float64(s.SolveTime.Microseconds())/float64(cfg.n))

	if cfg.out != "" {
		start := time.Now()
		if err := portrait(cfg.out, s); err != nil {
			return nil, err
		}
		s.PlotTime = time.Since(start)
		fmt.Fprintf(w, "phase portrait written to %s in %v\n", cfg.out, s.PlotTime.Round(time.Millisecond))
	}
	return s, nil
}

// invariant is the quantity that Lotka–Volterra conserves along a
// trajectory: H = u1 − 3 ln u1 + u2 − 1.5 ln u2. Each orbit is a level set.
func invariant(u1, u2 float64) float64 {
	return u1 - 3*math.Log(u1) + u2 - 1.5*math.Log(u2)
}

// portrait draws every trajectory in the (prey, predators) plane, coloured
// by its invariant H (its orbit), with its start and end marked, and saves
// it as a PNG.
func portrait(path string, s *Summary) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Lotka-Volterra phase portrait: %d trajectories, t from 0 to %g, colour = H(u0)", s.N, s.T1)
	p.X.Label.Text = "prey u1"
	p.Y.Label.Text = "predators u2"
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, path := range s.Paths {
		if h := invariant(path[0], path[1]); !math.IsNaN(h) {
			lo, hi = min(lo, h), max(hi, h)
		}
	}
	cmap := moreland.Kindlmann()
	cmap.SetMin(lo)
	cmap.SetMax(hi + 0.15*(hi-lo) + 1e-12) // the map's top end is near white
	starts := make(plotter.XYs, 0, s.N)
	ends := make(plotter.XYs, 0, s.N)
	for _, path := range s.Paths {
		h := invariant(path[0], path[1])
		if math.IsNaN(h) {
			continue
		}
		xys := make(plotter.XYs, len(path)/2)
		for j := range xys {
			xys[j].X, xys[j].Y = path[2*j], path[2*j+1]
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		c, err := cmap.At(h)
		if err != nil {
			return err
		}
		l.Color = withAlpha(c, 0x90)
		l.Width = vg.Points(0.6)
		p.Add(l)
		starts = append(starts, xys[0])
		ends = append(ends, xys[len(xys)-1])
	}
	for _, m := range []struct {
		pts   plotter.XYs
		shape draw.GlyphDrawer
		name  string
	}{{starts, draw.CircleGlyph{}, "u(0)"}, {ends, draw.CrossGlyph{}, fmt.Sprintf("u(%g)", s.T1)}} {
		sc, err := plotter.NewScatter(m.pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Shape = m.shape
		sc.GlyphStyle.Radius = vg.Points(1.5)
		sc.GlyphStyle.Color = color.Black
		p.Add(sc)
		p.Legend.Add(m.name, sc)
	}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p.Save(7*vg.Inch, 7*vg.Inch, path)
}

func withAlpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: a}
}

func main() {
	cfg := config{}
	flag.IntVar(&cfg.n, "n", 200, "number of trajectories")
	flag.StringVar(&cfg.out, "out", "ensemble.png", `path of the phase portrait (PNG); "" for none`)
	flag.IntVar(&cfg.workers, "workers", runtime.GOMAXPROCS(0), "goroutines solving trajectories (results do not depend on it)")
	flag.Uint64Var(&cfg.seed, "seed", 1, "master seed of the initial-condition perturbations")
	flag.IntVar(&cfg.points, "points", 301, "saved states per trajectory (evenly spaced, for the picture)")
	flag.Parse()
	if _, err := run(context.Background(), os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "ensemble:", err)
		os.Exit(1)
	}
}
