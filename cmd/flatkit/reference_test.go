package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/model"
)

// Float64 references of the two scenarios' networks, written with plain
// loops and independently of package model and ad: they read the
// parameters by their layout paths, so they also check the paths.

// conv2d64 is the 2-D cross-correlation of x (c, h, w) with weight (o, c,
// k, k) plus bias, stride 1, padding pad, in float64.
func conv2d64(x []float64, c, h, w int, wt, b []float64, o, k, pad int) (y []float64, oh, ow int) {
	oh, ow = h+2*pad-k+1, w+2*pad-k+1
	y = make([]float64, o*oh*ow)
	for co := 0; co < o; co++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				s := b[co]
				for ci := 0; ci < c; ci++ {
					for ky := 0; ky < k; ky++ {
						for kx := 0; kx < k; kx++ {
							yy, xx := i-pad+ky, j-pad+kx
							if yy < 0 || yy >= h || xx < 0 || xx >= w {
								continue
							}
							s += wt[((co*c+ci)*k+ky)*k+kx] * x[(ci*h+yy)*w+xx]
						}
					}
				}
				y[(co*oh+i)*ow+j] = s
			}
		}
	}
	return y, oh, ow
}

// leaves64 returns the float64 values in θ of net's parameter leaves by
// layout path; it fails t if net is misconfigured or a path is no leaf.
func leaves64(t *testing.T, net model.Layer, θ []float64) func(path string) []float64 {
	t.Helper()
	lay, err := model.Layout(net)
	if err != nil {
		t.Fatal(err)
	}
	return func(path string) []float64 {
		t.Helper()
		lf, ok := lay.Find(path)
		if !ok {
			t.Fatalf("no leaf %q in the layout", path)
		}
		n := 1
		for _, d := range lf.Shape {
			n *= d
		}
		return θ[lf.Offset : lf.Offset+n]
	}
}

// fdCheck compares ⟨g, d⟩ for a random direction d with the central
// difference of the float64 loss ref along d with step h. Through ReLUs
// the step must be small (1e-6) so that none changes sign within it: at
// 1e-4 a few of convchain's wide variant's 50 000 units do, and the
// difference moves by 2e-3.
func fdCheck(t *testing.T, name string, ref func(θ []float64) float64, θ []float32, g []float32, seed uint64, h, tol float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0xfd))
	θ64 := to64(θ)
	d := make([]float64, len(θ))
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	var gd float64
	for i := range g {
		gd += float64(g[i]) * d[i]
	}
	plus, minus := make([]float64, len(θ)), make([]float64, len(θ))
	for i := range θ64 {
		plus[i], minus[i] = θ64[i]+h*d[i], θ64[i]-h*d[i]
	}
	fd := (ref(plus) - ref(minus)) / (2 * h)
	if math.Abs(gd-fd) > tol*math.Max(1, math.Abs(fd)) {
		t.Errorf("%s: ⟨gradient, d⟩ = %v, central difference of the float64 loss %v", name, gd, fd)
	}
	t.Logf("%s: ⟨gradient, d⟩ %v, finite difference %v", name, gd, fd)
}

// tapeProblem is a scenario's problem that computes its loss, and its
// gradient, on a reused tape (convchain's and deepchain's).
type tapeProblem interface {
	forward(tp *ad.Tape) (float32, error)
	gradient(tp *ad.Tape) ([]float32, error)
}

// runTapeProblem computes pr's gradient on tp if grad is set, else its
// loss alone.
func runTapeProblem(pr tapeProblem, tp *ad.Tape, grad bool) error {
	var err error
	if grad {
		_, err = pr.gradient(tp)
	} else {
		_, err = pr.forward(tp)
	}
	return err
}

// checkTapeProblem checks pr's loss at θ against the float64 reference ref
// (relative 1e-4) and its gradient against ref's central difference in a
// random direction (fdCheck with seed, h = 1e-6, tolerance 1e-4). It
// returns the gradient.
func checkTapeProblem(t *testing.T, name string, pr tapeProblem, θ []float32, ref func(θ []float64) float64, seed uint64) []float32 {
	t.Helper()
	tp := ad.NewTape()
	got, err := pr.forward(tp)
	if err != nil {
		t.Fatal(err)
	}
	want := ref(to64(θ))
	if math.Abs(float64(got)-want) > 1e-4*math.Max(1, math.Abs(want)) {
		t.Errorf("%s: loss %v, float64 reference %v", name, got, want)
	}
	tp.Reset()
	g, err := pr.gradient(tp)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) != len(θ) {
		t.Fatalf("%s: %d gradient values for %d parameters", name, len(g), len(θ))
	}
	fdCheck(t, name, ref, θ, g, seed, 1e-6, 1e-4)
	return g
}
