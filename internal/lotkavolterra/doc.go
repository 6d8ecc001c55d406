// Package lotkavolterra is the Lotka-Volterra problem with its exact
// derivative products, written once for every place that solves or
// differentiates it: ode's tests, the bench scenarios of cmd/flatkit and
// the cluster's registered ensembles.
//
//	u1' = p1 u1 − p2 u1 u2,  u2' = −p3 u2 + p4 u1 u2
//
// The functions have the signatures of ode.Problem's fields F, JVP, VJP,
// Jac and ParamJac. They read only p[0:4], so a θ may carry more after the
// rates. The package imports nothing, so that ode's internal tests can use
// it too.
package lotkavolterra
