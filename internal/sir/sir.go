package sir

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/flatkit/flatkit/ode"
)

// The problem's constants.
const (
	Beta  = 0.5  // the true infection rate β
	Gamma = 0.1  // the true recovery rate γ
	S0    = 0.99 // S(0)
	I0    = 0.01 // I(0)
	T1    = 60.0 // the end of the span
	Sigma = 0.01 // the observation noise's standard deviation
	N     = 30   // the number of observations
	Seed  = 1    // the noise's seed
)

// Start is the fit's starting point (β, γ).
func Start() []float32 { return []float32{0.3, 0.2} }

// F is the right-hand side; θ = (β, γ).
func F(du, u []float64, p []float32, t float64) {
	b, g := float64(p[0]), float64(p[1])
	du[0] = -b * u[0] * u[1]
	du[1] = b*u[0]*u[1] - g*u[1]
}

// JVP is ∂F/∂u·v + ∂F/∂p·dp.
func JVP(jv, u, v []float64, p []float32, dp []float64, t float64) {
	b, g := float64(p[0]), float64(p[1])
	jv[0] = -b*u[1]*v[0] - b*u[0]*v[1]
	jv[1] = b*u[1]*v[0] + (b*u[0]-g)*v[1]
	if dp != nil {
		jv[0] += -u[0] * u[1] * dp[0]
		jv[1] += u[0]*u[1]*dp[0] - u[1]*dp[1]
	}
}

// VJP adds wᵀ∂F/∂u into du and wᵀ∂F/∂p into dp.
func VJP(du, dp, w, u []float64, p []float32, t float64) {
	b, g := float64(p[0]), float64(p[1])
	du[0] += (w[1] - w[0]) * b * u[1]
	du[1] += (w[1]-w[0])*b*u[0] - w[1]*g
	if dp != nil {
		dp[0] += (w[1] - w[0]) * u[0] * u[1]
		dp[1] -= w[1] * u[1]
	}
}

// Problem is the SIR problem at the parameters θ = (β, γ).
func Problem(θ []float32) ode.Problem[float64] {
	return ode.Problem[float64]{F: F, JVP: JVP, VJP: VJP, U0: []float64{S0, I0}, T1: T1, P: θ}
}

// Times are the observation times 2, 4, …, 60.
func Times() []float64 {
	ts := make([]float64, N)
	for i := range ts {
		ts[i] = T1 * float64(i+1) / N
	}
	return ts
}

// Observations solves the true model tightly and returns I at Times with
// the seeded noise added.
func Observations() ([]float64, error) {
	sol, err := ode.Solve(context.Background(), Problem([]float32{Beta, Gamma}), ode.Tsit5(),
		ode.Tol(1e-10, 1e-12), ode.SaveAt(Times()...))
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(Seed, 7))
	obs := make([]float64, N)
	for i, u := range sol.U {
		obs[i] = u[1] + Sigma*rng.NormFloat64()
	}
	return obs, nil
}

// Loss is the negative log-likelihood of obs up to a constant,
// Σ (I(tᵢ) − obsᵢ)² / (2σ²).
func Loss(obs []float64) ode.Loss[float64] {
	return ode.Loss[float64]{At: Times(), Point: func(i int, t float64, u, dLdu []float64) float64 {
		d := (u[1] - obs[i]) / Sigma
		dLdu[1] = d / Sigma
		return d * d / 2
	}}
}

// Check returns an error unless θ = (β, γ) is within rel of the true
// values.
func Check(θ []float32, rel float64) error {
	for i, want := range []float64{Beta, Gamma} {
		if e := math.Abs(float64(θ[i])-want) / want; !(e <= rel) {
			return fmt.Errorf("θ = %v; want (%v, %v) within %g (θ[%d] is off by %.3g)", θ, Beta, Gamma, rel, i, e)
		}
	}
	return nil
}
