package ode_test

import "math"

// Reference problems, constants as float64 literals.

type refProblem struct {
	name string
	f    func(du, u []float64, p []float32, t float64)
	u0   []float64
	t1   float64
	ref  []float64
}

func lotkaVolterra(du, u []float64, _ []float32, _ float64) {
	du[0] = 1.5*u[0] - u[0]*u[1]
	du[1] = -3*u[1] + u[0]*u[1]
}

func rigidBody(du, u []float64, _ []float32, _ float64) {
	du[0] = -2 * u[1] * u[2]
	du[1] = 1.25 * u[0] * u[2]
	du[2] = -0.5 * u[0] * u[1]
}

func vanDerPol(du, u []float64, _ []float32, _ float64) {
	du[0] = u[1]
	du[1] = (1-u[0]*u[0])*u[1] - u[0]
}

func fitzHughNagumo(du, u []float64, _ []float32, _ float64) {
	v, w := u[0], u[1]
	du[0] = v - v*v*v/3 - w + 0.5
	du[1] = (v + 0.7 - 0.8*w) / 12.5
}

var refProblems = []refProblem{
	{"LotkaVolterra", lotkaVolterra, []float64{1, 1}, 10, []float64{1.026344767575089319, 0.909691078136041618}},
	{"RigidBody", rigidBody, []float64{1, 0, 0.9}, 20, []float64{0.60620385396481222, 0.62874721045017797, 0.80738514857560258}},
	{"VanDerPol", vanDerPol, []float64{math.Sqrt(3), 0}, 1, []float64{1.2037682426001958, -0.91625001271349036}},
	{"FitzHughNagumo", fitzHughNagumo, []float64{1, 1}, 1, []float64{1.1232216638378457, 1.0751659635137223}},
}

// weightedErr is the RMS over components of (u_i − ref_i)/(atol + rtol·|ref_i|):
// the error measured in the solver's own norm.
func weightedErr(u, ref []float64, rtol, atol float64) float64 {
	s := 0.0
	for i := range u {
		r := (u[i] - ref[i]) / (atol + rtol*math.Abs(ref[i]))
		s += r * r
	}
	return math.Sqrt(s / float64(len(u)))
}
