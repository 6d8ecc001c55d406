package ode

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/flatkit/flatkit/ode/linalg"
)

// Probing finds the pattern of ∂F/∂u of a plain Go right-hand side by
// perturbing one component of u at a time and watching which components
// of F change. It probes at probePoints points: U0 at T0, then u0 moved
// by a deterministic pseudo-random amount at T0 and at a later time, so
// that a product u_i·u_j with u_j = 0 at U0 still shows.

// probePoints is the number of points probe evaluates F around.
const probePoints = 3

// probeTime is the fraction of the span from T0 to T1 at which each point
// is probed. The last is away from the middle and the ends of the span.
var probeTime = [probePoints]float64{0, 0, 0.618}

// probeIncrement is the relative size of a probe's perturbation of u_j:
// large enough that a dependency shows above F's rounding, which a
// pattern needs rather than an accurate derivative.
const probeIncrement = 0x1p-10

// ProbePattern finds the pattern of ∂F/∂u of prob by probing: at each of
// three points it evaluates F once there and once with each component
// u_j perturbed, n+1 evaluations per point, and records (i, j) when F_i
// changed. The points are U0 (or U0From(P)) at T0, then U0 moved by a
// deterministic pseudo-random relative amount, at T0 and at T0 plus 0.618
// of the span. The moved points show a product u_i·u_j whose factor u_j is
// zero at U0. The diagonal is not added: an entry is in the pattern only
// when F_i was seen to depend on u_i.
//
// Probing can miss a dependency, and a pattern that misses one gives
// wrong Jacobians. A dependency is missed when it hides behind a branch
// that none of the probed points takes, when it cancels exactly, or when
// its effect is below F's rounding at the probe's increment. A right-hand
// side written with ad ops gets an exact pattern from package odead
// instead. The cost is 3(n+1) evaluations of F, so for n in the tens of
// thousands probe once and keep the pattern.
//
// The error names the probe point when F is not finite there, and wraps
// Problem.Err's error when a callback failed.
func ProbePattern[T Float](prob Problem[T]) (*linalg.Pattern, error) {
	var entries []linalg.Entry
	err := probe(&prob, func(i, j int, _ float64) {
		entries = append(entries, linalg.Entry{Row: i, Col: j})
	})
	if err != nil {
		return nil, err
	}
	n := len(prob.U0)
	return linalg.NewPattern(n, n, entries)
}

// CheckStructure probes prob's right-hand side, as ProbePattern does, and
// checks that prob.JacStructure has every entry found. It returns an
// error naming the first row and column, in row order, where F depends on
// u and the band or the sparse pattern has no entry, with the time of the
// probe that found it. A dense or matrix-free structure has every entry,
// and nothing is probed. A check that passes says only that probing found
// nothing missing: ProbePattern says what probing can miss.
func CheckStructure[T Float](prob Problem[T]) error {
	n := len(prob.U0)
	var has func(i, j int) bool
	switch s := prob.JacStructure.(type) {
	case nil, DenseJacobian, MatrixFreeJacobian:
		return nil
	case BandJacobian:
		if s.Lower < 0 || s.Upper < 0 {
			return errorf("the Jacobian's %v has a negative bandwidth, want both at least 0", s)
		}
		has = func(i, j int) bool { return j-i >= -s.Lower && j-i <= s.Upper }
	case SparseJacobian:
		if err := s.Pattern.Validate(); err != nil {
			return errorf("the Jacobian's sparse pattern: %w", err)
		}
		if s.Pattern.Rows != n || s.Pattern.Cols != n {
			return errorf("the Jacobian's sparse pattern is %d×%d, want %d×%d for %d states", s.Pattern.Rows, s.Pattern.Cols, n, n, n)
		}
		has = s.Pattern.Has
	default:
		return errorf("CheckStructure: structure %v, want a DenseJacobian, BandJacobian, SparseJacobian or MatrixFreeJacobian", s)
	}
	type miss struct {
		linalg.Entry
		t float64
	}
	var missing []miss
	seen := map[linalg.Entry]bool{}
	err := probe(&prob, func(i, j int, t float64) {
		e := linalg.Entry{Row: i, Col: j}
		if !has(i, j) && !seen[e] {
			seen[e] = true
			missing = append(missing, miss{e, t})
		}
	})
	if err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	first := slices.MinFunc(missing, func(a, b miss) int {
		return cmp.Or(cmp.Compare(a.Row, b.Row), cmp.Compare(a.Col, b.Col))
	})
	more := ""
	if len(missing) > 1 {
		more = fmt.Sprintf(" (and %d more entries)", len(missing)-1)
	}
	return errorf("the Jacobian's %v misses ∂F_%d/∂u_%d%s, found by probing at t=%g", prob.JacStructure, first.Row, first.Col, more, first.t)
}

// probe evaluates F around each probe point and calls found(i, j, t) for
// every F_i that changed when u_j was perturbed at the point of time t.
// An entry may be found at several points, and is reported at each.
func probe[T Float](prob *Problem[T], found func(i, j int, t float64)) error {
	if err := prob.validate(); err != nil {
		return err
	}
	n := len(prob.U0)
	u0 := slices.Clone(prob.U0)
	if prob.U0From != nil {
		prob.U0From(u0, prob.P)
		if err := probeErr(prob); err != nil {
			return err
		}
		if err := checkState(u0, "U0From(P)"); err != nil {
			return err
		}
	}
	// typ is the typical magnitude of u, the scale of a perturbation of a
	// component that is zero.
	typ := 0.0
	for _, v := range u0 {
		typ += math.Abs(float64(v))
	}
	typ /= float64(n)
	if typ == 0 || math.IsInf(typ, 0) {
		typ = 1
	}
	u, f0, f := make([]T, n), make([]T, n), make([]T, n)
	rng := rand.New(rand.NewPCG(0x9e3779b97f4a7c15, 0xf1a7))
	for k := range probePoints {
		t := prob.T0 + probeTime[k]*(prob.T1-prob.T0)
		copy(u, u0)
		if k > 0 {
			// Move each component by ±(1/8 to 1/4) of its magnitude plus
			// the typical one.
			for i, v := range u0 {
				r := 0.125 + 0.125*rng.Float64()
				if rng.IntN(2) == 0 {
					r = -r
				}
				u[i] = v + T(r*(math.Abs(float64(v))+typ))
			}
		}
		prob.F(f0, u, prob.P, t)
		if err := probeErr(prob); err != nil {
			return err
		}
		for i, v := range f0 {
			if x := float64(v); math.IsNaN(x) || math.IsInf(x, 0) {
				return errorf("F is not finite at probe point %d (t=%g): F_%d = %g, want finite values", k, t, i, x)
			}
		}
		for j, uj := range u {
			u[j] = uj + T(probeIncrement*(math.Abs(float64(uj))+typ))
			prob.F(f, u, prob.P, t)
			u[j] = uj
			for i, v := range f {
				// A non-finite value differs too: it counts as a dependency.
				if v != f0[i] {
					found(i, j, t)
				}
			}
		}
		if err := probeErr(prob); err != nil {
			return err
		}
	}
	return nil
}

// probeErr is the error of prob's callbacks, if any failed.
func probeErr[T Float](prob *Problem[T]) error {
	if prob.Err == nil {
		return nil
	}
	if err := prob.Err(); err != nil {
		return errorf("probing the Jacobian's pattern: %w", err)
	}
	return nil
}
