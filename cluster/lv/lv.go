package lv

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/flatkit/flatkit/cluster"
	"github.com/flatkit/flatkit/internal/lotkavolterra"
	"github.com/flatkit/flatkit/ode"
)

// Args are the arguments of the registered ensembles, in JSON.
type Args struct {
	N         int     `json:"n"`
	Seed      uint64  `json:"seed,omitempty"`
	ShardSize int     `json:"shard,omitempty"`  // default ode.DefaultShardSize
	Spread    float64 `json:"spread,omitempty"` // default 0.1
	T1        float64 `json:"t1,omitempty"`     // default 10
	// Reduce sums (u0, u1, u0², u1²) of the final states into Acc.
	Reduce bool `json:"reduce,omitempty"`
	// DropOutputs keeps no per-trajectory outputs (with Reduce).
	DropOutputs bool `json:"drop,omitempty"`
	// FailEvery > 0 makes every trajectory i with i % FailEvery ==
	// FailEvery−1 fail, to test failure reports. Such a trajectory gets T1
	// = +Inf, an invalid problem.
	FailEvery int `json:"fail_every,omitempty"`
	// MaxSteps, if > 0, is ode.MaxSteps.
	MaxSteps int `json:"max_steps,omitempty"`
}

// Theta is the default parameter vector (1.5, 1, 3, 1). θ may be longer, to
// test large θ: the values after the first four are carried but unused.
func Theta() []float32 { return []float32{1.5, 1, 3, 1} }

var once sync.Once

// Register registers "lv", of float64 states, and "lv32", of float32
// states. Calling it again does nothing.
func Register() {
	once.Do(func() {
		cluster.Register("lv", Build[float64])
		cluster.Register("lv32", Build[float32])
	})
}

// Parse decodes and checks the arguments.
func Parse(b []byte) (Args, error) {
	var a Args
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("lv: arguments: %w", err)
	}
	switch {
	case a.N < 0:
		return a, fmt.Errorf("lv: n = %d, want ≥ 0", a.N)
	case a.ShardSize < 0:
		return a, fmt.Errorf("lv: shard = %d, want ≥ 0", a.ShardSize)
	case a.Spread < 0 || a.Spread > 1:
		return a, fmt.Errorf("lv: spread = %g, want 0 … 1", a.Spread)
	case a.T1 < 0:
		return a, fmt.Errorf("lv: t1 = %g, want ≥ 0", a.T1)
	case a.DropOutputs && !a.Reduce:
		return a, fmt.Errorf("lv: drop without reduce keeps nothing, want reduce with drop")
	}
	if a.Spread == 0 {
		a.Spread = 0.1
	}
	if a.T1 == 0 {
		a.T1 = 10
	}
	return a, nil
}

// Build is the Builder of "lv" and "lv32".
func Build[T ode.Float](args []byte, theta []float32) (*cluster.Spec[T], error) {
	a, err := Parse(args)
	if err != nil {
		return nil, err
	}
	if len(theta) < 4 {
		return nil, fmt.Errorf("lv: θ has %d values, want ≥ 4", len(theta))
	}
	spread, fail := a.Spread, a.FailEvery
	ens := ode.Ensemble[T]{
		Base:      ode.Problem[T]{F: lotkavolterra.F[T], JVP: lotkavolterra.JVP[T], VJP: lotkavolterra.VJP[T], U0: []T{1, 1}, T0: 0, T1: a.T1, P: theta},
		N:         a.N,
		Seed:      a.Seed,
		ShardSize: a.ShardSize,
		Modify: func(i int, rng *rand.Rand, p *ode.Problem[T]) {
			p.P = theta[:4]
			p.U0[0] += T(spread * rng.NormFloat64())
			p.U0[1] += T(spread * rng.NormFloat64())
			if fail > 0 && i%fail == fail-1 {
				p.T1 = math.Inf(1)
			}
		},
		DropOutputs: a.DropOutputs,
	}
	if a.Reduce {
		ens.ReduceSize = 4
		ens.Reduce = func(acc []float64, i int, out []T) {
			u0, u1 := float64(out[0]), float64(out[1])
			acc[0] += u0
			acc[1] += u1
			acc[2] += u0 * u0
			acc[3] += u1 * u1
		}
	}
	s := &cluster.Spec[T]{Ensemble: ens, Method: ode.Tsit5(), LossFor: lossFor[T](a.T1), Sensitivity: ode.InterpolatingAdjoint{}}
	if a.MaxSteps > 0 {
		s.Options = append(s.Options, ode.MaxSteps(a.MaxSteps))
	}
	return s, nil
}

func lossFor[T ode.Float](t1 float64) func(i int) ode.Loss[T] {
	at := []float64{t1 / 2, t1}
	return func(i int) ode.Loss[T] {
		target := T(1 + 0.01*float64(i%100))
		return ode.Loss[T]{At: at, Point: func(k int, t float64, u, dl []T) float64 {
			var v float64
			for j := range u {
				d := u[j] - target
				v += float64(d*d) / 2
				dl[j] = d
			}
			return v
		}}
	}
}
