package ode_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/internal/stiffprob"
	"github.com/flatkit/flatkit/internal/wanterr"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/linalg"
)

// probeBruss1D is the 1-D Brusselator of Hairer and Wanner II (IV.1) on N
// grid points, stiffprob.Bruss1D, without a Jacobian.
func probeBruss1D[T ode.Float](N int) ode.Problem[T] {
	b := stiffprob.NewBruss1D[T](N)
	return ode.Problem[T]{F: b.F, U0: b.U0(), T0: 0, T1: 10}
}

// probeBruss1DPattern is the true pattern of probeBruss1D's Jacobian: u_i'
// depends on u_{i−1}, u_i, v_i, u_{i+1}, and v_i' on v_{i−1}, u_i, v_i,
// v_{i+1}. It lies in BandPattern(2N, 2, 2) without the entries (2i, 2i−1)
// and (2i+1, 2i+2).
func probeBruss1DPattern(N int) *linalg.Pattern { return stiffprob.NewBruss1D[float64](N).Pattern() }

func samePattern(t *testing.T, got, want *linalg.Pattern) {
	t.Helper()
	if got.Rows != want.Rows || got.Cols != want.Cols || !slices.Equal(got.RowPtr, want.RowPtr) || !slices.Equal(got.ColIdx, want.ColIdx) {
		for i := 0; i < min(got.Rows, want.Rows); i++ {
			if !slices.Equal(got.Row(i), want.Row(i)) {
				t.Fatalf("row %d has columns %v, want %v", i, got.Row(i), want.Row(i))
			}
		}
		t.Fatalf("pattern %d×%d with %d entries, want %d×%d with %d", got.Rows, got.Cols, got.NNZ(), want.Rows, want.Cols, want.NNZ())
	}
}

func TestProbePatternBrusselator(t *testing.T) {
	for _, N := range []int{1, 2, 25} {
		want := probeBruss1DPattern(N)
		got, err := ode.ProbePattern(probeBruss1D[float64](N))
		if err != nil {
			t.Fatal(err)
		}
		samePattern(t, got, want)
		band := linalg.BandPattern(2*N, 2, 2)
		for i := range got.Rows {
			for _, j := range got.Row(i) {
				if !band.Has(i, j) {
					t.Fatalf("N=%d: entry (%d, %d) outside the band (2, 2)", N, i, j)
				}
			}
		}
		got32, err := ode.ProbePattern(probeBruss1D[float32](N))
		if err != nil {
			t.Fatal(err)
		}
		samePattern(t, got32, want)
	}
}

// F_0 = u_0·u_1 with u_0 = u_1 = 0 at U0 has a zero Jacobian row there,
// and F_2 = t·u_1 one at T0 = 0; the moved points and the later time find
// their entries.
func TestProbePatternZeroFactors(t *testing.T) {
	prob := ode.Problem[float64]{
		U0: []float64{0, 0, 1}, T0: 0, T1: 1,
		F: func(du, u []float64, _ []float32, t float64) {
			du[0] = u[0] * u[1]
			du[1] = u[2]
			du[2] = t * u[1]
		},
	}
	got, err := ode.ProbePattern(prob)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := linalg.NewPattern(3, 3, []linalg.Entry{{Row: 0, Col: 0}, {Row: 0, Col: 1}, {Row: 1, Col: 2}, {Row: 2, Col: 1}})
	samePattern(t, got, want)
}

// Probing starts from U0From(P), not U0: a branch taken only there shows.
func TestProbePatternU0From(t *testing.T) {
	prob := ode.Problem[float64]{
		U0: []float64{0, 0}, T0: 0, T1: 1, P: []float32{10},
		U0From: func(u0 []float64, p []float32) { u0[0], u0[1] = float64(p[0]), 1 },
		F: func(du, u []float64, _ []float32, _ float64) {
			du[0], du[1] = 0, -u[1]
			if u[0] > 5 {
				du[0] = u[1]
			}
		},
	}
	got, err := ode.ProbePattern(prob)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := linalg.NewPattern(2, 2, []linalg.Entry{{Row: 0, Col: 1}, {Row: 1, Col: 1}})
	samePattern(t, got, want)
}

func TestCheckStructure(t *testing.T) {
	const N = 10
	prob := probeBruss1D[float64](N)
	for _, s := range []ode.Structure{nil, ode.DenseJacobian{}, ode.MatrixFreeJacobian{},
		ode.BandJacobian{Lower: 2, Upper: 2}, ode.BandJacobian{Lower: 3, Upper: 2},
		ode.SparseJacobian{Pattern: probeBruss1DPattern(N)}, ode.SparseJacobian{Pattern: linalg.BandPattern(2*N, 2, 2)}} {
		prob.JacStructure = s
		if err := ode.CheckStructure(prob); err != nil {
			t.Errorf("%v: %v, want nil", s, err)
		}
	}

	// The band misses (0, 2), first in row order, and each (i, i±2).
	prob.JacStructure = ode.BandJacobian{Lower: 1, Upper: 1}
	err := ode.CheckStructure(prob)
	wanterr.Mentions(t, err, "ode: the Jacobian's band(lower 1, upper 1) misses ∂F_0/∂u_2 (and 35 more entries), found by probing at t=0")

	// A pattern without (13, 11), found at T0: u_6' misses v_5.
	var e []linalg.Entry
	full := probeBruss1DPattern(N)
	for i := range full.Rows {
		for _, j := range full.Row(i) {
			if i != 13 || j != 11 {
				e = append(e, linalg.Entry{Row: i, Col: j})
			}
		}
	}
	p, _ := linalg.NewPattern(2*N, 2*N, e)
	prob.JacStructure = ode.SparseJacobian{Pattern: p}
	err = ode.CheckStructure(prob)
	wanterr.Mentions(t, err, "misses ∂F_13/∂u_11, found by probing at t=0")
	if err != nil && strings.Contains(err.Error(), "more entries") {
		t.Errorf("error %q counts more missing entries, want one", err)
	}

	// A dependency found only at the later time: F_1 = [t > 1]·u_0.
	late := ode.Problem[float64]{
		U0: []float64{1, 1}, T0: 0, T1: 10,
		JacStructure: ode.BandJacobian{Lower: 0, Upper: 1},
		F: func(du, u []float64, _ []float32, t float64) {
			du[0], du[1] = u[1], 0
			if t > 1 {
				du[1] = u[0]
			}
		},
	}
	wanterr.Mentions(t, ode.CheckStructure(late), "misses ∂F_1/∂u_0, found by probing at t=6.18")

	prob.JacStructure = ode.SparseJacobian{Pattern: linalg.BandPattern(N, 2, 2)}
	wanterr.Mentions(t, ode.CheckStructure(prob), "sparse pattern is 10×10, want 20×20")
	prob.JacStructure = ode.SparseJacobian{}
	wanterr.Mentions(t, ode.CheckStructure(prob), "sparse pattern", "nil")
	prob.JacStructure = ode.BandJacobian{Lower: -1}
	wanterr.Mentions(t, ode.CheckStructure(prob), "negative bandwidth")
}

var errProbe = errors.New("the right-hand side failed")

func TestProbePatternErrors(t *testing.T) {
	nan := ode.Problem[float64]{
		U0: []float64{1, 2}, T0: 0, T1: 1,
		F: func(du, u []float64, _ []float32, _ float64) { du[0], du[1] = u[0], math.Log(-u[1]) },
	}
	_, err := ode.ProbePattern(nan)
	wanterr.Mentions(t, err, "ode: ", "not finite at probe point 0 (t=0)", "F_1 = NaN")

	var failed error
	broken := ode.Problem[float64]{
		U0: []float64{1}, T0: 0, T1: 1,
		F: func(du, u []float64, _ []float32, _ float64) {
			du[0] = u[0]
			failed = errProbe
		},
		Err: func() error { return failed },
	}
	_, err = ode.ProbePattern(broken)
	wanterr.Mentions(t, err, "probing the Jacobian's pattern", "the right-hand side failed")
	if !errors.Is(err, errProbe) {
		t.Errorf("error %v does not wrap the callback's error", err)
	}
	_, err = ode.ProbePattern(ode.Problem[float64]{U0: []float64{1}})
	wanterr.Mentions(t, err, "Problem.F is nil")
}
