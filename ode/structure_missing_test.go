package ode_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/linalg"
)

// TestStructureMissingDependency: a band or sparse structure that lacks
// an entry F depends on is an error naming the entry, whether the
// Jacobian comes from coloured differences or coloured JVPs, not a solve
// with a wrong Jacobian. The sweeps see a missing entry only in a row
// without another entry in its column's group (here F_0 reading u_5);
// CheckStructure finds every one (also F_3 reading u_0, whose row has
// the entry (3, 3) in u_0's group).
func TestStructureMissingDependency(t *testing.T) {
	const n = 8
	// A tridiagonal decay, plus F_0 reading u_5: outside the band (1, 1).
	f := func(du, u []float64, _ []float32, _ float64) {
		for i := range du {
			du[i] = -100 * u[i]
			if i > 0 {
				du[i] += u[i-1]
			}
			if i+1 < n {
				du[i] += u[i+1]
			}
		}
		du[0] += 50 * u[5] * u[5]
	}
	jvp := func(jv, u, v []float64, _ []float32, _ []float64, _ float64) {
		for i := range jv {
			jv[i] = -100 * v[i]
			if i > 0 {
				jv[i] += v[i-1]
			}
			if i+1 < n {
				jv[i] += v[i+1]
			}
		}
		jv[0] += 100 * u[5] * v[5]
	}
	u0 := make([]float64, n)
	for i := range u0 {
		u0[i] = 1 + float64(i)/n
	}
	tri := linalg.BandPattern(n, 1, 1)
	for _, c := range []struct {
		name string
		s    ode.Structure
		jvp  bool
	}{
		{"band, differences", ode.BandJacobian{Lower: 1, Upper: 1}, false},
		{"band, JVPs", ode.BandJacobian{Lower: 1, Upper: 1}, true},
		{"sparse, differences", ode.SparseJacobian{Pattern: tri}, false},
		{"sparse, JVPs", ode.SparseJacobian{Pattern: tri}, true},
	} {
		for _, m := range []ode.Method{ode.BDF(), ode.Rodas5P()} {
			prob := ode.Problem[float64]{F: f, U0: u0, T1: 1, JacStructure: c.s}
			if c.jvp {
				prob.JVP = jvp
			}
			_, err := ode.Solve(context.Background(), prob, m, ode.Tol(1e-6, 1e-8))
			var oe *ode.Error
			if !errors.As(err, &oe) || oe.Code != ode.Failed || !strings.Contains(err.Error(), "misses ∂F_0/∂u_5") {
				t.Errorf("%s, %s: err = %v, want Failed naming ∂F_0/∂u_5", m.Name(), c.name, err)
			}
		}
	}
	// The same problem with the entry declared solves.
	e := []linalg.Entry{{Row: 0, Col: 5}}
	for i := range n {
		for j := max(0, i-1); j <= min(n-1, i+1); j++ {
			e = append(e, linalg.Entry{Row: i, Col: j})
		}
	}
	full, err := linalg.NewPattern(n, n, e)
	if err != nil {
		t.Fatal(err)
	}
	prob := ode.Problem[float64]{F: f, U0: u0, T1: 1, JacStructure: ode.SparseJacobian{Pattern: full}}
	if _, err := ode.Solve(context.Background(), prob, ode.BDF(), ode.Tol(1e-6, 1e-8)); err != nil {
		t.Errorf("with the entry declared: %v", err)
	}
}

// A dependency the sweeps cannot see: F_3 reads u_0, and row 3 has the
// entry (3, 3) in u_0's group of the band's colouring. CheckStructure
// probes every column and names it.
func TestCheckStructureFindsHiddenMiss(t *testing.T) {
	const n = 8
	f := func(du, u []float64, _ []float32, _ float64) {
		for i := range du {
			du[i] = -100 * u[i]
		}
		du[3] += u[0] * u[0]
	}
	u0 := make([]float64, n)
	for i := range u0 {
		u0[i] = 1
	}
	prob := ode.Problem[float64]{F: f, U0: u0, T1: 1, JacStructure: ode.BandJacobian{Lower: 1, Upper: 1}}
	err := ode.CheckStructure(prob)
	if err == nil || !strings.Contains(err.Error(), "∂F_3/∂u_0") {
		t.Errorf("CheckStructure: %v, want an error naming ∂F_3/∂u_0", err)
	}
}
