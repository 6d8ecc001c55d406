package main

import (
	"context"
	"math/rand/v2"

	"github.com/flatkit/flatkit/ode"
)

// trajectory is one initial condition with its true path and, for training
// trajectories, its noisy observations.
type trajectory struct {
	u0    []float32
	obs   [][]float32 // at obsTimes; nil for held-out ones
	truth [][]float64 // at denseTimes, from the true system
}

type dataset struct {
	train, held []trajectory
}

var (
	obsTimes   = linspace(t1/nSaved, t1, nSaved)
	denseTimes = linspace(0, t1, nDense)
)

func linspace(a, b float64, n int) []float64 {
	ts := make([]float64, n)
	for k := range ts {
		ts[k] = a + (b-a)*float64(k)/float64(n-1)
	}
	return ts
}

// lotkaVolterra is the true right-hand side, in float64.
func lotkaVolterra(du, u []float64, _ []float32, _ float64) {
	du[0] = alpha*u[0] - beta*u[0]*u[1]
	du[1] = -delta*u[1] + gamma*u[0]*u[1]
}

// makeData draws the initial conditions, solves the true system (float64,
// rtol 1e-10) and adds the observation noise, all from seed.
func makeData(ctx context.Context, seed uint64) (*dataset, error) {
	draw := func(rng *rand.Rand, n int) []trajectory {
		tr := make([]trajectory, n)
		for i := range tr {
			tr[i].u0 = []float32{
				float32(1 + spread*(2*rng.Float64()-1)),
				float32(1 + spread*(2*rng.Float64()-1)),
			}
		}
		return tr
	}
	d := &dataset{train: draw(rand.New(rand.NewPCG(seed, 1)), nTrain), held: draw(rand.New(rand.NewPCG(seed, 3)), nHeld)}
	solve := func(tr *trajectory, ts []float64) ([][]float64, error) {
		prob := ode.Problem[float64]{F: lotkaVolterra, U0: []float64{float64(tr.u0[0]), float64(tr.u0[1])}, T1: t1}
		sol, err := ode.Solve(ctx, prob, ode.Tsit5(), ode.Tol(1e-10, 1e-12), ode.SaveAt(ts...))
		if err != nil {
			return nil, err
		}
		return sol.U, nil
	}
	for _, set := range [][]trajectory{d.train, d.held} {
		for i := range set {
			var err error
			if set[i].truth, err = solve(&set[i], denseTimes); err != nil {
				return nil, err
			}
		}
	}
	noise := rand.New(rand.NewPCG(seed, 2))
	for i := range d.train {
		tr := &d.train[i]
		us, err := solve(tr, obsTimes)
		if err != nil {
			return nil, err
		}
		tr.obs = make([][]float32, nSaved)
		for k, u := range us {
			tr.obs[k] = []float32{float32(u[0] + sigma*noise.NormFloat64()), float32(u[1] + sigma*noise.NormFloat64())}
		}
	}
	return d, nil
}
