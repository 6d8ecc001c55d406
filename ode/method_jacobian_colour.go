package ode

import (
	"math"

	"github.com/flatkit/flatkit/ode/linalg"
)

// colJac evaluates a Jacobian with a known sparsity in groups of
// structurally orthogonal columns, as Curtis, Powell and Reid proposed: no
// two columns of a group have an entry in the same row, so one product
// J·seed, with seed the sum of the group's unit vectors, gives all their
// entries. The product is a JVP when Problem.JVP is set, exact to
// rounding, and otherwise a forward difference of F with every column of
// the group perturbed at once: one evaluation of F per group instead of
// one per column. A band matrix of bandwidths l and u needs l+u+1 groups,
// whatever n.
//
// The difference increments are the dense ones of jacEval (CVODE's
// cvDlsBandDQJac uses the same per column), so a coloured difference
// Jacobian has the entries of the dense one wherever F_i reads only the
// columns of its pattern row.
//
// The entries go to a value slice in any storage: entry (i, j) of the
// pattern at position pos[k] of the slice, for the band storage of
// BandJacobian, the CSR order of SparseJacobian or the blocks of a
// block-diagonal preconditioner. Positions the pattern lacks are never
// written.
type colJac[T Float] struct {
	n       int
	sqrtEps float64
	grpPtr  []int // the columns of group g are grpCol[grpPtr[g]:grpPtr[g+1]]
	grpCol  []int
	colPtr  []int // the entries of column j are colRow[colPtr[j]:colPtr[j+1]] …
	colRow  []int
	colPos  []int // … at these positions of the value slice
	up      []T   // the perturbed state, or the JVP's seed
	fp      []T   // F at the perturbed state, or the JVP
	inc     []T   // the increment of each column of the current group

	// strict makes every sweep check that F changes only in the rows of
	// its group's entries, so that a pattern missing a dependency is an
	// error instead of a wrong Jacobian. A preconditioner's sweeps, which
	// approximate J on purpose, are not strict.
	strict       bool
	mark         []int // mark[i] == stamp: row i has an entry in the current group
	stamp        int
	missI, missJ int // the missing entry the last sweep found, or −1
}

// newColJac builds the sweeps for pattern p, n×n, whose columns are
// coloured by colours into k groups, with entry (i, j) stored at
// position pos(i, j) of the value slice.
func newColJac[T Float](p *linalg.Pattern, colours []int, k int, pos func(i, j int) int) *colJac[T] {
	n := p.Cols
	c := &colJac[T]{n: n, sqrtEps: sqrtEpsOf[T]()}
	c.grpPtr = make([]int, k+1)
	for _, g := range colours {
		c.grpPtr[g+1]++
	}
	for g := 0; g < k; g++ {
		c.grpPtr[g+1] += c.grpPtr[g]
	}
	c.grpCol = make([]int, n)
	next := make([]int, k)
	copy(next, c.grpPtr[:k])
	for j, g := range colours {
		c.grpCol[next[g]] = j
		next[g]++
	}
	t, _ := p.Transpose()
	c.colPtr = t.RowPtr
	c.colRow = t.ColIdx
	c.colPos = make([]int, len(t.ColIdx))
	for j := 0; j < n; j++ {
		for x := t.RowPtr[j]; x < t.RowPtr[j+1]; x++ {
			c.colPos[x] = pos(t.ColIdx[x], j)
		}
	}
	buf := padded[T](3 * n)
	c.up, c.fp, c.inc = buf[:n:n], buf[n:2*n:2*n], buf[2*n:]
	c.missI, c.missJ = -1, -1
	return c
}

// checked makes c strict: see colJac.strict.
func (c *colJac[T]) checked() *colJac[T] {
	c.strict = true
	c.mark = make([]int, c.n)
	return c
}

// markGroup stamps the rows that have an entry in the columns cols.
func (c *colJac[T]) markGroup(cols []int) {
	c.stamp++
	for _, j := range cols {
		for x := c.colPtr[j]; x < c.colPtr[j+1]; x++ {
			c.mark[c.colRow[x]] = c.stamp
		}
	}
}

// unmarkedChange returns the first row outside the current group's
// entries where the product changed, d[i] ≠ base[i] (base nil: d[i] ≠ 0),
// or −1.
func (c *colJac[T]) unmarkedChange(d, base []T) int {
	for i, v := range d[:c.n] {
		b := T(0)
		if base != nil {
			b = base[i]
		}
		if v != b && c.mark[i] != c.stamp {
			return i
		}
	}
	return -1
}

// sqrtEpsOf is √ε of T: the relative size of difference steps.
func sqrtEpsOf[T Float]() float64 {
	if T(1)+T(0x1p-30) == T(1) { // T is float32
		return math.Sqrt(0x1p-23)
	}
	return math.Sqrt(0x1p-52)
}

// groups is the number of column groups: the products one Jacobian takes.
func (c *colJac[T]) groups() int { return len(c.grpPtr) - 1 }

// eval writes J's pattern entries into vals at t and u, where
// f0 = F(u, t): by JVPs when Problem.JVP is set, else by differences of F,
// one evaluation per group, counted in FEvals. h is the step the Jacobian
// is for. It does not count the JacEval: the caller does.
//
// A strict colJac reports false when F depends on a column outside the
// pattern; missI and missJ then name the entry.
func (c *colJac[T]) eval(it *Integrator[T], vals []T, t float64, u, f0 []T, h float64) bool {
	c.missI, c.missJ = -1, -1
	if it.prob.JVP != nil {
		return c.evalJVP(it, vals, t, u)
	}
	return c.evalFD(it, vals, t, u, f0, h)
}

// evalJVP takes one JVP per group: seed = Σ e_j over the group's columns.
func (c *colJac[T]) evalJVP(it *Integrator[T], vals []T, t float64, u []T) bool {
	seed, jv := c.up, c.fp
	clear(seed)
	p := it.prob.P
	for g := 0; g+1 < len(c.grpPtr); g++ {
		cols := c.grpCol[c.grpPtr[g]:c.grpPtr[g+1]]
		for _, j := range cols {
			seed[j] = 1
		}
		it.prob.JVP(jv, u, seed, p, nil, t)
		if c.strict {
			c.markGroup(cols)
			if i := c.unmarkedChange(jv, nil); i >= 0 {
				clear(seed)
				c.findMissing(i, cols, func(j int) bool {
					seed[j] = 1
					it.prob.JVP(jv, u, seed, p, nil, t)
					seed[j] = 0
					return jv[i] != 0
				})
				return false
			}
		}
		for _, j := range cols {
			seed[j] = 0
			for x := c.colPtr[j]; x < c.colPtr[j+1]; x++ {
				vals[c.colPos[x]] = jv[c.colRow[x]]
			}
		}
	}
	return true
}

// findMissing names the column of cols on which row i depends, asking
// depends for each; the error path of a strict sweep.
func (c *colJac[T]) findMissing(i int, cols []int, depends func(j int) bool) {
	c.missI, c.missJ = i, cols[0]
	for _, j := range cols {
		if depends(j) {
			c.missJ = j
			return
		}
	}
}

// evalFD takes one forward difference of F per group, with the increments
// of dqIncrements.
func (c *colJac[T]) evalFD(it *Integrator[T], vals []T, t float64, u, f0 []T, h float64) bool {
	n := c.n
	up, fp, inc := c.up, c.fp, c.inc
	copy(up, u[:n])
	f0 = f0[:n]
	dqIncrements(it, u, f0, h, c.sqrtEps, inc)
	p := it.prob.P
	for g := 0; g+1 < len(c.grpPtr); g++ {
		cols := c.grpCol[c.grpPtr[g]:c.grpPtr[g+1]]
		for _, j := range cols {
			up[j] = u[j] + inc[j]
		}
		it.prob.F(fp, up, p, t)
		if c.strict {
			c.markGroup(cols)
			if i := c.unmarkedChange(fp, f0); i >= 0 {
				for _, j := range cols {
					up[j] = u[j]
				}
				c.findMissing(i, cols, func(j int) bool {
					up[j] = u[j] + inc[j]
					it.prob.F(fp, up, p, t)
					up[j] = u[j]
					it.stats.FEvals++
					return fp[i] != f0[i]
				})
				it.stats.FEvals += g + 1
				return false
			}
		}
		for _, j := range cols {
			up[j] = u[j]
			d := 1 / inc[j]
			for x := c.colPtr[j]; x < c.colPtr[j+1]; x++ {
				i := c.colRow[x]
				vals[c.colPos[x]] = (fp[i] - f0[i]) * d
			}
		}
	}
	it.stats.FEvals += c.groups()
	return true
}

// dqIncrements writes the forward-difference increment of every
// component of u into inc, with f0 = F(u) and h the step the Jacobian is
// for. They are CVODE's (cvDlsDenseDQJac, cvDlsBandDQJac):
//
//	δ_j = max(√ε·|u_j|, m·(atol + rtol·|u_j|)),  m = 1000·|h|·ε·n·‖f0‖,
//
// with ‖·‖ the weighted RMS norm, and m = 1 when f0 = 0. So a component
// far below 1 is perturbed on its own scale, not by √ε: a radical
// concentration of 1e-10, say. Each δ_j is rounded to the exact difference
// (u_j + δ_j) − u_j, so that u_j + inc[j] is the perturbed value and
// 1/inc[j] its exact reciprocal step; one below the spacing of floats at
// u_j becomes √ε·max(|u_j|, 1). One call per Jacobian, so that the
// callers' loops over the columns stay free of calls.
func dqIncrements[T Float](it *Integrator[T], u, f0 []T, h, sqrtEps float64, inc []T) {
	n := len(f0)
	u, inc = u[:n], inc[:n]
	ue := sqrtEps * sqrtEps
	fn := wrmsNorm(f0, u, u, &it.o)
	minInc := 1.0
	if fn > 0 && fn <= math.MaxFloat64 {
		minInc = 1000 * math.Abs(h) * ue * float64(n) * fn
	}
	for j, uj := range u {
		a := math.Abs(float64(uj))
		atol, rtol := it.o.tolAt(j)
		if math.IsInf(atol, 1) { // a component left out of the error control
			atol = 0
		}
		d := T(max(sqrtEps*a, minInc*(atol+rtol*a)))
		d = T(uj+d) - uj // exactly representable: T() rounds the sum
		if d == 0 {
			d = T(sqrtEps * max(a, 1))
			d = T(uj+d) - uj
		}
		inc[j] = d
	}
}

// bandColJac is colJac for the band storage of BandJacobian with
// bandwidths lower and upper: column j in group j mod (lower+upper+1),
// CVODE's grouping.
func bandColJac[T Float](n, lower, upper int) *colJac[T] {
	w := lower + upper + 1
	colours := make([]int, n)
	for j := range colours {
		colours[j] = j % w
	}
	return newColJac[T](linalg.BandPattern(n, lower, upper), colours, min(w, n), func(i, j int) int { return bandPos(i, j, lower, upper) })
}

// bandPos is the position of entry (i, j) in band storage.
func bandPos(i, j, lower, upper int) int { return i*(lower+upper+1) + j - i + lower }
