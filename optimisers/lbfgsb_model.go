package optimisers

import (
	"math"
	"sort"
)

// This file holds the model step of LBFGSB (Byrd, Lu, Nocedal and Zhu,
// "A limited memory algorithm for bound constrained optimization", SIAM J.
// Sci. Comput. 16(5), 1995): the compact limited-memory matrix (§3), the
// generalized Cauchy point (§4) and the direct primal subspace
// minimisation (§5.1), with the projection of Morales and Nocedal (ACM
// TOMS 38(1), 2011) before the paper's truncation.

// lbMemory is the limited-memory BFGS matrix in the compact form of the
// paper, B = θI − W M Wᵀ with W = [Y θS] (n × 2k) and
// M = K⁻¹, K = [[−D, Lᵀ], [L, θSᵀS]]: D = diag(sᵢᵀyᵢ) and L is the strictly
// lower triangle of SᵀY. The k ≤ m pairs are kept in a ring, oldest first,
// each scaled to ‖s‖ = 1; the small matrices are kept in that logical
// order.
type lbMemory struct {
	n, m  int
	k     int         // pairs held
	head  int         // ring slot of the oldest pair
	s, y  [][]float64 // m ring slots of n values
	sy    []float64   // m × m, sy[i*m+j] = sᵢᵀyⱼ, logical order
	ss    []float64   // m × m, sᵢᵀsⱼ
	theta float64     // the scaling θ = yᵀy / sᵀy of the newest pair; 1 when empty
	mid   []float64   // M = K⁻¹, 2k × 2k, row stride 2m
	lu    []float64   // 2m × 2m scratch for LU factors
	piv   []int       // 2m pivots
	col   []float64   // 2m scratch
}

func newLBMemory(n, m int) *lbMemory {
	mm := &lbMemory{n: n, m: m, s: make([][]float64, m), y: make([][]float64, m),
		sy: make([]float64, m*m), ss: make([]float64, m*m),
		mid: make([]float64, 4*m*m), lu: make([]float64, 4*m*m), piv: make([]int, 2*m), col: make([]float64, 2*m)}
	for i := range m {
		mm.s[i], mm.y[i] = make([]float64, n), make([]float64, n)
	}
	mm.reset()
	return mm
}

// reset forgets every pair: B becomes the identity.
func (mm *lbMemory) reset() { mm.k, mm.head, mm.theta = 0, 0, 1 }

func (mm *lbMemory) sv(j int) []float64 { return mm.s[(mm.head+j)%mm.m] }
func (mm *lbMemory) yv(j int) []float64 { return mm.y[(mm.head+j)%mm.m] }

// push adds the pair (s, y) unless sᵀy ≤ ε·yᵀy, the paper's test for a
// pair that would not keep B positive definite; it reports whether it did.
// A full memory drops its oldest pair.
func (mm *lbMemory) push(s, y []float64) bool {
	sty, yty := dot(s, y), dot(y, y)
	if !(sty > epsilon*yty) {
		return false
	}
	m := mm.m
	if mm.k == m {
		mm.head = (mm.head + 1) % m
		mm.k--
		for i := range mm.k {
			for j := range mm.k {
				mm.sy[i*m+j] = mm.sy[(i+1)*m+j+1]
				mm.ss[i*m+j] = mm.ss[(i+1)*m+j+1]
			}
		}
	}
	// The pair is kept scaled to ‖s‖ = 1. BFGS does not change when s and
	// y are scaled together, and pairs of like size keep K well
	// conditioned when steps shrink by orders of magnitude.
	k := mm.k
	sk, yk := mm.s[(mm.head+k)%m], mm.y[(mm.head+k)%m]
	sc := 1 / math.Sqrt(dot(s, s))
	for i, v := range s {
		sk[i], yk[i] = v*sc, y[i]*sc
	}
	mm.k++
	for j := 0; j <= k; j++ {
		sj, yj := mm.sv(j), mm.yv(j)
		mm.sy[k*m+j] = dot(sk, yj)
		mm.sy[j*m+k] = dot(sj, yk)
		v := dot(sk, sj)
		mm.ss[k*m+j], mm.ss[j*m+k] = v, v
	}
	mm.theta = yty / sty
	if !mm.formMid() {
		mm.reset() // S has dependent columns; start again from B = I
	}
	return true
}

// buildK writes K = [[−D, Lᵀ], [L, θSᵀS]] into a (stride 2m).
func (mm *lbMemory) buildK(a []float64) {
	k, m, st := mm.k, mm.m, 2*mm.m
	for i := range k {
		for j := range k {
			var d, l float64 // −D; L, whose entry Lᵢⱼ = sᵢᵀyⱼ for i > j
			if i == j {
				d = -mm.sy[i*m+i]
			}
			if i > j {
				l = mm.sy[i*m+j]
			}
			a[i*st+j] = d
			a[(k+i)*st+j] = l
			a[j*st+k+i] = l // Lᵀ
			a[(k+i)*st+k+j] = mm.theta * mm.ss[i*m+j]
		}
	}
}

// formMid computes M = K⁻¹. It reports false if K is singular.
func (mm *lbMemory) formMid() bool {
	n2, st := 2*mm.k, 2*mm.m
	mm.buildK(mm.lu)
	if !luFactor(mm.lu, n2, st, mm.piv) {
		return false
	}
	for j := range n2 {
		clear(mm.col[:n2])
		mm.col[j] = 1
		luSolve(mm.lu, n2, st, mm.piv, mm.col[:n2])
		for i := range n2 {
			mm.mid[i*st+j] = mm.col[i]
		}
	}
	return true
}

// wRow writes row i of W, (y₁ᵢ … yₖᵢ, θs₁ᵢ … θsₖᵢ), into w[:2k].
func (mm *lbMemory) wRow(i int, w []float64) {
	k := mm.k
	for j := range k {
		w[j] = mm.yv(j)[i]
		w[k+j] = mm.theta * mm.sv(j)[i]
	}
}

// mulMid writes M v into out (both 2k).
func (mm *lbMemory) mulMid(v, out []float64) {
	n2, st := 2*mm.k, 2*mm.m
	for i := range n2 {
		row := mm.mid[i*st : i*st+n2]
		out[i] = dot(row, v[:n2])
	}
}

// lbModel holds the scratch of one model step: the Cauchy point and the
// subspace minimisation.
type lbModel struct {
	t     []float64 // breakpoints
	d     []float64 // the projected steepest-descent direction, zeroed as variables hit bounds
	order lbByT     // indices of breakpoints, sorted
	p, c  []float64 // 2m: Wᵀd and Wᵀ(xc − x)
	v, w  []float64 // 2m scratch
	mc    []float64 // 2m: M c
	a     []float64 // 2m × 2m: the subspace system
	q     []float64 // 2m
	r     []float64 // n: the reduced gradient, then the subspace step
	xc    []float64 // n: the Cauchy point
	free  []bool    // n: free at the Cauchy point
}

func newLBModel(n, m int) *lbModel {
	return &lbModel{t: make([]float64, n), d: make([]float64, n),
		order: lbByT{idx: make([]int, 0, n)},
		p:     make([]float64, 2*m), c: make([]float64, 2*m), v: make([]float64, 2*m), w: make([]float64, 2*m),
		mc: make([]float64, 2*m), a: make([]float64, 4*m*m), q: make([]float64, 2*m),
		r: make([]float64, n), xc: make([]float64, n), free: make([]bool, n)}
}

// lbByT sorts breakpoint indices by their t; a pointer to it is a
// sort.Interface that converts without allocating.
type lbByT struct {
	idx []int
	t   []float64
}

func (b *lbByT) Len() int           { return len(b.idx) }
func (b *lbByT) Less(i, j int) bool { return b.t[b.idx[i]] < b.t[b.idx[j]] }
func (b *lbByT) Swap(i, j int)      { b.idx[i], b.idx[j] = b.idx[j], b.idx[i] }

// cauchy computes the generalized Cauchy point xc: the first local
// minimiser of the model m(z) = gᵀ(z − x) + ½(z − x)ᵀB(z − x) along the
// projected steepest-descent path P(x − tg), t ≥ 0 (the paper's algorithm
// CP). It leaves c = Wᵀ(xc − x) and the free variables, those strictly
// inside their bounds at xc.
func (md *lbModel) cauchy(mm *lbMemory, x, g, lo, hi []float64) {
	k2 := 2 * mm.k
	p, c := md.p[:k2], md.c[:k2]
	clear(p)
	clear(c)
	md.order.idx = md.order.idx[:0]
	md.order.t = md.t
	f1 := 0.0
	for i, gi := range g {
		t := math.Inf(1)
		switch {
		case gi < 0 && !math.IsInf(hi[i], 1):
			t = (x[i] - hi[i]) / gi
		case gi > 0 && !math.IsInf(lo[i], -1):
			t = (x[i] - lo[i]) / gi
		}
		md.t[i] = t
		md.d[i] = -gi
		if t <= 0 { // at the bound the gradient pushes against
			md.d[i] = 0
		}
		md.xc[i] = x[i]
		if md.d[i] == 0 {
			continue
		}
		f1 -= gi * gi
		if !math.IsInf(t, 1) {
			md.order.idx = append(md.order.idx, i)
		}
	}
	if k2 > 0 {
		for j := range mm.k { // p = Wᵀd
			p[j] = dot(mm.yv(j), md.d)
			p[mm.k+j] = mm.theta * dot(mm.sv(j), md.d)
		}
	}
	mp := md.v[:k2]
	mm.mulMid(p, mp)
	f2 := -mm.theta*f1 - dot(p, mp)
	f2org := f2
	if f1 == 0 { // no direction: x is stationary for the bounds
		md.markFree(x, lo, hi)
		return
	}
	dtm := -f1 / f2
	told := 0.0
	// The paper takes breakpoints from a heap; sorting all of them once
	// costs the same O(n log n) at worst.
	sort.Sort(&md.order)
	w, mw := md.w[:k2], md.mc[:k2]
	for _, b := range md.order.idx {
		dt := md.t[b] - told
		if dtm < dt {
			break
		}
		xb := lo[b]
		if md.d[b] > 0 {
			xb = hi[b]
		}
		md.xc[b] = xb
		zb := xb - x[b]
		gb := g[b]
		for j := range c {
			c[j] += dt * p[j]
		}
		mm.wRow(b, w)
		mm.mulMid(w, mw)
		f1 += dt*f2 + gb*gb + mm.theta*gb*zb - gb*dot(mw, c)
		f2 += -mm.theta*gb*gb - 2*gb*dot(mw, p) - gb*gb*dot(mw, w)
		f2 = math.Max(f2, epsilon*f2org)
		for j := range p {
			p[j] += gb * w[j]
		}
		md.d[b] = 0
		dtm = -f1 / f2
		told = md.t[b]
	}
	dtm = math.Max(dtm, 0)
	told += dtm
	for i, di := range md.d {
		if di != 0 {
			md.xc[i] = math.Min(math.Max(x[i]+told*di, lo[i]), hi[i])
		}
	}
	for j := range c {
		c[j] += dtm * p[j]
	}
	md.markFree(md.xc, lo, hi)
}

func (md *lbModel) markFree(xc, lo, hi []float64) {
	for i, v := range xc {
		md.free[i] = v > lo[i] && v < hi[i]
	}
}

// subspace minimises the model over the free variables from xc, by the
// paper's direct primal method, and writes the end point x̄ into xbar. The
// step is projected onto the bounds if that still gives a descent
// direction from x (Morales and Nocedal); otherwise it is truncated at the
// first bound, as in the paper.
func (md *lbModel) subspace(mm *lbMemory, x, g, lo, hi, xbar []float64) {
	k2, st := 2*mm.k, 2*mm.m
	copy(xbar, md.xc)
	mc, w := md.mc[:k2], md.w[:k2]
	mm.mulMid(md.c[:k2], mc)
	nfree := 0
	for i, f := range md.free { // r = Zᵀ(g + θ(xc − x) − W M c)
		if !f {
			continue
		}
		nfree++
		ri := g[i] + mm.theta*(md.xc[i]-x[i])
		if k2 > 0 {
			mm.wRow(i, w)
			ri -= dot(w, mc)
		}
		md.r[i] = ri
	}
	if nfree == 0 {
		return
	}
	inv := 1 / mm.theta
	if k2 > 0 {
		// The step is −r/θ − W_Z v/θ² with (K − W_ZᵀW_Z/θ) v = W_Zᵀ r,
		// the paper's (I − M W_ZᵀW_Z/θ)⁻¹ M W_Zᵀ r without forming M.
		a, q := md.a, md.q[:k2]
		mm.buildK(a)
		clear(q)
		for i, f := range md.free {
			if !f {
				continue
			}
			mm.wRow(i, w)
			for r := range k2 {
				q[r] += w[r] * md.r[i]
				wr := w[r] * inv
				row := a[r*st : r*st+k2]
				for s := range k2 {
					row[s] -= wr * w[s]
				}
			}
		}
		if luFactor(a, k2, st, mm.piv) {
			luSolve(a, k2, st, mm.piv, q)
		} else {
			clear(q) // a singular system: take the scaled gradient step
		}
		for i, f := range md.free {
			if f {
				mm.wRow(i, w)
				md.r[i] = -md.r[i]*inv - dot(w, q)*inv*inv
			}
		}
	} else {
		for i, f := range md.free {
			if f {
				md.r[i] *= -inv
			}
		}
	}
	// Projection first (Morales and Nocedal).
	desc := 0.0
	for i, f := range md.free {
		if f {
			xbar[i] = math.Min(math.Max(md.xc[i]+md.r[i], lo[i]), hi[i])
		}
		desc += g[i] * (xbar[i] - x[i])
	}
	if desc < 0 {
		return
	}
	// Truncation: the largest α ≤ 1 with xc + α·du inside the bounds.
	alpha := 1.0
	for i, f := range md.free {
		if !f {
			continue
		}
		switch du := md.r[i]; {
		case du < 0 && !math.IsInf(lo[i], -1):
			alpha = math.Min(alpha, (lo[i]-md.xc[i])/du)
		case du > 0 && !math.IsInf(hi[i], 1):
			alpha = math.Min(alpha, (hi[i]-md.xc[i])/du)
		}
	}
	alpha = math.Max(alpha, 0)
	for i, f := range md.free {
		if f {
			xbar[i] = math.Min(math.Max(md.xc[i]+alpha*md.r[i], lo[i]), hi[i])
		}
	}
}

// epsilon is float64's machine epsilon, 2⁻⁵², the paper's ε.
const epsilon = 0x1p-52

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// luFactor factors the n × n matrix a (row stride st) in place by Gaussian
// elimination with partial pivoting. It reports false for a pivot below
// 1e-12 of the largest entry, a matrix singular to rounding.
func luFactor(a []float64, n, st int, piv []int) bool {
	scale := 0.0
	for r := range n {
		for _, v := range a[r*st : r*st+n] {
			scale = math.Max(scale, math.Abs(v))
		}
	}
	for c := range n {
		p, big := c, math.Abs(a[c*st+c])
		for r := c + 1; r < n; r++ {
			if v := math.Abs(a[r*st+c]); v > big {
				p, big = r, v
			}
		}
		if !(big > 1e-12*scale) {
			return false
		}
		piv[c] = p
		if p != c {
			for j := range n {
				a[c*st+j], a[p*st+j] = a[p*st+j], a[c*st+j]
			}
		}
		inv := 1 / a[c*st+c]
		for r := c + 1; r < n; r++ {
			l := a[r*st+c] * inv
			a[r*st+c] = l
			for j := c + 1; j < n; j++ {
				a[r*st+j] -= l * a[c*st+j]
			}
		}
	}
	return true
}

// luSolve solves a x = b in place with the factors of luFactor. The rows
// were swapped whole, multipliers included, so every swap applies to b
// before the forward substitution.
func luSolve(a []float64, n, st int, piv []int, b []float64) {
	for c := range n {
		if p := piv[c]; p != c {
			b[c], b[p] = b[p], b[c]
		}
	}
	for c := range n {
		for r := c + 1; r < n; r++ {
			b[r] -= a[r*st+c] * b[c]
		}
	}
	for c := n - 1; c >= 0; c-- {
		for j := c + 1; j < n; j++ {
			b[c] -= a[c*st+j] * b[j]
		}
		b[c] /= a[c*st+c]
	}
}
