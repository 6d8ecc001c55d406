package ode

import (
	"fmt"
	"math"
)

// rosTableau is a Rosenbrock–Wanner method as data. It takes the form of
// Hairer and Wanner's Solving ODEs II, equation IV.7.25, which needs no
// product with J. With W = I − hγJ, stage i solves
//
//	W g_i = hγ·( F(t + c_i h, u + Σ_{j<i} a_ij g_j) + Σ_{j<i} (C_ij/h) g_j + h d_i ∂F/∂t )
//
// and u_new = u + Σ m_i g_i, with the error estimate Σ e_i g_i. The
// classical coefficients are α_ij and γ_ij, with Γ the matrix of the γ_ij
// and γ_ii = γ. In their terms,
//
//	a = αΓ⁻¹, C = diag(1/γ) − Γ⁻¹, m = bΓ⁻¹, c_i = Σ_j α_ij, d_i = Σ_j γ_ij.
//
// The dense output is the Rodas family's. With K_r = Σ_j h[r][j] g_j,
//
//	u(t + θh) ≈ (1−θ)u + θ(u_new + (1−θ)(K_1 + θ(K_2 + θK_3)))
type rosTableau struct {
	name        string
	order       int // order of u_new
	embOrder    int // order of u_new − error estimate
	interpOrder int // order of the dense output
	gamma       float64
	a, C        [][]float64 // a[i], C[i] have i entries
	c, d        []float64   // len s
	m, e        []float64   // len s
	h           [][]float64 // 3 rows of s dense-output weights
}

func (tb *rosTableau) check() error {
	s := len(tb.c)
	if s < 1 || len(tb.a) != s || len(tb.C) != s || len(tb.d) != s || len(tb.m) != s || len(tb.e) != s {
		return fmt.Errorf("%s: inconsistent stage counts", tb.name)
	}
	for i := range s {
		if len(tb.a[i]) != i || len(tb.C[i]) != i {
			return fmt.Errorf("%s: a[%d] or C[%d] has the wrong length", tb.name, i, i)
		}
	}
	if len(tb.h) != 3 {
		return fmt.Errorf("%s: want 3 rows of dense-output weights", tb.name)
	}
	for _, r := range tb.h {
		if len(r) != s {
			return fmt.Errorf("%s: a dense-output row has %d entries, want %d", tb.name, len(r), s)
		}
	}
	return nil
}

// checkedTableau returns tb after checking its shape; a bad built-in
// tableau is a bug.
func checkedTableau(tb *rosTableau) *rosTableau {
	if err := tb.check(); err != nil {
		panic("ode: bad Rosenbrock tableau " + err.Error())
	}
	return tb
}

// rosenbrock is the generic Rosenbrock loop over a rosTableau.
type rosenbrock[T Float] struct {
	n, s     int
	gamma    float64
	lin      rosLin[T]
	k        []T // the s stages g_i, stage i at k[i*n:(i+1)*n]
	f0       []T // F(t, u) at the start of the step
	tmp      []T // a stage's input
	c, d     []float64
	aRows    []sparseRow[T] // stage inputs
	aIncr    []bool         // stage i's input is stage i−1's plus g_{i−1}
	cRows    []sparseRow[T] // γ·C_ij
	mRow     sparseRow[T]
	mIncr    bool // u_new is the last stage's input plus g_{s−1}
	eRow     sparseRow[T]
	eLast    bool // the error estimate is g_{s−1}
	hRows    [3]sparseRow[T]
	adaptive bool
	f0OK     bool    // f0 is F(it.t, it.u)
	h        float64 // the size of the accepted step
	nf       nonFiniteTrace
}

// nonFiniteTrace keeps where an attempt first met a NaN or Inf in F or in
// ∂F/∂t. W⁻¹ then mixes it into every component of the stage. The failure
// names the component F gave, not the first one of the trial state.
type nonFiniteTrace struct {
	comp  int // −1: none in this attempt
	stage int // −1: ∂F/∂t
	t     float64
}

// noteNonFinite records the first non-finite component of v and reports
// whether there was one. v is a stage's F at time t, or ∂F/∂t for stage −1.
func noteNonFinite[T Float](tr *nonFiniteTrace, v []T, stage int, t float64) bool {
	c := firstNonFinite(v)
	if c < 0 {
		return false
	}
	if tr.comp < 0 {
		*tr = nonFiniteTrace{comp: c, stage: stage, t: t}
	}
	return true
}

// failure is the cause of attempts that failed: NonFinite naming F's
// component for a non-finite F or ∂F/∂t, else the W system's own failure.
func (tr *nonFiniteTrace) failure(w func() (Retcode, int, error)) (Retcode, int, error) {
	if code, comp, cause := w(); cause != nil {
		return code, comp, cause
	}
	switch {
	case tr.comp < 0:
		return Unfinished, -1, nil
	case tr.stage < 0:
		return NonFinite, tr.comp, fmt.Errorf("∂F/∂t (a finite difference in t) has a NaN or Inf in component %d", tr.comp)
	}
	return NonFinite, tr.comp, fmt.Errorf("F has a NaN or Inf in component %d (stage %d of the step, at t=%.17g)", tr.comp, tr.stage+1, tr.t)
}

// isIncrement reports whether row == prev + e_j exactly, with prev and e_j
// padded with zeros to the length of row.
func isIncrement(row, prev []float64, j int) bool {
	for l, v := range row {
		want := 0.0
		if l < len(prev) {
			want = prev[l]
		}
		if l == j {
			want++
		}
		if v != want {
			return false
		}
	}
	return true
}

func newRosenbrock[T Float](tb *rosTableau, n int, adaptive bool, lin rosLin[T]) *rosenbrock[T] {
	s := len(tb.c)
	r := &rosenbrock[T]{n: n, s: s, gamma: tb.gamma, lin: lin, c: tb.c, d: tb.d, adaptive: adaptive}
	buf := padded[T]((s + 2) * n) // written every stage (see padded)
	r.k = buf[: s*n : s*n]
	r.f0 = buf[s*n : (s+1)*n : (s+1)*n]
	r.tmp = buf[(s+1)*n:]
	r.aRows = make([]sparseRow[T], s)
	r.aIncr = make([]bool, s)
	r.cRows = make([]sparseRow[T], s)
	gc := make([]float64, s)
	for i := 1; i < s; i++ {
		r.aRows[i] = newSparseRow[T](tb.a[i], n)
		r.aIncr[i] = i >= 2 && isIncrement(tb.a[i], tb.a[i-1], i-1)
		for j, v := range tb.C[i] {
			gc[j] = tb.gamma * v
		}
		r.cRows[i] = newSparseRow[T](gc[:i], n)
	}
	r.mRow = newSparseRow[T](tb.m, n)
	r.mIncr = isIncrement(tb.m, tb.a[s-1], s-1)
	r.eRow = newSparseRow[T](tb.e, n)
	r.eLast = isIncrement(tb.e, nil, s-1)
	for x := range r.hRows {
		r.hRows[x] = newSparseRow[T](tb.h[x], n)
	}
	return r
}

func (r *rosenbrock[T]) degree() int { return 4 }

func (r *rosenbrock[T]) stage(i int) []T { return r.k[i*r.n : (i+1)*r.n : (i+1)*r.n] }

// lincomb writes dst = base + Σ_m row.val[m]·k_{row stage m}; a nil base
// counts as 0.
func lincomb[T Float](dst, base, k []T, row *sparseRow[T]) {
	off := row.off
	val := row.val[:len(off)]
	for j := range dst {
		var a T
		for m, o := range off {
			a += val[m] * k[o+j]
		}
		if base != nil {
			a += base[j]
		}
		dst[j] = a
	}
}

func (r *rosenbrock[T]) start(it *Integrator[T]) []T {
	it.prob.F(r.f0, it.u, it.prob.P, it.t)
	it.stats.FEvals++
	r.f0OK = true
	r.lin.invalidate()
	return r.f0
}

func (r *rosenbrock[T]) failure() (Retcode, int, error) { return r.nf.failure(r.lin.ls.failure) }

func (r *rosenbrock[T]) attempt(it *Integrator[T], hf float64) float64 {
	u, t, n := it.u, it.t, r.n
	f, p := it.prob.F, it.prob.P
	if !r.f0OK {
		f(r.f0, u, p, t)
		it.stats.FEvals++
		r.f0OK = true
	}
	r.nf.comp = -1
	if noteNonFinite(&r.nf, r.f0, 0, t) {
		return math.Inf(1)
	}
	if !r.lin.prepare(it, r.f0, hf, r.gamma) {
		return math.Inf(1)
	}
	hg := T(hf * r.gamma)
	dT := r.lin.dT[:n]
	if noteNonFinite(&r.nf, dT, -1, t) {
		return math.Inf(1)
	}
	tmp := r.tmp
	for i := 0; i < r.s; i++ {
		g := r.stage(i)
		if i == 0 {
			copy(g, r.f0)
		} else {
			if r.aIncr[i] {
				prev := r.stage(i - 1)
				for x := range tmp {
					tmp[x] += prev[x]
				}
			} else {
				lincomb(tmp, u, r.k, &r.aRows[i])
			}
			f(g, tmp, p, t+r.c[i]*hf)
			if noteNonFinite(&r.nf, g, i, t+r.c[i]*hf) {
				it.stats.FEvals += i
				return math.Inf(1)
			}
		}
		// g = hγ·F_i + Σ γC_ij g_j + hγ·h d_i ∂F/∂t, then g = W⁻¹g.
		row := &r.cRows[i]
		off := row.off
		val := row.val[:len(off)]
		k := r.k
		hd := hg * T(hf*r.d[i])
		if hd != 0 {
			for x := range g {
				a := hg*g[x] + hd*dT[x]
				for m, o := range off {
					a += val[m] * k[o+x]
				}
				g[x] = a
			}
		} else {
			for x := range g {
				a := hg * g[x]
				for m, o := range off {
					a += val[m] * k[o+x]
				}
				g[x] = a
			}
		}
		if d := r.lin.dense; d != nil {
			d.w.solve(g)
		} else if !r.lin.solve(it, g, r.f0) {
			it.stats.FEvals += i
			return math.Inf(1)
		}
	}
	it.stats.FEvals += r.s - 1
	un := it.uNew
	last := r.stage(r.s - 1)
	if r.mIncr {
		for x := range un {
			un[x] = tmp[x] + last[x]
		}
	} else {
		lincomb(un, u, r.k, &r.mRow)
	}
	if !r.adaptive {
		return finiteCheck(un)
	}
	if r.eLast {
		return wrmsSquare(last, u, un, &it.o)
	}
	lincomb(tmp, nil, r.k, &r.eRow)
	return wrmsSquare(tmp, u, un, &it.o)
}

func (r *rosenbrock[T]) accept(it *Integrator[T], h float64) {
	r.h = h
	r.f0OK = false
	r.lin.invalidate()
}

// dense expands (1−θ)u₀ + θ(u₁ + (1−θ)(K₁ + θ(K₂ + θK₃))) in powers of θ:
// u₀ + θ(u₁ − u₀ + K₁) + θ²(K₂ − K₁) + θ³(K₃ − K₂) − θ⁴K₃.
func (r *rosenbrock[T]) dense(it *Integrator[T], poly []T) {
	n := r.n
	p0, p1, p2 := poly[:n], poly[n:2*n], poly[2*n:3*n]
	p3, p4 := poly[3*n:4*n], poly[4*n:5*n]
	copy(p0, it.uPrev)
	lincomb(p1, nil, r.k, &r.hRows[0])
	lincomb(p2, nil, r.k, &r.hRows[1])
	lincomb(p3, nil, r.k, &r.hRows[2])
	u0, u1 := it.uPrev[:n], it.u[:n]
	for x := range p0 {
		k1, k2, k3 := p1[x], p2[x], p3[x]
		p1[x] = u1[x] - u0[x] + k1
		p2[x] = k2 - k1
		p3[x] = k3 - k2
		p4[x] = -k3
	}
}
