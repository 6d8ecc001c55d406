package stiffprob

// Pollu is POLLU of the Test Set for IVP Solvers (Bari): the chemistry of
// an air pollution model of the Dutch National Institute of Public Health
// and Environmental Protection, 20 species in 25 reactions, stiff, on
// t ∈ [0, 60]. Reaction k runs at r_k = k_k·y_a (·y_b) and species i
// changes by the sum of the rates of the reactions that make it, less
// those that use it.
type Pollu[T Float] struct{}

// polluK are the rate constants k_1 … k_25 (k[0] is unused).
var polluK = [26]float64{0, .35, 26.6, 1.23e4, 8.6e-4, 8.2e-4, 1.5e4, 1.3e-4, 2.4e4, 1.65e4, 9e3, 2.2e-2, 1.2e4, 1.88, 1.63e4,
	4.8e6, 3.5e-4, 1.75e-2, 1e8, 4.44e11, 1.24e3, 2.1, 5.78, 4.74e-2, 1.78e3, 3.12}

// PolluRef is y(60) of the Test Set's reference solution (RADAU5 in
// extended precision).
var PolluRef = []float64{
	0.5646255480022769e-01, 0.1342484130422339e+00, 0.4139734331099427e-08, 0.5523140207484359e-02,
	0.2018977262302196e-06, 0.1464541863493966e-06, 0.7784249118997964e-01, 0.3245075353396018e+00,
	0.7494013383880406e-02, 0.1622293157301561e-07, 0.1135863833257075e-07, 0.2230505975721359e-02,
	0.2087162882798630e-03, 0.1396921016840158e-04, 0.8964884856898295e-02, 0.4352846369330103e-17,
	0.6899219696263405e-02, 0.1007803037365946e-03, 0.1772146513969984e-05, 0.5682943292316392e-04,
}

// Dim is the number of states, 20.
func (Pollu[T]) Dim() int { return 20 }

// U0 returns a new initial state.
func (Pollu[T]) U0() []T {
	u := make([]T, 20)
	u[1], u[3], u[6], u[7], u[8], u[16] = 0.2, 0.04, 0.1, 0.3, 0.01, 0.007
	return u
}

// Segments is the span [0, 60] in one segment.
func (Pollu[T]) Segments() []Segment { return []Segment{{T0: 0, T1: 60}} }

// F writes the right-hand side into du.
func (Pollu[T]) F(du, u []T, _ []float32, _ float64) {
	y := (*[20]T)(u) // y[i-1] is the Test Set's y(i)
	f := (*[20]T)(du)
	k := func(i int) T { return T(polluK[i]) }
	var r [26]T
	r[1] = k(1) * y[0]
	r[2] = k(2) * y[1] * y[3]
	r[3] = k(3) * y[4] * y[1]
	r[4] = k(4) * y[6]
	r[5] = k(5) * y[6]
	r[6] = k(6) * y[6] * y[5]
	r[7] = k(7) * y[8]
	r[8] = k(8) * y[8] * y[5]
	r[9] = k(9) * y[10] * y[1]
	r[10] = k(10) * y[10] * y[0]
	r[11] = k(11) * y[12]
	r[12] = k(12) * y[9] * y[1]
	r[13] = k(13) * y[13]
	r[14] = k(14) * y[0] * y[5]
	r[15] = k(15) * y[2]
	r[16] = k(16) * y[3]
	r[17] = k(17) * y[3]
	r[18] = k(18) * y[15]
	r[19] = k(19) * y[15]
	r[20] = k(20) * y[16] * y[5]
	r[21] = k(21) * y[18]
	r[22] = k(22) * y[18]
	r[23] = k(23) * y[0] * y[3]
	r[24] = k(24) * y[18] * y[0]
	r[25] = k(25) * y[19]
	polluCombine(f, &r)
}

// polluCombine writes f, the rates of change of the species, from the
// reaction rates r.
func polluCombine[T Float](f *[20]T, r *[26]T) {
	f[0] = -r[1] - r[10] - r[14] - r[23] - r[24] + r[2] + r[3] + r[9] + r[11] + r[12] + r[22] + r[25]
	f[1] = -r[2] - r[3] - r[9] - r[12] + r[1] + r[21]
	f[2] = -r[15] + r[1] + r[17] + r[19] + r[22]
	f[3] = -r[2] - r[16] - r[17] - r[23] + r[15]
	f[4] = -r[3] + 2*r[4] + r[6] + r[7] + r[13] + r[20]
	f[5] = -r[6] - r[8] - r[14] - r[20] + r[3] + 2*r[18]
	f[6] = -r[4] - r[5] - r[6] + r[13]
	f[7] = r[4] + r[5] + r[6] + r[7]
	f[8] = -r[7] - r[8]
	f[9] = -r[12] + r[7] + r[9]
	f[10] = -r[9] - r[10] + r[8] + r[11]
	f[11] = r[9]
	f[12] = -r[11] + r[10]
	f[13] = -r[13] + r[12]
	f[14] = r[14]
	f[15] = -r[18] - r[19] + r[16]
	f[16] = -r[20]
	f[17] = r[20]
	f[18] = -r[21] - r[22] - r[24] + r[23] + r[25]
	f[19] = -r[25] + r[24]
}

// polluReactants are the species (0-based) whose product with k_k gives
// r_k; −1 when the reaction has one reactant.
var polluReactants = [26][2]int{{-1, -1},
	{0, -1}, {1, 3}, {4, 1}, {6, -1}, {6, -1}, {6, 5}, {8, -1}, {8, 5}, {10, 1}, {10, 0},
	{12, -1}, {9, 1}, {13, -1}, {0, 5}, {2, -1}, {3, -1}, {3, -1}, {15, -1}, {15, -1}, {16, 5},
	{18, -1}, {18, -1}, {0, 3}, {18, 0}, {19, -1}}

// polluStoich[k] is column k of the stoichiometric matrix, ∂f/∂r_k,
// found from polluCombine with unit rates.
var polluStoich = func() (s [26][20]float64) {
	for k := 1; k < 26; k++ {
		var r [26]float64
		r[k] = 1
		polluCombine(&s[k], &r)
	}
	return s
}()

// Jac writes the Jacobian, dense and row-major, into J (len ≥ 400):
// ∂f_i/∂y_j = Σ_k S_ik ∂r_k/∂y_j with S the stoichiometric matrix.
func (Pollu[T]) Jac(J, u []T, _ []float32, _ float64) {
	J = J[:400]
	clear(J)
	for k := 1; k < 26; k++ {
		a, b := polluReactants[k][0], polluReactants[k][1]
		da, db := T(polluK[k]), T(0) // ∂r_k/∂y_a, ∂r_k/∂y_b
		if b >= 0 {
			da, db = T(polluK[k])*u[b], T(polluK[k])*u[a]
		}
		for i, s := range &polluStoich[k] {
			if s == 0 {
				continue
			}
			J[i*20+a] += T(s) * da
			if b >= 0 {
				J[i*20+b] += T(s) * db
			}
		}
	}
}
