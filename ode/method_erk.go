package ode

//go:generate sh -c "python3 gen/combine_unrolled.py > method_combine_unrolled.go"

import (
	"slices"
	"unsafe"
)

// sparseRow is one row of coefficients with its zeros dropped; off holds
// the offsets l·n of the stages l in the flat stage buffer.
type sparseRow[T Float] struct {
	off []int
	val []T
}

func newSparseRow[T Float](row []float64, n int) sparseRow[T] {
	nz := 0
	for _, v := range row {
		if v != 0 {
			nz++
		}
	}
	r := sparseRow[T]{off: make([]int, 0, nz), val: make([]T, 0, nz)}
	for i, v := range row {
		if v != 0 {
			r.off = append(r.off, i*n)
			r.val = append(r.val, T(v))
		}
	}
	return r
}

// The state of the first stage k_0 = f(t, u) at the start of an attempt.
const (
	k0Stale  = iota // must be evaluated
	k0Valid         // in stage 0
	k0InLast        // in stage s-1 (FSAL from the accepted step): copy in
)

// erk is the one explicit Runge–Kutta loop: a stepper whose method is a
// tableau, that is data. Stages live in one flat buffer. Rows of A, the
// error weights b − bhat and the interpolation weights are kept sparse and
// in T.
type erk[T Float] struct {
	n, s, ne int // dimension, main stages, extra stages
	nIn      int // the leading components F reads; the rest are quadratures (see quadratures)
	deg      int
	k        []T // the s+ne stage derivatives, stage l at k[l*n:(l+1)*n]
	tmp      []T
	zero     []T            // n zeros
	c        []float64      // nodes of all s+ne stages
	rows     []sparseRow[T] // rows[i] is stage i's row of A (main then extra)
	errRow   sparseRow[T]   // b − bhat
	interp   []sparseRow[T] // interp[j-1]: coefficients of θ^j over the stages
	adaptive bool
	lazyLast bool // the FSAL stage is not needed by the error estimate
	interp4  bool // four interpolation rows, the last three on the same stages (dense24)

	k0      int
	lastOK  bool    // stage s-1 holds f(t+h, u_new) of the last attempt
	extraOK bool    // extra stages of the accepted step are computed
	h       float64 // size of the accepted step
}

func newERK[T Float](tb *tableau, n int, adaptive bool) *erk[T] {
	s, ne := len(tb.c), len(tb.ce)
	e := &erk[T]{n: n, s: s, ne: ne, deg: len(tb.bi[0]), nIn: n}
	buf := padded[T]((s + ne + 2) * n) // written every stage: keep other goroutines' data off its cache lines
	e.k = buf[: (s+ne)*n : (s+ne)*n]
	e.tmp = buf[(s+ne)*n : (s+ne+1)*n : (s+ne+1)*n]
	e.zero = buf[(s+ne+1)*n:]
	e.c = append(append([]float64(nil), tb.c...), tb.ce...)
	e.rows = make([]sparseRow[T], s+ne)
	for i := 1; i < s; i++ {
		e.rows[i] = newSparseRow[T](tb.a[i], n)
	}
	for x := 0; x < ne; x++ {
		e.rows[s+x] = newSparseRow[T](tb.ae[x], n)
	}
	e.adaptive = adaptive && tb.bhat != nil
	e.lazyLast = true
	if tb.bhat != nil {
		bt := make([]float64, s)
		for i := range bt {
			bt[i] = tb.b[i] - tb.bhat[i]
		}
		e.errRow = newSparseRow[T](bt, n)
		e.lazyLast = bt[s-1] == 0
	}
	if !e.adaptive {
		e.lazyLast = true
	}
	e.interp = make([]sparseRow[T], e.deg)
	col := make([]float64, s+ne)
	for j := range e.interp {
		for i := range col {
			col[i] = tb.bi[i][j]
		}
		e.interp[j] = newSparseRow[T](col, n)
	}
	e.interp4 = len(e.interp) == 4 && slices.Equal(e.interp[1].off, e.interp[2].off) &&
		slices.Equal(e.interp[1].off, e.interp[3].off)
	return e
}

func (e *erk[T]) degree() int { return e.deg }

// quadratures marks the last nq components as quadratures, such as a
// backward adjoint's μ or a running cost's integral. F's value does not
// depend on them, so the stage inputs leave them out. Their stages and the
// step's result still have them.
func (e *erk[T]) quadratures(nq int) { e.nIn = e.n - nq }

func (e *erk[T]) stage(l int) []T { return e.k[l*e.n : (l+1)*e.n : (l+1)*e.n] }

// combine writes dst = u + h Σ_m row.val[m]·k_{row stage m}. The sum is
// taken in the order of the row, so it has the same bits whichever loop
// runs it. Rows of up to seven nonzeros run combineUnrolled, a generated
// loop with the stages' slices hoisted out of it. Every row of Tsit5, DP5
// and BS3 and their error rows are such rows. Longer rows go two
// components at a time, so that the short inner loop's overhead and its
// exit misprediction are paid once per pair.
func (e *erk[T]) combine(dst, u []T, h T, row *sparseRow[T]) {
	k := e.k
	off := row.off
	val := row.val[:len(off)]
	n := len(dst)
	u = u[:n]
	if n == 2 { // two states (and two stage inputs of a 2-state adjoint)
		combine2(dst, u, h, k, off, val)
		return
	}
	// float64 stages of four components or more go in vector lanes with
	// the same bits: see combineAVX. newSparseRow makes off ascending, so
	// its last offset bounds every stage read.
	if haveCombineAVX && unsafe.Sizeof(h) == 8 && n >= 4 && len(off) > 0 && off[len(off)-1]+n <= len(k) {
		combineAVX((*float64)(unsafe.Pointer(&dst[0])), (*float64)(unsafe.Pointer(&u[0])), n,
			*(*float64)(unsafe.Pointer(&h)), (*float64)(unsafe.Pointer(&k[0])), &off[0],
			(*float64)(unsafe.Pointer(&val[0])), len(off))
		return
	}
	if combineUnrolled(dst, u, h, k, off, val) {
		return
	}
	j := 0
	for ; j+1 < n; j += 2 {
		var a0, a1 T
		for m, o := range off {
			kk := k[o+j : o+j+2 : o+j+2]
			a0 += val[m] * kk[0]
			a1 += val[m] * kk[1]
		}
		dst[j] = u[j] + h*a0
		dst[j+1] = u[j+1] + h*a1
	}
	if j < n {
		var a0 T
		for m, o := range off {
			a0 += val[m] * k[o+j]
		}
		dst[j] = u[j] + h*a0
	}
}

// combine2 is combine for two components, in one pass over the row; small
// enough to be inlined where the stages are formed.
func combine2[T Float](dst, u []T, h T, k []T, off []int, val []T) {
	var a0, a1 T
	val = val[:len(off)]
	for m, o := range off {
		v, kk := val[m], k[o:o+2:o+2]
		a0 += v * kk[0]
		a1 += v * kk[1]
	}
	dst[1] = u[1] + h*a1
	dst[0] = u[0] + h*a0
}

func (e *erk[T]) start(it *Integrator[T]) []T {
	it.prob.F(e.stage(0), it.u, it.prob.P, it.t)
	it.stats.FEvals++
	e.k0 = k0Valid
	e.lastOK, e.extraOK = false, false
	return e.stage(0)
}

func (e *erk[T]) attempt(it *Integrator[T], hf float64) float64 {
	u, t := it.u, it.t
	f, p := it.prob.F, it.prob.P
	last := e.s - 1
	switch e.k0 {
	case k0Stale:
		f(e.stage(0), u, p, t)
		it.stats.FEvals++
	case k0InLast:
		copy(e.k[:e.n], e.k[last*e.n:])
	}
	e.k0 = k0Valid
	e.lastOK, e.extraOK = false, false
	h := T(hf)
	in := e.tmp[:e.nIn] // F does not read the quadratures' stage inputs
	if len(in) == 2 && len(u) >= 2 {
		for i := 1; i < last; i++ {
			row := &e.rows[i]
			combine2(in, u, h, e.k, row.off, row.val)
			f(e.stage(i), e.tmp, p, t+e.c[i]*hf)
		}
	} else {
		for i := 1; i < last; i++ {
			e.combine(in, u, h, &e.rows[i])
			f(e.stage(i), e.tmp, p, t+e.c[i]*hf)
		}
	}
	it.stats.FEvals += last - 1
	un := it.uNew
	e.combine(un, u, h, &e.rows[last]) // the FSAL row is b: u_new
	if !e.lazyLast {
		f(e.stage(last), un, p, t+hf)
		it.stats.FEvals++
		e.lastOK = true
	}
	if !e.adaptive {
		return finiteCheck(un)
	}
	// The error estimate h Σ (b − bhat)_i k_i goes into tmp, free after
	// the stages, then its weighted RMS norm squared.
	est := e.tmp[:len(un)]
	e.combine(est, e.zero, h, &e.errRow)
	return wrmsSquare(est, u, un, &it.o)
}

func (e *erk[T]) accept(it *Integrator[T], h float64) {
	e.h = h
	if e.lastOK {
		e.k0 = k0InLast
	} else {
		e.k0 = k0Stale
	}
}

func (e *erk[T]) dense(it *Integrator[T], poly []T) {
	f, p := it.prob.F, it.prob.P
	last := e.s - 1
	if !e.lastOK {
		// At the step's own end, as attempt evaluates it, not at it.t: an
		// event moves it.t back to its time, and Integrator.replay lands
		// a cut step at that time, after the full step.
		f(e.stage(last), it.u, p, it.tPrev+e.h)
		it.stats.FEvals++
		e.lastOK = true
		if e.k0 == k0Stale {
			e.k0 = k0InLast
		}
	}
	h := T(e.h)
	if e.ne > 0 && !e.extraOK {
		for x := e.s; x < e.s+e.ne; x++ {
			e.combine(e.tmp[:e.nIn], it.uPrev, h, &e.rows[x])
			f(e.stage(x), e.tmp, p, it.tPrev+e.c[x]*e.h)
		}
		it.stats.FEvals += e.ne
		e.extraOK = true
	}
	n := e.n
	copy(poly[:n], it.uPrev)
	if n == 2 && e.interp4 {
		e.dense24(poly[2:10], h)
		return
	}
	for j := range e.interp {
		e.combine(poly[(j+1)*n:(j+2)*n], e.zero, h, &e.interp[j])
	}
}

// dense24 is dense's four coefficient rows for two components: Tsit5's
// and DP5's interpolants of a 2-state problem. The first row, θ¹, is h·k_0
// for these methods and goes on its own. The other three go in one pass
// over the stages they share, interp4. Each coefficient is the same sum in
// the same order as combine's, so it has the same bits.
func (e *erk[T]) dense24(c []T, h T) {
	c = c[:8]
	z := e.zero[0] // combine's u: 0 + h·a, kept for the same bits
	r0 := &e.interp[0]
	var a00, a01 T
	for m, o := range r0.off {
		kk := e.k[o : o+2 : o+2]
		a00 += r0.val[m] * kk[0]
		a01 += r0.val[m] * kk[1]
	}
	c[0], c[1] = z+h*a00, z+h*a01
	r1, r2, r3 := &e.interp[1], &e.interp[2], &e.interp[3]
	off := r1.off
	v1, v2, v3 := r1.val[:len(off)], r2.val[:len(off)], r3.val[:len(off)]
	var a10, a11, a20, a21, a30, a31 T
	for m, o := range off {
		kk := e.k[o : o+2 : o+2]
		k0, k1 := kk[0], kk[1]
		a10 += v1[m] * k0
		a11 += v1[m] * k1
		a20 += v2[m] * k0
		a21 += v2[m] * k1
		a30 += v3[m] * k0
		a31 += v3[m] * k1
	}
	c[2], c[3] = z+h*a10, z+h*a11
	c[4], c[5] = z+h*a20, z+h*a21
	c[6], c[7] = z+h*a30, z+h*a31
}
