package main

import (
	"context"
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var palette = []color.Color{
	color.NRGBA{0x1f, 0x77, 0xb4, 0xff}, color.NRGBA{0xff, 0x7f, 0x0e, 0xff}, color.NRGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.NRGBA{0xd6, 0x27, 0x28, 0xff}, color.NRGBA{0x94, 0x67, 0xbd, 0xff},
}

var trueGrey = color.Gray{0x60}

const shown = 4 // training trajectories drawn

// plotFit draws a 3×2 grid (prey left, predators right): the data of a few
// training trajectories with the fitted model's paths; the held-out paths,
// true and fitted; and the learned interaction terms against the true ones
// along the held-out true paths.
func plotFit(ctx context.Context, path string, f *fitter, θ []float32, held [][][]float32) error {
	d := f.data
	names := [2]string{"prey u1", "predators u2"}
	grid := make([][]*plot.Plot, 3)
	for r := range grid {
		grid[r] = []*plot.Plot{plot.New(), plot.New()}
	}
	for j := range 2 {
		p := grid[0][j]
		p.Title.Text = fmt.Sprintf("training data (dots, σ = %g) and the fitted model: %s", sigma, names[j])
		p.X.Label.Text, p.Y.Label.Text = "t", names[j]
		for i := range shown {
			tr := d.train[i]
			fit, err := f.predict(ctx, θ, tr.u0)
			if err != nil {
				return err
			}
			c := palette[i%len(palette)]
			if _, err := addLine(p, denseTimes, column32(fit, j), c, false); err != nil {
				return err
			}
			pts := make(plotter.XYs, len(tr.obs))
			for k, u := range tr.obs {
				pts[k] = plotter.XY{X: obsTimes[k], Y: float64(u[j])}
			}
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return err
			}
			sc.GlyphStyle.Color, sc.GlyphStyle.Radius, sc.GlyphStyle.Shape = c, vg.Points(2), draw.CircleGlyph{}
			p.Add(sc)
		}

		p = grid[1][j]
		p.Title.Text = fmt.Sprintf("%d held-out initial conditions: %s, true (dashed) and fitted", len(d.held), names[j])
		p.X.Label.Text, p.Y.Label.Text = "t", names[j]
		for i, tr := range d.held {
			if _, err := addLine(p, denseTimes, column64(tr.truth, j), trueGrey, true); err != nil {
				return err
			}
			if _, err := addLine(p, denseTimes, column32(held[i], j), palette[i%len(palette)], false); err != nil {
				return err
			}
		}
	}

	// The interaction terms along the held-out true paths.
	var pts []float32
	for _, tr := range d.held {
		for _, u := range tr.truth {
			pts = append(pts, float32(u[0]), float32(u[1]))
		}
	}
	learned := f.interaction(θ, pts)
	terms := [2]string{"−β u1 u2", "γ u1 u2"}
	for j := range 2 {
		p := grid[2][j]
		p.Title.Text = fmt.Sprintf("interaction term %s along the held-out true paths: true (dashed), NN(u)_%d", terms[j], j+1)
		p.X.Label.Text, p.Y.Label.Text = "t", terms[j]
		for i := range d.held {
			want, got := make([]float64, nDense), make([]float64, nDense)
			for k := range nDense {
				q := i*nDense + k
				u1, u2 := float64(pts[2*q]), float64(pts[2*q+1])
				want[k] = [2]float64{-beta * u1 * u2, gamma * u1 * u2}[j]
				got[k] = float64(learned[2*q+j])
			}
			if _, err := addLine(p, denseTimes, want, trueGrey, true); err != nil {
				return err
			}
			if _, err := addLine(p, denseTimes, got, palette[i%len(palette)], false); err != nil {
				return err
			}
		}
	}
	for _, row := range grid {
		for _, p := range row {
			p.Add(plotter.NewGrid())
		}
	}
	return saveGrid(path, grid, 13*vg.Inch, 12*vg.Inch)
}

// plotLoss draws the loss curve on a log scale: Adam's minibatch losses,
// then L-BFGS's loss over all trajectories at each iteration.
func plotLoss(path string, s *Summary) error {
	p := plot.New()
	p.Title.Text = "loss: mean squared error against the noisy data"
	p.X.Label.Text = "Adam step, then L-BFGS iteration"
	p.Y.Label.Text = "mean squared error"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	if len(s.AdamLoss) > 0 {
		xs := make([]float64, len(s.AdamLoss))
		for i := range xs {
			xs[i] = float64(i + 1)
		}
		l, err := addLine(p, xs, s.AdamLoss, palette[0], false)
		if err != nil {
			return err
		}
		p.Legend.Add("Adam (minibatches of windows)", l)
	}
	if len(s.LBFGSLoss) > 0 {
		xs := make([]float64, len(s.LBFGSLoss))
		for i := range xs {
			xs[i] = float64(len(s.AdamLoss) + i)
		}
		l, err := addLine(p, xs, s.LBFGSLoss, palette[3], false)
		if err != nil {
			return err
		}
		p.Legend.Add("L-BFGS (all whole trajectories)", l)
	}
	noise := plotter.NewFunction(func(float64) float64 { return sigma * sigma })
	noise.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	noise.Color = trueGrey
	p.Add(noise)
	p.Legend.Add("σ², the noise's share", noise)
	p.Y.Min = min(p.Y.Min, sigma*sigma/2) // the noise floor in view
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

func column32(us [][]float32, j int) []float64 {
	c := make([]float64, len(us))
	for k, u := range us {
		c[k] = float64(u[j])
	}
	return c
}

func column64(us [][]float64, j int) []float64 {
	c := make([]float64, len(us))
	for k, u := range us {
		c[k] = u[j]
	}
	return c
}

// addLine adds a line of ys over xs, dashed or solid.
func addLine(p *plot.Plot, xs, ys []float64, c color.Color, dashed bool) (*plotter.Line, error) {
	xy := make(plotter.XYs, len(xs))
	for k := range xs {
		xy[k] = plotter.XY{X: xs[k], Y: ys[k]}
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return nil, err
	}
	l.Color, l.Width = c, vg.Points(1)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l)
	return l, nil
}

// saveGrid draws the plots in a grid into one PNG.
func saveGrid(path string, grid [][]*plot.Plot, w, h vg.Length) error {
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(grid), Cols: len(grid[0]), PadX: vg.Millimeter * 8, PadY: vg.Millimeter * 8,
		PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	canvases := plot.Align(grid, tiles, dc)
	for r := range grid {
		for c := range grid[r] {
			grid[r][c].Draw(canvases[r][c])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
