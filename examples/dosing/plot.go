package main

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var (
	blue   = color.NRGBA{0x1f, 0x77, 0xb4, 0xff}
	orange = color.NRGBA{0xff, 0x7f, 0x0e, 0xff}
	red    = color.NRGBA{0xd6, 0x27, 0x28, 0xff}
	grey   = color.Gray{0x60}
)

// plotFit draws the samples, the fitted concentration, the fitted
// threshold (dotted), and the doses as vertical lines: the scheduled ones grey, the
// extra one red.
func plotFit(path string, ts, obs []float64, cv curve, threshold float64) error {
	p := plot.New()
	p.Title.Text = "concentration: samples and the fitted model, doses marked"
	p.X.Label.Text, p.Y.Label.Text = "t (h)", "C (mg/L)"

	fit := make(plotter.XYs, len(cv.t))
	for i := range cv.t {
		fit[i] = plotter.XY{X: cv.t[i], Y: cv.c[i]}
	}
	l, err := plotter.NewLine(fit)
	if err != nil {
		return err
	}
	l.Color, l.Width = blue, vg.Points(1.2)
	p.Add(l)
	p.Legend.Add("fitted C(t)", l)

	pts := make(plotter.XYs, len(ts))
	for i := range ts {
		pts[i] = plotter.XY{X: ts[i], Y: obs[i]}
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Color, sc.GlyphStyle.Radius, sc.GlyphStyle.Shape = orange, vg.Points(2), draw.CircleGlyph{}
	p.Add(sc)
	p.Legend.Add(fmt.Sprintf("samples (σ = %g)", sigma), sc)

	top := 0.0
	for _, c := range cv.c {
		top = max(top, c)
	}
	top *= 1.05
	for i, t := range doseTimes {
		v, err := vline(t, top, grey, true)
		if err != nil {
			return err
		}
		p.Add(v)
		if i == 0 {
			p.Legend.Add(fmt.Sprintf("scheduled doses (%g mg)", dose), v)
		}
	}
	if !math.IsNaN(cv.extra) {
		v, err := vline(cv.extra, top, red, false)
		if err != nil {
			return err
		}
		p.Add(v)
		p.Legend.Add(fmt.Sprintf("extra dose, t = %.2f h", cv.extra), v)
	}
	th, err := plotter.NewLine(plotter.XYs{{X: 0, Y: threshold}, {X: t1, Y: threshold}})
	if err != nil {
		return err
	}
	th.Color, th.Width, th.Dashes = red, vg.Points(0.8), []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(th)
	p.Legend.Add(fmt.Sprintf("fitted threshold, %.3g mg/L", threshold), th)
	p.Y.Min, p.Y.Max = 0, top
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p.Save(9*vg.Inch, 5*vg.Inch, path)
}

// vline is a vertical line at t from 0 to top.
func vline(t, top float64, c color.Color, dashed bool) (*plotter.Line, error) {
	l, err := plotter.NewLine(plotter.XYs{{X: t, Y: 0}, {X: t, Y: top}})
	if err != nil {
		return nil, err
	}
	l.Color, l.Width = c, vg.Points(1)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	return l, nil
}
