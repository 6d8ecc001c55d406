package ode_test

import (
	"context"
	"fmt"

	"github.com/flatkit/flatkit/ode"
)

// The gradient of a loss of a Lotka-Volterra solve with respect to its four
// rates and its initial state, by the adjoint method, from a right-hand
// side with its derivative products written by hand.
func ExampleGradient() {
	prob := ode.Problem[float64]{
		F: func(du, u []float64, p []float32, t float64) {
			du[0] = float64(p[0])*u[0] - float64(p[1])*u[0]*u[1]
			du[1] = -float64(p[2])*u[1] + float64(p[3])*u[0]*u[1]
		},
		// VJP adds wᵀ∂F/∂u into du and wᵀ∂F/∂p into dp.
		VJP: func(du, dp, w, u []float64, p []float32, t float64) {
			du[0] += w[0]*(float64(p[0])-float64(p[1])*u[1]) + w[1]*float64(p[3])*u[1]
			du[1] += -w[0]*float64(p[1])*u[0] + w[1]*(-float64(p[2])+float64(p[3])*u[0])
			if dp != nil {
				dp[0] += w[0] * u[0]
				dp[1] -= w[0] * u[0] * u[1]
				dp[2] -= w[1] * u[1]
				dp[3] += w[1] * u[0] * u[1]
			}
		},
		U0: []float64{1, 1}, T0: 0, T1: 10, P: []float32{1.5, 1, 3, 1},
	}
	// G = ‖1 − u(10)‖²/2 (SUNDIALS' cvsLotkaVolterra_ASA example).
	loss := ode.Loss[float64]{At: []float64{10}, Saved: func(ts []float64, us, dLdus [][]float64) float64 {
		a, b := 1-us[0][0], 1-us[0][1]
		dLdus[0][0], dLdus[0][1] = -a, -b
		return (a*a + b*b) / 2
	}}
	g, err := ode.Gradient(context.Background(), prob, ode.Tsit5(), loss, ode.InterpolatingAdjoint{}, ode.Tol(1e-10, 1e-12))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("G = %.8f\ndG/dp = %.7f\ndG/du0 = %.7f\ndG/dT1 = %.7f\n", g.Value, g.P, g.U0, g.T1)
	// Output:
	// G = 0.00442487
	// dG/dp = [0.6219616 0.0680014 0.1691765 0.2725607]
	// dG/du0 = [0.2995995 -0.0141518]
	// dG/dT1 = 0.1781034
}
