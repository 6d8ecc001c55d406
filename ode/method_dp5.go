package ode

// DP5 is the Dormand–Prince 5(4) pair, DOPRI5: 7 stages, first same as
// last, a 5th-order solution and a 4th-order embedded estimate. Its dense
// output is Shampine's free 4th-order one, as in Hairer's contd5.
//
// J. R. Dormand, P. J. Prince, "A family of embedded Runge–Kutta formulae",
// J. Comp. Appl. Math. 6 (1980) 19–26; L. F. Shampine, "Some practical
// Runge–Kutta formulas", Math. Comp. 46 (1986) 135–150; Hairer, Nørsett,
// Wanner I, II.6.
func DP5() Method { return dp5Method }

var dp5B = []float64{35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84, 0}

var dp5Method = newERKMethod(&tableau{
	name: "DP5", order: 5, embOrder: 4, interpOrder: 4,
	c: []float64{0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1, 1},
	a: [][]float64{
		{},
		{1.0 / 5},
		{3.0 / 40, 9.0 / 40},
		{44.0 / 45, -56.0 / 15, 32.0 / 9},
		{19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
		{9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
		dp5B[:6],
	},
	b:    dp5B,
	bhat: []float64{5179.0 / 57600, 0, 7571.0 / 16695, 393.0 / 640, -92097.0 / 339200, 187.0 / 2100, 1.0 / 40},
	bi:   dp5Bi(),
}, false)

// dp5Bi expands Hairer's contd5 form
//
//	u(θ) = u0 + θ(Δ + (1−θ)(h k1 − Δ + θ(2Δ − h k1 − h k7 + (1−θ) h Σ d_i k_i)))
//
// with Δ = h Σ b_i k_i into b_i(θ) = Σ_j bi[i][j−1] θ^j.
func dp5Bi() [][]float64 {
	d := []float64{
		-12715105075.0 / 11282082432, 0, 87487479700.0 / 32700410799, -10690763975.0 / 1880347072,
		701980252875.0 / 199316789632, -1453857185.0 / 822651844, 69997945.0 / 29380423,
	}
	bi := make([][]float64, 7)
	for i := range bi {
		var d1, d7 float64
		if i == 0 {
			d1 = 1
		}
		if i == 6 {
			d7 = 1
		}
		e := d1 - dp5B[i]        // coefficient of θ(1−θ)
		g := 2*dp5B[i] - d1 - d7 // coefficient of θ²(1−θ)
		bi[i] = []float64{d1, -e + g + d[i], -g - 2*d[i], d[i]}
	}
	return bi
}
