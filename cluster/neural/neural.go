package neural

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/flatkit/flatkit/cluster"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// Args are the arguments of "node", in JSON.
type Args struct {
	N         int     `json:"n"`                // trajectories
	Hidden    int     `json:"hidden,omitempty"` // width of the hidden layers (default 16)
	Depth     int     `json:"depth,omitempty"`  // hidden layers (default 2)
	Seed      uint64  `json:"seed,omitempty"`   // initial states
	T1        float64 `json:"t1,omitempty"`     // default 1
	Obs       int     `json:"obs,omitempty"`    // observations per trajectory (default 8)
	ShardSize int     `json:"shard,omitempty"`  // default ode.DefaultShardSize
}

// Limits of the arguments, so that a request cannot make a worker build an
// absurd network.
const (
	MaxHidden = 4096
	MaxDepth  = 16
	MaxObs    = 4096
)

var once sync.Once

// Register registers "node", of float32 states. Calling it again does
// nothing.
func Register() {
	once.Do(func() { cluster.Register("node", Build) })
}

// Parse decodes and checks the arguments and fills the defaults.
func Parse(b []byte) (Args, error) {
	var a Args
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("neural: arguments: %w", err)
	}
	if a.Hidden == 0 {
		a.Hidden = 16
	}
	if a.Depth == 0 {
		a.Depth = 2
	}
	if a.T1 == 0 {
		a.T1 = 1
	}
	if a.Obs == 0 {
		a.Obs = 8
	}
	switch {
	case a.N < 0:
		return a, fmt.Errorf("neural: n = %d, want ≥ 0", a.N)
	case a.Hidden < 1 || a.Hidden > MaxHidden:
		return a, fmt.Errorf("neural: hidden = %d, want 1 … %d", a.Hidden, MaxHidden)
	case a.Depth < 1 || a.Depth > MaxDepth:
		return a, fmt.Errorf("neural: depth = %d, want 1 … %d", a.Depth, MaxDepth)
	case !(a.T1 > 0) || math.IsInf(a.T1, 0):
		return a, fmt.Errorf("neural: t1 = %g, want finite > 0", a.T1)
	case a.Obs < 1 || a.Obs > MaxObs:
		return a, fmt.Errorf("neural: obs = %d, want 1 … %d", a.Obs, MaxObs)
	case a.ShardSize < 0:
		return a, fmt.Errorf("neural: shard = %d, want ≥ 0", a.ShardSize)
	}
	return a, nil
}

// Network is the MLP of a: 2 → Hidden (tanh) → … → 2.
func Network(a Args) model.Layer {
	layers := []model.Layer{model.Dense(2, a.Hidden), model.Tanh()}
	for range a.Depth - 1 {
		layers = append(layers, model.Dense(a.Hidden, a.Hidden), model.Tanh())
	}
	return model.Chain(append(layers, model.Dense(a.Hidden, 2))...)
}

// Init returns the network's initial θ for args, drawn from seed.
func Init(args []byte, seed uint64) ([]float32, error) {
	a, err := Parse(args)
	if err != nil {
		return nil, err
	}
	return model.Init(Network(a), rand.New(rand.NewPCG(seed, 0x6e6f6465)))
}

// U0 is trajectory i's initial state.
func U0(a Args, i int) [2]float32 {
	rng := rand.New(rand.NewPCG(a.Seed, uint64(i)))
	r, phi := 0.5+rng.Float64(), 2*math.Pi*rng.Float64()
	return [2]float32{float32(r * math.Cos(phi)), float32(r * math.Sin(phi))}
}

// Target is the spiral's state at t from u0.
func Target(u0 [2]float32, t float64) [2]float64 {
	d := math.Exp(-0.1 * t)
	c, s := math.Cos(2*t), math.Sin(2*t)
	x, y := float64(u0[0]), float64(u0[1])
	return [2]float64{d * (c*x + s*y), d * (-s*x + c*y)}
}

// Build is the Builder of "node".
func Build(args []byte, theta []float32) (*cluster.Spec[float32], error) {
	a, err := Parse(args)
	if err != nil {
		return nil, err
	}
	prob, err := odead.NeuralProblem(Network(a), []float32{1, 0}, 0, a.T1, theta)
	if err != nil {
		return nil, fmt.Errorf("neural: %w", err)
	}
	ens := ode.Ensemble[float32]{Base: prob, N: a.N, Seed: a.Seed, ShardSize: a.ShardSize,
		Modify: func(i int, _ *rand.Rand, p *ode.Problem[float32]) {
			u0 := U0(a, i)
			copy(p.U0, u0[:])
		}}
	at := make([]float64, a.Obs)
	for k := range at {
		at[k] = a.T1 * float64(k+1) / float64(a.Obs)
	}
	scale := 1 / float64(2*a.Obs)
	lossFor := func(i int) ode.Loss[float32] {
		u0 := U0(a, i)
		return ode.Loss[float32]{At: at, Point: func(k int, t float64, u, dl []float32) float64 {
			want := Target(u0, t)
			var v float64
			for j := range u {
				r := float64(u[j]) - want[j]
				v += scale * r * r
				dl[j] = float32(2 * scale * r)
			}
			return v
		}}
	}
	return &cluster.Spec[float32]{
		Ensemble: ens,
		Method:   ode.Tsit5(),
		Options:  []ode.Option{ode.Tol(1e-4, 1e-6)},
		LossFor:  lossFor,
		// The quadrature of dL/dθ out of the step-size control, as in
		// examples/neuralode: in float32 its rounding would drive the
		// backward solve to tiny steps.
		Sensitivity: ode.InterpolatingAdjoint{QuadTol: ode.Tolerance{Rel: 1e-4, Abs: math.Inf(1)}},
	}, nil
}
