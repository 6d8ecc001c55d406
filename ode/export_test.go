package ode

// Lotka-Volterra and its exact products (forwardsens_internal_test.go),
// for the external tests too: one definition of the problem every
// gradient test is checked on.
var (
	LVF   = lvInF
	LVJVP = lvInJVP
	LVVJP = lvInVJP
)
