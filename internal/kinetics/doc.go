// Package kinetics holds chemical kinetics test problems written twice:
// by hand in Go, with the signatures of ode.Problem's fields, and with ad
// ops, as func(u, p ad.Var, t float64) ad.Var for the ad bridge
// (ode/odead). The bench scenario f64 of cmd/flatkit times the one
// against the other, and the tests here check that they agree.
//
//	Robertson  3 species, 3 reactions (cvsRoberts_ASAi_dns of CVODES)
//	POLLU      20 species, 25 reactions (stiffprob.Pollu by hand)
//
// Both are mass-action networks whose reactions have one or two
// reactants. Network writes such a network's right-hand side with ad ops
// from its list of reactions, as vector ops: the reactants gathered by
// index, the rates multiplied once, and the signed rates scattered to the
// species, a fixed handful of ops whatever the size of the network.
//
// The rate constants are the parameters p, one per reaction, in the order
// of the reactions; p may hold more after them.
//
// The package imports ad and internal/stiffprob. Nothing of ours below
// cmd imports it: it is for tests, examples and cmd/flatkit.
package kinetics
