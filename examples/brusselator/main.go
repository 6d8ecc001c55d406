package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/flatkit/flatkit/internal/stiffprob"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/linalg"
)

// config is what the flags set.
type config struct {
	n     int       // grid points a side
	out   string    // directory of the PNGs; "" draws nothing
	times []float64 // of the heatmaps, in [0, 11.5]
}

// summary is what one run computed.
type summary struct {
	Stats  ode.Stats
	Method string
	Times  []float64   // of the snapshots
	U      [][]float64 // u on the grid at each time, i + j·N
	Files  []string
}

func main() {
	cfg := config{}
	flag.IntVar(&cfg.n, "n", 64, "grid points a side")
	flag.StringVar(&cfg.out, "out", ".", "directory of the PNGs")
	times := flag.String("times", "0,1.5,4,11.5", "comma-separated times of the heatmaps, in [0, 11.5]")
	flag.Parse()
	for _, f := range strings.Split(*times, ",") {
		t, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "brusselator: -times: %v\n", err)
			os.Exit(2)
		}
		cfg.times = append(cfg.times, t)
	}
	if _, err := run(context.Background(), os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "brusselator:", err)
		os.Exit(1)
	}
}

// solver returns the method and the problem for b: BDF with a sparse LU
// on the pattern detected from the ad right-hand side, pat.
func solver(b *stiffprob.Bruss2D[float64], pat *linalg.Pattern) (ode.Method, ode.Problem[float64], error) {
	prob := ode.Problem[float64]{F: b.F, U0: b.U0(), T1: 1, Jac: b.JacSparse, JacStructure: ode.SparseJacobian{Pattern: pat}}
	if _, err := ode.NewIntegrator(prob, ode.BDF()); err != nil {
		return nil, prob, err
	}
	return ode.BDF(), prob, nil
}

// run solves on the cfg.n grid, writes the heatmaps and prints the
// summary to w.
func run(ctx context.Context, w io.Writer, cfg config) (*summary, error) {
	if cfg.n < 3 {
		return nil, fmt.Errorf("-n %d: want at least 3 grid points a side", cfg.n)
	}
	b := stiffprob.NewBruss2D[float64](cfg.n)
	segs := b.Segments()
	t0, t1 := segs[0].T0, segs[len(segs)-1].T1
	times := slices.Sorted(slices.Values(cfg.times))
	times = slices.Compact(times)
	for _, t := range times {
		if t < t0 || t > t1 {
			return nil, fmt.Errorf("-times: %g is outside [%g, %g]", t, t0, t1)
		}
	}
	pat, err := detectPattern(cfg.n, b.U0(), b.Pattern())
	if err != nil {
		return nil, fmt.Errorf("the Jacobian's pattern: %w", err)
	}
	_, colours := linalg.Colour(pat)
	fmt.Fprintf(w, "Jacobian pattern detected from the ad right-hand side: %d entries in %d rows, %d colours\n", pat.NNZ(), pat.Rows, colours)
	m, prob, err := solver(b, pat)
	if err != nil {
		return nil, err
	}
	s := &summary{Method: m.Name()}
	start := time.Now()
	// One solve per segment, each from the state the last left.
	u := prob.U0
	for _, seg := range segs {
		prob.U0, prob.T0, prob.T1, prob.P = u, seg.T0, seg.T1, seg.P
		var at []float64
		for _, t := range times {
			// a time on a boundary is saved by the segment that starts there
			if t >= seg.T0 && (t < seg.T1 || t == seg.T1 && seg.T1 == t1) {
				at = append(at, t)
			}
		}
		opts := []ode.SolveOption{ode.Tol(1e-6, 1e-8), ode.SaveAt(append(at, seg.T1)...)}
		sol, err := ode.Solve(ctx, prob, m, opts...)
		if err != nil {
			return nil, fmt.Errorf("segment [%g, %g]: %w", seg.T0, seg.T1, err)
		}
		for k, t := range sol.T[:len(at)] {
			s.Times = append(s.Times, t)
			s.U = append(s.U, slices.Clone(sol.U[k][:cfg.n*cfg.n]))
		}
		u = sol.U[len(sol.U)-1]
		s.Stats.Add(sol.Stats)
	}
	el := time.Since(start)
	st := s.Stats
	fmt.Fprintf(w, "2-D Brusselator %d×%d (%d states) by %s on [%g, %g] in %.2f s: %d steps (%d rejected), %d f evaluations, %d Jacobians, %d LU factorisations, %d Newton iterations\n",
		cfg.n, cfg.n, b.Dim(), s.Method, t0, t1, el.Seconds(), st.Accepted, st.Rejected, st.FEvals, st.JacEvals, st.LUs, st.NewtonIters)
	if cfg.out == "" {
		return s, nil
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return nil, err
	}
	for k, t := range s.Times {
		path := filepath.Join(cfg.out, fmt.Sprintf("brusselator_u_t%g.png", t))
		if err := heatmap(path, cfg.n, t, s.U[k]); err != nil {
			return nil, err
		}
		s.Files = append(s.Files, path)
	}
	fmt.Fprintf(w, "heatmaps of u written to %s\n", strings.Join(s.Files, ", "))
	return s, nil
}

// grid is u on the n×n grid as gonum/plot's GridXYZ: column c is x, row
// r is y.
type grid struct {
	n int
	u []float64
}

func (g grid) Dims() (c, r int)         { return g.n, g.n }
func (g grid) Z(c, r int) float64       { return g.u[c+r*g.n] }
func (g grid) X(c int) float64          { return float64(c) / float64(g.n-1) }
func (g grid) Y(r int) float64          { return float64(r) / float64(g.n-1) }
func (g grid) minMax() (lo, hi float64) { return slices.Min(g.u), slices.Max(g.u) }

// heatmap writes a PNG of u at time t.
func heatmap(path string, n int, t float64, u []float64) error {
	g := grid{n: n, u: u}
	lo, hi := g.minMax()
	pal := moreland.Kindlmann()
	if hi > lo {
		pal.SetMin(lo)
		pal.SetMax(hi)
	} else {
		pal.SetMin(lo - 1)
		pal.SetMax(hi + 1)
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("u at t = %g (min %.5g, max %.5g)", t, lo, hi)
	p.X.Label.Text, p.Y.Label.Text = "x", "y"
	hm := plotter.NewHeatMap(g, pal.Palette(255))
	hm.Rasterized = true // one image: no seams between the cells
	p.Add(hm)
	return p.Save(5*vg.Inch, 5*vg.Inch, path)
}
