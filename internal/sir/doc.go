// Package sir is the SIR epidemic fit that tests of fitting share: β and γ
// of
//
//	S' = −β S I,  I' = β S I − γ I
//
// fitted to 30 noisy observations of I, with gradients through the solve.
// The true values are β = 0.5, γ = 0.1 with S(0) = 0.99, I(0) = 0.01 on
// t ∈ [0, 60]; the observations at t = 2, 4, …, 60 carry Gaussian noise of
// σ = 0.01 drawn with a fixed seed. The fit starts at β = 0.3, γ = 0.2,
// from where L-BFGS's first trial step takes γ below zero, where the
// epidemic grows without bound: a fit that survives it has to step back
// from a failed or non-finite evaluation.
//
// The package imports ode, so only ode's external tests and packages after
// it use it.
package sir
