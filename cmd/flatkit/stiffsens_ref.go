package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/flatkit/flatkit/internal/stiffprob"
	"github.com/flatkit/flatkit/ode"
)

// The reference gradient of stiffsens: central differences of tight
// solves, Rodas5P with the exact band Jacobian at rtol 1e-10, atol 1e-14.
// In each initial value the step is h = 2⁻¹⁰. In each parameter of p =
// (A, B, 50α) (steps exact in float32) the differences at h and h/4 are
// extrapolated (Richardson, the h² term): G is strongly nonlinear in A,
// and the plain difference at h is off by 3e-5 there. At N = 100 the
// extrapolated dG/dθ agrees with CVODES's adjoint at rtol 1e-10 (the
// peer's -check) to 2e-9 and dG/du0 to 1e-6 in its first component, 6e-8
// in its largest. At N = 500 the reference takes 2012 solves, minutes, so
// it is computed once per N and cached in stiffSensCacheDir.
const (
	stiffSensRefRTol, stiffSensRefATol = 1e-10, 1e-14
	stiffSensRefStep                   = 1.0 / 1024
	stiffSensRefVersion                = 1 // bump when the problem or the recipe changes
)

// stiffSensRef is a gradient: G, dG/dθ for θ = (A, B, α) and dG/du0.
type stiffSensRef struct {
	N       int       `json:"n"`
	Version int       `json:"version"`
	About   string    `json:"about"`
	Seconds float64   `json:"seconds"` // to compute it
	G       float64   `json:"G"`
	Theta   []float64 `json:"theta"`
	U0      []float64 `json:"u0"`
}

// stiffSensCacheOverride, if set, is stiffSensCacheDir: tests set it.
var stiffSensCacheOverride string

// stiffSensCacheDir is where the references are kept: the user's cache
// directory, else the temporary one.
func stiffSensCacheDir() string {
	if stiffSensCacheOverride != "" {
		return stiffSensCacheOverride
	}
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "flatkit", "stiffsens")
}

// stiffSensRefPath is the cache file of the reference at N.
func stiffSensRefPath(n int) string {
	return filepath.Join(stiffSensCacheDir(), fmt.Sprintf("ref-N%d-v%d.json", n, stiffSensRefVersion))
}

// stiffSensCachedRef returns the cached reference at N, if there is one.
func stiffSensCachedRef(n int) (*stiffSensRef, bool) {
	b, err := os.ReadFile(stiffSensRefPath(n))
	if err != nil {
		return nil, false
	}
	var r stiffSensRef
	if json.Unmarshal(b, &r) != nil || r.N != n || r.Version != stiffSensRefVersion || len(r.Theta) != 3 || len(r.U0) != 2*n {
		return nil, false
	}
	return &r, true
}

// stiffSensReference returns the reference at N from the cache, or
// computes and caches it; cached says which.
func stiffSensReference(ctx context.Context, n int) (ref *stiffSensRef, cached bool, err error) {
	if r, ok := stiffSensCachedRef(n); ok {
		return r, true, nil
	}
	path := stiffSensRefPath(n)
	r, err := stiffSensCentral(ctx, n)
	if err != nil {
		return nil, false, err
	}
	if b, err := json.Marshal(r); err == nil {
		if os.MkdirAll(filepath.Dir(path), 0o755) == nil {
			_ = os.WriteFile(path, b, 0o644) // a cache: failing to write it costs only time
		}
	}
	return r, false, nil
}

// stiffSensTight solves the problem tightly from u0 with p and returns G.
type stiffSensTight struct {
	it *ode.Integrator[float64]
	n  int
}

func newStiffSensTight(b *stiffprob.Bruss1DParams[float64]) (*stiffSensTight, error) {
	prob := ode.Problem[float64]{F: b.F, Jac: b.JacBand, JacStructure: ode.BandJacobian{Lower: 2, Upper: 2},
		U0: b.U0(), T0: 0, T1: 10, P: b.P()}
	it, err := ode.NewIntegrator(prob, ode.Rodas5P(), ode.Tol(stiffSensRefRTol, stiffSensRefATol), ode.MaxSteps(10_000_000))
	if err != nil {
		return nil, err
	}
	return &stiffSensTight{it: it, n: b.N}, nil
}

func (s *stiffSensTight) loss(ctx context.Context, u0 []float64, p []float32) (float64, error) {
	if err := s.it.Reinit(u0, 0, 10, p); err != nil {
		return 0, err
	}
	if err := s.it.Run(ctx); err != nil {
		return 0, err
	}
	return stiffSensG(s.it.U()), nil
}

// stiffSensG is the loss ½ Σ u_i² over the u components of the state.
func stiffSensG(u []float64) float64 {
	var g float64
	for i := 0; i < len(u); i += 2 {
		g += u[i] * u[i]
	}
	return g / 2
}

// stiffSensCentral computes the reference at N by central differences,
// the components spread over GOMAXPROCS goroutines.
func stiffSensCentral(ctx context.Context, n int) (*stiffSensRef, error) {
	start := time.Now()
	b := stiffprob.NewBruss1DParams[float64](n)
	u0, p := b.U0(), b.P()
	d := len(u0)
	r := &stiffSensRef{N: n, Version: stiffSensRefVersion, Theta: make([]float64, 3), U0: make([]float64, d),
		About: fmt.Sprintf("central differences of Rodas5P with the exact band Jacobian at rtol %g, atol %g: step 2^-10 in u0; in (A, B, 50α) steps 2^-10 and 2^-12, extrapolated",
			stiffSensRefRTol, stiffSensRefATol)}
	comps := make(chan int)
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		first = errors.Join(first, err)
		mu.Unlock()
	}
	const h = stiffSensRefStep
	workers := max(1, runtime.GOMAXPROCS(0))
	for range workers {
		s, err := newStiffSensTight(b)
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, q := make([]float64, d), make([]float32, 3)
			for c := range comps {
				copy(u, u0)
				copy(q, p)
				diff := func(h float64) (float64, error) {
					var gp, gm float64
					var err1, err2 error
					if c < 3 {
						q[c] = p[c] + float32(h)
						gp, err1 = s.loss(ctx, u, q)
						q[c] = p[c] - float32(h)
						gm, err2 = s.loss(ctx, u, q)
						q[c] = p[c]
					} else {
						u[c-3] = u0[c-3] + h
						gp, err1 = s.loss(ctx, u, q)
						u[c-3] = u0[c-3] - h
						gm, err2 = s.loss(ctx, u, q)
						u[c-3] = u0[c-3]
					}
					return (gp - gm) / (2 * h), errors.Join(err1, err2)
				}
				g, err := diff(h)
				if err == nil && c < 3 {
					var g4 float64
					g4, err = diff(h / 4)
					g = g4 + (g4-g)/15 // the h² terms cancel
				}
				if err != nil {
					fail(fmt.Errorf("component %d: %w", c, err))
					continue
				}
				if c < 3 {
					r.Theta[c] = g
				} else {
					r.U0[c-3] = g
				}
			}
		}()
	}
	for c := range 3 + d {
		comps <- c
	}
	close(comps)
	wg.Wait()
	if first != nil {
		return nil, fmt.Errorf("reference N=%d: %w", n, first)
	}
	r.Theta[2] *= 50 // dG/dα = 50 dG/dp₃
	s, err := newStiffSensTight(b)
	if err != nil {
		return nil, err
	}
	if r.G, err = s.loss(ctx, u0, p); err != nil {
		return nil, err
	}
	r.Seconds = math.Round(time.Since(start).Seconds()*10) / 10
	return r, nil
}

// stiffSensErrors returns the relative errors of a gradient against ref:
// the largest over the components of dG/dθ, and in norm over dG/du0 (nil
// when g has none, -1 then); max is the larger of the two.
func stiffSensErrors(ref *stiffSensRef, theta, u0 []float64) (maxErr, eTheta, eU0 float64) {
	for k, w := range ref.Theta {
		eTheta = max(eTheta, math.Abs(theta[k]-w)/math.Abs(w))
	}
	if u0 == nil {
		return eTheta, eTheta, -1
	}
	var num, den float64
	for i, w := range ref.U0 {
		num += (u0[i] - w) * (u0[i] - w)
		den += w * w
	}
	eU0 = math.Sqrt(num / den)
	return max(eTheta, eU0), eTheta, eU0
}
