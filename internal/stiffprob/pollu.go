package stiffprob

import "github.com/flatkit/flatkit/ode/linalg"

// Pollu is POLLU of the Test Set for IVP Solvers (Bari): the chemistry of
// an air pollution model of the Dutch National Institute of Public Health
// and Environmental Protection, 20 species in 25 reactions, stiff, on
// t ∈ [0, 60]. Reaction k runs at r_k = k_k·y_a (·y_b) and species i
// changes by the sum of the rates of the reactions that make it, less
// those that use it.
//
// The rate constants k_1 … k_25 are the parameters p[0:25] when p holds
// them (PolluRates gives the Test Set's, rounded to float32), and the
// Test Set's float64 values when p is shorter, as for a nil p. JVP and
// VJP then differentiate with respect to them too.
type Pollu[T Float] struct{}

// polluK are the rate constants k_1 … k_25 (k[0] is unused).
var polluK = [26]float64{0, .35, 26.6, 1.23e4, 8.6e-4, 8.2e-4, 1.5e4, 1.3e-4, 2.4e4, 1.65e4, 9e3, 2.2e-2, 1.2e4, 1.88, 1.63e4,
	4.8e6, 3.5e-4, 1.75e-2, 1e8, 4.44e11, 1.24e3, 2.1, 5.78, 4.74e-2, 1.78e3, 3.12}

// PolluRates returns a new slice of the Test Set's rate constants k_1 …
// k_25, rounded to float32: the parameters of a POLLU whose rates are
// read from p.
func PolluRates() []float32 {
	p := make([]float32, 25)
	for i := range p {
		p[i] = float32(polluK[i+1])
	}
	return p
}

// polluRates returns k_1 … k_25 at k[1:] (k[0] is unused): p[0:25] when
// p holds them, else the Test Set's.
func polluRates[T Float](p []float32) (k [26]T) {
	if len(p) >= 25 {
		for i, v := range p[:25] {
			k[i+1] = T(v)
		}
		return k
	}
	for i, v := range &polluK {
		k[i] = T(v)
	}
	return k
}

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
func (Pollu[T]) F(du, u []T, p []float32, _ float64) {
	y := (*[20]T)(u) // y[i-1] is the Test Set's y(i)
	f := (*[20]T)(du)
	k := polluRates[T](p)
	var r [26]T
	r[1] = k[1] * y[0]
	r[2] = k[2] * y[1] * y[3]
	r[3] = k[3] * y[4] * y[1]
	r[4] = k[4] * y[6]
	r[5] = k[5] * y[6]
	r[6] = k[6] * y[6] * y[5]
	r[7] = k[7] * y[8]
	r[8] = k[8] * y[8] * y[5]
	r[9] = k[9] * y[10] * y[1]
	r[10] = k[10] * y[10] * y[0]
	r[11] = k[11] * y[12]
	r[12] = k[12] * y[9] * y[1]
	r[13] = k[13] * y[13]
	r[14] = k[14] * y[0] * y[5]
	r[15] = k[15] * y[2]
	r[16] = k[16] * y[3]
	r[17] = k[17] * y[3]
	r[18] = k[18] * y[15]
	r[19] = k[19] * y[15]
	r[20] = k[20] * y[16] * y[5]
	r[21] = k[21] * y[18]
	r[22] = k[22] * y[18]
	r[23] = k[23] * y[0] * y[3]
	r[24] = k[24] * y[18] * y[0]
	r[25] = k[25] * y[19]
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

// polluCombineT writes g = Sᵀw, the transpose of polluCombine: g[k] is
// Σ_i S_ik w_i, the change of wᵀf per unit of rate r_k.
func polluCombineT[T Float](g *[26]T, w *[20]T) {
	g[1] = -w[0] + w[1] + w[2]
	g[2] = w[0] - w[1] - w[3]
	g[3] = w[0] - w[1] - w[4] + w[5]
	g[4] = 2*w[4] - w[6] + w[7]
	g[5] = -w[6] + w[7]
	g[6] = w[4] - w[5] - w[6] + w[7]
	g[7] = w[4] + w[7] - w[8] + w[9]
	g[8] = -w[5] - w[8] + w[10]
	g[9] = w[0] - w[1] + w[9] - w[10] + w[11]
	g[10] = -w[0] - w[10] + w[12]
	g[11] = w[0] + w[10] - w[12]
	g[12] = w[0] - w[1] - w[9] + w[13]
	g[13] = w[4] + w[6] - w[13]
	g[14] = -w[0] - w[5] + w[14]
	g[15] = -w[2] + w[3]
	g[16] = -w[3] + w[15]
	g[17] = w[2] - w[3]
	g[18] = 2*w[5] - w[15]
	g[19] = w[2] - w[15]
	g[20] = w[4] - w[5] - w[16] + w[17]
	g[21] = w[1] - w[18]
	g[22] = w[0] + w[2] - w[18]
	g[23] = -w[0] - w[3] + w[18]
	g[24] = -w[0] - w[18] + w[19]
	g[25] = w[0] + w[18] - w[19]
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

// polluTerm is one term S_ik·∂r_k/∂y_j of the Jacobian's entry (i, j):
// s·k_k, times y_other when reaction k has a second reactant (other ≥ 0).
// dense and csr are the entry's positions in the dense and CSR storages.
type polluTerm struct {
	dense, csr int
	k, other   int
	s          float64
}

// polluTerms are the Jacobian's terms, reaction by reaction, and
// polluPattern its sparsity pattern, the entries the terms reach.
var polluTerms, polluPattern = polluJacobian()

func polluJacobian() ([]polluTerm, *linalg.Pattern) {
	var ts []polluTerm
	var es []linalg.Entry
	for k := 1; k < 26; k++ {
		a, b := polluReactants[k][0], polluReactants[k][1]
		for i, s := range &polluStoich[k] {
			if s == 0 {
				continue
			}
			ts = append(ts, polluTerm{dense: i*20 + a, k: k, other: b, s: s})
			es = append(es, linalg.Entry{Row: i, Col: a})
			if b >= 0 {
				ts = append(ts, polluTerm{dense: i*20 + b, k: k, other: a, s: s})
				es = append(es, linalg.Entry{Row: i, Col: b})
			}
		}
	}
	pat, err := linalg.NewPattern(20, 20, es)
	if err != nil {
		panic("stiffprob: POLLU's pattern: " + err.Error())
	}
	for i := range ts {
		ts[i].csr = pat.Index(ts[i].dense/20, ts[i].dense%20)
	}
	return ts, pat
}

// Pattern is the Jacobian's sparsity pattern; JacSparse writes its
// values. The pattern is shared: do not modify it.
func (Pollu[T]) Pattern() *linalg.Pattern { return polluPattern }

// Jac writes the Jacobian, dense and row-major, into J (len ≥ 400):
// ∂f_i/∂y_j = Σ_k S_ik ∂r_k/∂y_j with S the stoichiometric matrix.
func (Pollu[T]) Jac(J, u []T, p []float32, _ float64) {
	J = J[:400]
	clear(J)
	polluEntries(J, u, p, false)
}

// JacSparse writes the values of Pattern's entries, in CSR order, into J
// (len ≥ Pattern().NNZ()): the entries of Jac, summed in the same order.
func (Pollu[T]) JacSparse(J, u []T, p []float32, _ float64) {
	J = J[:polluPattern.NNZ()]
	clear(J)
	polluEntries(J, u, p, true)
}

// polluEntries adds the Jacobian's terms into J, dense or in CSR order.
func polluEntries[T Float](J, u []T, p []float32, csr bool) {
	k := polluRates[T](p)
	for _, t := range polluTerms {
		v := T(t.s) * k[t.k]
		if t.other >= 0 {
			v *= u[t.other]
		}
		at := t.dense
		if csr {
			at = t.csr
		}
		J[at] += v
	}
}

// JVP writes jv = ∂F/∂u·v + ∂F/∂p·dp, or ∂F/∂u·v alone when dp is nil
// (or p does not hold the rates, whose derivatives are then not wanted).
// It is written out reaction by reaction, as F is, and forms no Jacobian.
func (Pollu[T]) JVP(jv, u, v []T, p []float32, dp []T, _ float64) {
	y, d := (*[20]T)(u), (*[20]T)(v)
	k := polluRates[T](p)
	var r [26]T // the rates' tangents
	r[1] = k[1] * d[0]
	r[2] = k[2] * (d[1]*y[3] + y[1]*d[3])
	r[3] = k[3] * (d[4]*y[1] + y[4]*d[1])
	r[4] = k[4] * d[6]
	r[5] = k[5] * d[6]
	r[6] = k[6] * (d[6]*y[5] + y[6]*d[5])
	r[7] = k[7] * d[8]
	r[8] = k[8] * (d[8]*y[5] + y[8]*d[5])
	r[9] = k[9] * (d[10]*y[1] + y[10]*d[1])
	r[10] = k[10] * (d[10]*y[0] + y[10]*d[0])
	r[11] = k[11] * d[12]
	r[12] = k[12] * (d[9]*y[1] + y[9]*d[1])
	r[13] = k[13] * d[13]
	r[14] = k[14] * (d[0]*y[5] + y[0]*d[5])
	r[15] = k[15] * d[2]
	r[16] = k[16] * d[3]
	r[17] = k[17] * d[3]
	r[18] = k[18] * d[15]
	r[19] = k[19] * d[15]
	r[20] = k[20] * (d[16]*y[5] + y[16]*d[5])
	r[21] = k[21] * d[18]
	r[22] = k[22] * d[18]
	r[23] = k[23] * (d[0]*y[3] + y[0]*d[3])
	r[24] = k[24] * (d[18]*y[0] + y[18]*d[0])
	r[25] = k[25] * d[19]
	if len(p) >= 25 && dp != nil {
		dp = dp[:25]
		for i := 1; i < 26; i++ {
			r[i] += dp[i-1] * polluMass(y, i)
		}
	}
	polluCombine((*[20]T)(jv), &r)
}

// VJP adds wᵀ·∂F/∂u into du and, when dp is not nil and p holds the
// rates, wᵀ·∂F/∂p into dp. g = Sᵀw, the cotangents of the rates, are
// spread to the reactants reaction by reaction; no Jacobian is formed.
func (Pollu[T]) VJP(du, dp, w, u []T, p []float32, _ float64) {
	var c, g [26]T
	polluCombineT(&c, (*[20]T)(w))
	y, d := (*[20]T)(u), (*[20]T)(du)
	k := polluRates[T](p)
	for i := range g {
		g[i] = c[i] * k[i] // ∂(wᵀf)/∂r_k · ∂r_k/∂(y_a y_b)
	}
	d[0] += g[1]
	d[1], d[3] = d[1]+g[2]*y[3], d[3]+g[2]*y[1]
	d[4], d[1] = d[4]+g[3]*y[1], d[1]+g[3]*y[4]
	d[6] += g[4] + g[5]
	d[6], d[5] = d[6]+g[6]*y[5], d[5]+g[6]*y[6]
	d[8] += g[7]
	d[8], d[5] = d[8]+g[8]*y[5], d[5]+g[8]*y[8]
	d[10], d[1] = d[10]+g[9]*y[1], d[1]+g[9]*y[10]
	d[10], d[0] = d[10]+g[10]*y[0], d[0]+g[10]*y[10]
	d[12] += g[11]
	d[9], d[1] = d[9]+g[12]*y[1], d[1]+g[12]*y[9]
	d[13] += g[13]
	d[0], d[5] = d[0]+g[14]*y[5], d[5]+g[14]*y[0]
	d[2] += g[15]
	d[3] += g[16] + g[17]
	d[15] += g[18] + g[19]
	d[16], d[5] = d[16]+g[20]*y[5], d[5]+g[20]*y[16]
	d[18] += g[21] + g[22]
	d[0], d[3] = d[0]+g[23]*y[3], d[3]+g[23]*y[0]
	d[18], d[0] = d[18]+g[24]*y[0], d[0]+g[24]*y[18]
	d[19] += g[25]
	if len(p) >= 25 && dp != nil {
		dp = dp[:25]
		for i := 1; i < 26; i++ {
			dp[i-1] += c[i] * polluMass(y, i)
		}
	}
}

// polluMass is the product of reaction k's reactants, ∂r_k/∂k_k.
func polluMass[T Float](y *[20]T, k int) T {
	a, b := polluReactants[k][0], polluReactants[k][1]
	if b < 0 {
		return y[a]
	}
	return y[a] * y[b]
}
