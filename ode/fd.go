package ode

// finiteDiffJVP returns a JVP of f by finite differences (for
// FiniteDiffDerivatives). TODO(helper): steps and accuracy.
func finiteDiffJVP[T Float](f func(du, u []T, p []float32, t float64), o *options) func(jv, u, v []T, p []float32, dp []T, t float64) {
	panic("ode: finiteDiffJVP not implemented")
}

// finiteDiffVJP returns a VJP of f by finite differences (for
// FiniteDiffDerivatives).
func finiteDiffVJP[T Float](f func(du, u []T, p []float32, t float64), o *options) func(du, dp, w, u []T, p []float32, t float64) {
	panic("ode: finiteDiffVJP not implemented")
}
