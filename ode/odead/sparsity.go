package odead

import (
	"fmt"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/linalg"
)

// Sparse and band Jacobians of an ad-written right-hand side. The pattern
// of ∂F/∂u is found from one recording of f (ad.Tape.JacobianPattern):
// structurally, from the ops and never from values, so it holds at every
// state. Jac then writes J in the problem's structure by colour-seeded
// forward sweeps (Curtis, Powell and Reid): the columns are coloured so
// that no two columns of one colour share a row (linalg.Colour), and one
// forward sweep seeded with the sum of a colour's unit vectors gives all
// of that colour's entries. k sweeps over the recording for k colours
// instead of n.

// Sparsity returns the pattern of the Jacobian ∂F/∂u of the ad-written
// right-hand side f, an n×n linalg.Pattern for n = len(u), from one
// recording of f at (u, p, t). The pattern is structural: a dependency
// whose derivative happens to be 0 at u (u_i·u_j at u_j = 0, the branch
// of a Where, Relu, Clamp or Max not taken) is in it, so it holds at every
// state for which f records the same ops. f must not choose its ops by
// the values of u (Go code that reads a value and branches) for that to
// hold.
//
// An op of f on a path from u without a structural rule (convolutions,
// pooling, batch normalisation, a user's ad.Primitive) is an error that
// names it and wraps ad.ErrNoSparsityRule; ad.Tape.JacobianPattern lists
// the ops covered.
func Sparsity[F ode.Float, R RHS](f R, u []F, p []float32, t float64) (*linalg.Pattern, error) {
	n := len(u)
	if n == 0 || f == nil {
		return nil, errorf("Sparsity: want a non-nil f and a non-empty u, got f nil %t and %d states", f == nil, n)
	}
	pat, err := sparsity(rhsOf(f), u, p, t)
	if err != nil {
		return nil, errorf("Sparsity at t=%g: %w", t, err)
	}
	return pat, nil
}

// sparsity is Sparsity without the prefix of its errors.
func sparsity[F ode.Float](f rhsFunc, u []F, p []float32, t float64) (*linalg.Pattern, error) {
	n := len(u)
	tp := ad.NewTape()
	uv := stateParam(tp, append([]F(nil), u...))
	var pv ad.Var
	if isFloat64(u) {
		pv = tp.ParamFloat64(p)
	} else {
		pv = tp.Const(flat.Tensor{Shape: []int{len(p)}, Data: p})
	}
	tb := []F{F(t)}
	y := f.call(uv, pv, t, stateConst(tp, nil, tb))
	if err := tp.Err(); err != nil {
		return nil, errorf("the ad right-hand side: %w", err)
	}
	if y.IsZero() || y.Tape() != tp {
		return nil, fmt.Errorf("f returned the zero Var or a Var of another tape, want a Var computed from u and p on their tape")
	}
	if y.Size() != n {
		return nil, fmt.Errorf("f returned %d values (shape %v), want %d", y.Size(), y.Shape(), n)
	}
	rowPtr, colIdx, err := tp.JacobianPattern(y, uv)
	if err != nil {
		return nil, errorf("%w", err)
	}
	pat := &linalg.Pattern{Rows: n, Cols: n, RowPtr: rowPtr, ColIdx: colIdx}
	if err := pat.Validate(); err != nil {
		return nil, err // unreachable: JacobianPattern makes valid rows
	}
	return pat, nil
}

// SparseJac makes the problem's Jacobian sparse: Problem finds the pattern
// of ∂F/∂u from a recording of f at (u0, p, t0), as Sparsity does, and
// sets JacStructure to ode.SparseJacobian with it. Jac writes the values
// of the pattern's entries in its CSR order, by one forward sweep per
// colour of linalg.Colour. With JacPattern the given pattern is used
// instead, and Problem checks that it has every entry of the detected
// one. Func and Derivs see no state to record f at: they need JacPattern
// with it, and panic without.
func SparseJac() Option { return func(c *adConfig) { c.jac = jacSparse } }

// BandJac is SparseJac for a band structure: JacStructure is
// ode.BandJacobian with the bandwidths of the detected (or given)
// pattern, and Jac writes the band storage, the entries of the band
// outside the pattern as zeros. It suits a pattern whose entries fill
// most of a narrow band, as a 1-D grid's do; a 2-D grid's pattern has a
// band as wide as a row of the grid, mostly empty, and is better kept
// sparse.
func BandJac() Option { return func(c *adConfig) { c.jac = jacBand } }

// JacPattern gives the pattern of ∂F/∂u, an n×n linalg.Pattern, rather
// than having Problem detect it: for Func and Derivs, which have no state
// to record f at, with a pattern from Sparsity, or for a pattern the user
// knows. It implies SparseJac unless BandJac is given. Jac writes the
// given entries, zero where f does not depend on them; an entry that the
// pattern lacks is dropped, which Problem reports as an error up front.
func JacPattern(p *linalg.Pattern) Option {
	return func(c *adConfig) {
		c.pattern = p
		if c.jac == jacDense {
			c.jac = jacSparse
		}
	}
}

// The storage of the Jacobian that Jac writes.
const (
	jacDense = iota
	jacSparse
	jacBand
)

// colouredJac is what Jac needs to write a sparse or band Jacobian from
// colour-seeded forward sweeps. It is made once and only read after.
type colouredJac struct {
	pat          *linalg.Pattern
	band         bool
	dense        bool // J is dense, row-major: the pattern's entries, zeros elsewhere
	lower, upper int
	size         int       // the length of Jac's J
	k            int       // colours
	seeds        []float32 // k×n: seed c is 1 at the columns of colour c
	seeds64      []float64 // the same in float64
	// The pattern's entries grouped by colour: those of colour c are
	// dst[start[c]:start[c+1]], each the position in J of an entry in
	// row row[q] of its colour's sweep.
	start, dst, row []int
}

func newColouredJac(pat *linalg.Pattern, band bool) *colouredJac {
	return colourJac(pat, band, false)
}

// colourJac is newColouredJac, and with dense the colouring of a dense
// Jacobian: J row-major n×n, the pattern's entries written and the others
// cleared.
func colourJac(pat *linalg.Pattern, band, dense bool) *colouredJac {
	n := pat.Rows
	colours, k := linalg.Colour(pat)
	cj := &colouredJac{pat: pat, band: band, dense: dense, k: k, size: pat.NNZ()}
	if dense {
		cj.size = n * n
	}
	if band {
		cj.lower, cj.upper = pat.Bandwidths()
		cj.size = n * (cj.lower + cj.upper + 1)
	}
	cj.seeds = make([]float32, k*n)
	cj.seeds64 = make([]float64, k*n)
	for j, c := range colours {
		cj.seeds[c*n+j] = 1
		cj.seeds64[c*n+j] = 1
	}
	cj.start = make([]int, k+1)
	for _, j := range pat.ColIdx {
		cj.start[colours[j]+1]++
	}
	for c := range k {
		cj.start[c+1] += cj.start[c]
	}
	next := append([]int(nil), cj.start[:k]...)
	cj.dst, cj.row = make([]int, pat.NNZ()), make([]int, pat.NNZ())
	for i := range n {
		for q := pat.RowPtr[i]; q < pat.RowPtr[i+1]; q++ {
			j := pat.ColIdx[q]
			at := q
			switch {
			case dense:
				at = i*n + j
			case band:
				at = i*(cj.lower+cj.upper+1) + j - i + cj.lower
			}
			c := colours[j]
			cj.dst[next[c]], cj.row[next[c]] = at, i
			next[c]++
		}
	}
	return cj
}

// seedsOf returns cj's seeds in F.
func seedsOf[F ode.Float](cj *colouredJac) []F {
	var d []F
	if p, ok := any(&d).(*[]float64); ok {
		*p = cj.seeds64
	} else {
		*any(&d).(*[]float32) = cj.seeds
	}
	return d
}

// structure is the ode.Structure of cj's Jacobian.
func (cj *colouredJac) structure() ode.Structure {
	if cj.band {
		return ode.BandJacobian{Lower: cj.lower, Upper: cj.upper}
	}
	return ode.SparseJacobian{Pattern: cj.pat}
}

// jacSize is the length of the J that Jac writes.
func (a *adRHS[F]) jacSize() int {
	if a.cj != nil {
		return a.cj.size
	}
	return a.n * a.n
}

// useStructure sets a's Jacobian structure from its options, with pat
// the pattern to use (given or detected), or nil for a dense Jacobian.
func (a *adRHS[F]) useStructure(c *adConfig, pat *linalg.Pattern) error {
	if c.jac == jacDense {
		return nil
	}
	if err := pat.Validate(); err != nil {
		return err
	}
	if pat.Rows != a.n || pat.Cols != a.n {
		return fmt.Errorf("the pattern is %d×%d, want %d×%d (the states)", pat.Rows, pat.Cols, a.n, a.n)
	}
	a.cj = newColouredJac(pat, c.jac == jacBand)
	return nil
}

// covers returns an error naming the first entry of want that have lacks.
func covers(have, want *linalg.Pattern) error {
	for i := range want.Rows {
		for _, j := range want.Row(i) {
			if !have.Has(i, j) {
				return fmt.Errorf("the pattern given by JacPattern lacks entry (row %d, column %d) of ∂F/∂u, on which f depends", i, j)
			}
		}
	}
	return nil
}

// sweep records, into pr.rows, the k forward sweeps over f's recording
// (from u to y) seeded with the colours' seeds: tangent c holds the
// entries of the columns of colour c, each in its row.
func sweepColours[F ode.Float](cj *colouredJac, pr *adProg[F], y ad.Var, n int) error {
	if len(pr.rows) != cj.k {
		pr.rows = make([]ad.Var, cj.k)
	}
	tp := pr.tape
	pr.wrt[0] = pr.in[0]
	pr.sh[2][0] = n
	for c := range cj.k {
		// Each sweep covers f's nodes only, not the earlier sweeps'.
		// out[0] holds the seed: a slice of a field does not escape.
		pr.out[0] = stateConst(tp, pr.sh[2][:], seedsOf[F](cj)[c*n:(c+1)*n])
		var err error
		if pr.rows[c], err = tp.JVPOf(y, pr.wrt[:1], pr.out[:1]); err != nil {
			return err
		}
	}
	return nil
}

// writeColours writes J in cj's storage from the sweeps' tangents.
func writeColours[F ode.Float](cj *colouredJac, J []F, tans []ad.Var) {
	if cj.band || cj.dense {
		clear(J)
	}
	for c, tv := range tans {
		dst, row := cj.dst[cj.start[c]:cj.start[c+1]], cj.row[cj.start[c]:cj.start[c+1]]
		if tv.IsZero() {
			for _, q := range dst {
				J[q] = 0
			}
			continue
		}
		d := valuesOf[F](tv)
		for k, q := range dst {
			J[q] = d[row[k]]
		}
	}
}

// detectStructure sets up Problem's sparse or band Jacobian: it detects
// the pattern at (u, p, t) and uses it, or checks that the one given by
// JacPattern covers it.
func (a *adRHS[F]) detectStructure(u []F, p []float32, t float64) error {
	c := &a.cfg
	if c.jac == jacDense {
		return nil
	}
	pat, err := sparsity(a.f, u, p, t)
	if err != nil {
		return errorf("the Jacobian's pattern at t=%g: %w", t, err)
	}
	if c.pattern != nil {
		if err := c.pattern.Validate(); err != nil {
			return errorf("JacPattern: %w", err)
		}
		if c.pattern.Rows != a.n || c.pattern.Cols != a.n {
			return fmt.Errorf("JacPattern: the pattern is %d×%d, want %d×%d (the states)", c.pattern.Rows, c.pattern.Cols, a.n, a.n)
		}
		if err := covers(c.pattern, pat); err != nil {
			return err
		}
		pat = c.pattern
	}
	return a.useStructure(c, pat)
}

// denseColours returns the colouring of the pattern of ∂y/∂u on tp's
// recording, for a dense Jacobian written by forward sweeps, one per
// colour, when there are fewer colours than rows: fewer sweeps than the n
// reverse ones. It returns nil for a pattern that ad cannot find (an op
// without a sparsity rule) or that needs n colours. The pattern is
// structural, so it holds for every replay of the recording.
func denseColours(tp *ad.Tape, y, u ad.Var, n int) *colouredJac {
	rowPtr, colIdx, err := tp.JacobianPattern(y, u)
	if err != nil {
		return nil
	}
	pat := &linalg.Pattern{Rows: n, Cols: n, RowPtr: rowPtr, ColIdx: colIdx}
	if pat.Validate() != nil {
		return nil
	}
	cj := colourJac(pat, false, true)
	if cj.k >= n {
		return nil
	}
	return cj
}
