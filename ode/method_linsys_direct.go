package ode

import (
	"sort"

	"github.com/flatkit/flatkit/ode/linalg"
)

// structJac is a Jacobian kept in the storage of a BandJacobian or a
// SparseJacobian structure (see Structure), evaluated by Problem.Jac or by
// colJac's coloured sweeps.
type structJac[T Float] struct {
	n            int
	band         bool
	lower, upper int             // band
	pat          *linalg.Pattern // the pattern of the stored entries
	vals         []T             // J in the structure's storage
	cj           *colJac[T]
	corners      []int // band storage positions outside the matrix, kept 0
}

func newBandJac[T Float](n, lower, upper int) *structJac[T] {
	sj := &structJac[T]{n: n, band: true, lower: lower, upper: upper}
	sj.vals = padded[T](n * (lower + upper + 1))
	sj.cj = bandColJac[T](n, lower, upper).checked()
	sj.pat = linalg.BandPattern(n, lower, upper)
	for i := 0; i < n; i++ {
		for j := i - lower; j <= i+upper; j++ {
			if j < 0 || j >= n {
				sj.corners = append(sj.corners, bandPos(i, j, lower, upper))
			}
		}
	}
	return sj
}

func newSparseJac[T Float](p *linalg.Pattern) *structJac[T] {
	sj := &structJac[T]{n: p.Rows, pat: p, vals: padded[T](p.NNZ())}
	colours, k := linalg.Colour(p)
	sj.cj = newColJac[T](p, colours, k, p.Index).checked()
	return sj
}

// pos is the position of entry (i, j) in vals.
func (sj *structJac[T]) pos(i, j int) int {
	if sj.band {
		return bandPos(i, j, sj.lower, sj.upper)
	}
	return sj.pat.Index(i, j)
}

// entry is the row and column of position k of vals.
func (sj *structJac[T]) entry(k int) (i, j int) {
	if sj.band {
		w := sj.lower + sj.upper + 1
		i = k / w
		return i, i + k%w - sj.lower
	}
	i = sort.Search(sj.n+1, func(r int) bool { return sj.pat.RowPtr[r] > k }) - 1
	return i, sj.pat.ColIdx[k]
}

// eval evaluates J at t and u, where f0 = F(u, t), counting one JacEval.
// It reports false, with fail set, when J is not finite or Problem.Jac
// wrote a band position outside the matrix.
func (sj *structJac[T]) eval(it *Integrator[T], t float64, u, f0 []T, h float64, fail *lsFail) bool {
	it.stats.JacEvals++
	fail.userJac = it.prob.Jac != nil
	if it.prob.Jac != nil {
		for _, k := range sj.corners {
			sj.vals[k] = 0
		}
		it.prob.Jac(sj.vals, u, it.prob.P, t)
		for _, k := range sj.corners {
			if v := sj.vals[k]; v != 0 {
				fail.kind, fail.v = lsOutside, float64(v)
				fail.i, fail.j = sj.entry(k)
				return false
			}
		}
	} else if !sj.cj.eval(it, sj.vals, t, u, f0, h) {
		fail.kind, fail.i, fail.j, fail.v = lsMissing, sj.cj.missI, sj.cj.missJ, t
		return false
	}
	return finiteJac(sj.vals, sj.entry, fail)
}

// finiteJac reports whether the Jacobian values vals are all finite; if
// not, fail names the entry, with entry mapping a position to its row and
// column.
func finiteJac[T Float](vals []T, entry func(k int) (i, j int), fail *lsFail) bool {
	k := firstNonFinite(vals)
	if k < 0 {
		return true
	}
	fail.kind = lsJacNaN
	fail.i, fail.j = entry(k)
	return false
}

// shiftedLU is a factorisation of W = I − c·J with J in a structure's
// storage: linalg's BandLU and SparseLU, and denseFill.
type shiftedLU[T Float] interface {
	// FactorShifted factors I − c·J; it returns −1 or the column of a
	// zero pivot.
	FactorShifted(J []T, c T) int
	// Solve overwrites b with W⁻¹b.
	Solve(b []T)
}

// structSys is linSys for a band or sparse Jacobian and a direct solver.
type structSys[T Float] struct {
	sj   *structJac[T]
	lu   shiftedLU[T]
	fail lsFail
}

func newStructSys[T Float](sj *structJac[T], lu shiftedLU[T], name string) *structSys[T] {
	return &structSys[T]{sj: sj, lu: lu, fail: lsFail{name: name}}
}

func (s *structSys[T]) jacobian(it *Integrator[T], t float64, u, f0 []T, h float64) bool {
	s.fail.kind = lsOK
	return s.sj.eval(it, t, u, f0, h, &s.fail)
}

func (s *structSys[T]) factor(it *Integrator[T], c float64) bool {
	s.fail.kind = lsOK
	it.stats.LUs++
	if k := s.lu.FactorShifted(s.sj.vals, T(c)); k >= 0 {
		s.fail.kind, s.fail.j = lsSingular, k
		return false
	}
	return true
}

func (s *structSys[T]) solve(it *Integrator[T], b, u, fu []T, tol float64) bool {
	s.lu.Solve(b)
	return true
}

func (s *structSys[T]) shift(c float64) bool { return false }

func (s *structSys[T]) failure() (Retcode, int, error) { return s.fail.failure() }

// denseFill is a dense LU of W = I − c·J with J in band or sparse storage:
// DenseLU over a BandJacobian or SparseJacobian structure.
type denseFill[T Float] struct {
	n     int
	W     []T // row-major n×n, then its LU factors
	scale []T
	piv   []int
	dpos  []int // the index in W of each storage position; −1 outside the matrix
}

func newDenseFill[T Float](sj *structJac[T]) *denseFill[T] {
	n := sj.n
	d := &denseFill[T]{n: n, W: padded[T](n * n), scale: padded[T](n), piv: make([]int, n), dpos: make([]int, len(sj.vals))}
	for k := range d.dpos {
		d.dpos[k] = -1
	}
	for i := 0; i < n; i++ {
		for _, j := range sj.pat.Row(i) {
			d.dpos[sj.pos(i, j)] = i*n + j
		}
	}
	return d
}

func (d *denseFill[T]) FactorShifted(J []T, c T) int {
	n, W := d.n, d.W
	clear(W)
	for k, q := range d.dpos[:len(J)] {
		if q >= 0 {
			W[q] = -c * J[k]
		}
	}
	for i := 0; i < n; i++ {
		row := W[i*n : (i+1)*n]
		sc := T(1)
		for _, v := range row {
			sc = max(sc, abs(v))
		}
		row[i] += 1
		d.scale[i] = sc
	}
	return linalg.LUFactor(W, n, d.piv, d.scale)
}

func (d *denseFill[T]) Solve(b []T) { linalg.LUSolve(d.W, d.n, d.piv, b) }

// gatherLU is a shiftedLU in another storage: it gathers J's values into
// the storage of lu before each factorisation. It solves a band structure
// by SparseLU (the band's pattern) and a sparse one by BandLU (the band of
// the pattern's bandwidths).
type gatherLU[T Float] struct {
	src []int // the position in J of each value of buf; −1 for a zero
	buf []T
	lu  shiftedLU[T]
}

func (g *gatherLU[T]) FactorShifted(J []T, c T) int {
	for k, q := range g.src {
		if q >= 0 {
			g.buf[k] = J[q]
		} else {
			g.buf[k] = 0
		}
	}
	return g.lu.FactorShifted(g.buf, c)
}

func (g *gatherLU[T]) Solve(b []T) { g.lu.Solve(b) }

// newBandAsSparse solves a band structure by SparseLU on the band's pattern.
func newBandAsSparse[T Float](sj *structJac[T]) (*structSys[T], error) {
	lu, err := newSparseLU[T](sj.pat)
	if err != nil {
		return nil, errorf("SparseLU of the band's pattern: %v", err)
	}
	g := &gatherLU[T]{src: make([]int, sj.pat.NNZ()), buf: padded[T](sj.pat.NNZ()), lu: lu}
	for i := 0; i < sj.n; i++ {
		for x := sj.pat.RowPtr[i]; x < sj.pat.RowPtr[i+1]; x++ {
			g.src[x] = sj.pos(i, sj.pat.ColIdx[x])
		}
	}
	return newStructSys[T](sj, g, "sparse LU"), nil
}

// newSparseAsBand solves a sparse structure by BandLU on the band of its
// pattern's bandwidths.
func newSparseAsBand[T Float](sj *structJac[T]) *structSys[T] {
	n := sj.n
	lower, upper := sj.pat.Bandwidths()
	w := lower + upper + 1
	g := &gatherLU[T]{src: make([]int, n*w), buf: padded[T](n * w), lu: linalg.NewBandLU[T](n, lower, upper)}
	for k := range g.src {
		i := k / w
		g.src[k] = sj.pat.Index(i, i+k%w-lower)
	}
	return newStructSys[T](sj, g, "band LU")
}
