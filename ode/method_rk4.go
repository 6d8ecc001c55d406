package ode

// RK4 is the classical fourth-order Runge–Kutta method with fixed steps:
// give FixedStep(dt). It takes 4 evaluations per step, with the cubic
// Hermite interpolant for SaveAt, Dense and events. It has no error
// estimate, so Tol does not apply.
//
// The tableau carries a fifth stage f(t+h, u_new) in FSAL form; it is
// evaluated lazily and is the next step's first stage, so a step costs 4
// evaluations.
func RK4() Method { return rk4Method }

var rk4B = []float64{1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6, 0}

var rk4Method = newERKMethod(&tableau{
	name: "RK4", order: 4, interpOrder: 3,
	c:  []float64{0, 1.0 / 2, 1.0 / 2, 1, 1},
	a:  [][]float64{{}, {1.0 / 2}, {0, 1.0 / 2}, {0, 0, 1}, rk4B[:4]},
	b:  rk4B,
	bi: hermiteBi(rk4B),
}, true)
