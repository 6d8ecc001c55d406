package ode

// BS3 is the Bogacki–Shampine 3(2) pair: 4 stages, first same as last, so
// 3 evaluations per step. Its interpolant is the free cubic Hermite one, of
// 3rd order. It suits loose tolerances and float32 states.
//
// P. Bogacki, L. F. Shampine, "A 3(2) pair of Runge–Kutta formulas", Appl.
// Math. Lett. 2 (1989) 321–325.
func BS3() Method { return bs3Method }

var bs3B = []float64{2.0 / 9, 1.0 / 3, 4.0 / 9, 0}

var bs3Method = newERKMethod(&tableau{
	name: "BS3", order: 3, embOrder: 2, interpOrder: 3,
	c:    []float64{0, 1.0 / 2, 3.0 / 4, 1},
	a:    [][]float64{{}, {1.0 / 2}, {0, 3.0 / 4}, bs3B[:3]},
	b:    bs3B,
	bhat: []float64{7.0 / 24, 1.0 / 4, 1.0 / 3, 1.0 / 8},
	bi:   hermiteBi(bs3B),
}, false)
