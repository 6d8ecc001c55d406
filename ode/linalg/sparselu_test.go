package linalg_test

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/internal/race"
	"github.com/flatkit/flatkit/ode/linalg"
)

// randomPattern draws an n×n pattern with about deg entries a row besides
// the diagonal, which is left out of a row with probability dropDiag.
func randomPattern(rt *rapid.T, n int, dropDiag float64) *linalg.Pattern {
	deg := rapid.IntRange(0, min(6, n-1)).Draw(rt, "deg")
	var e []linalg.Entry
	for i := 0; i < n; i++ {
		if rapid.Float64Range(0, 1).Draw(rt, "diag") >= dropDiag {
			e = append(e, linalg.Entry{Row: i, Col: i})
		}
		for t := 0; t < deg; t++ {
			e = append(e, linalg.Entry{Row: i, Col: rapid.IntRange(0, n-1).Draw(rt, "col")})
		}
	}
	// Sometimes a dense row and column, which AMD orders last.
	if n > 20 && rapid.IntRange(0, 4).Draw(rt, "dense") == 0 {
		d := rapid.IntRange(0, n-1).Draw(rt, "denseRow")
		for j := 0; j < n; j++ {
			e = append(e, linalg.Entry{Row: d, Col: j}, linalg.Entry{Row: j, Col: d})
		}
	}
	p, err := linalg.NewPattern(n, n, e)
	if err != nil {
		rt.Fatal(err)
	}
	return p
}

// randomValues draws values in ±[0.1, 1] for the pattern's entries; a
// diagonal entry is scaled by diagScale, small ones forcing pivoting.
func randomValues(rt *rapid.T, p *linalg.Pattern, diagScale float64) []float64 {
	v := make([]float64, p.NNZ())
	for i := 0; i < p.Rows; i++ {
		for k := p.RowPtr[i]; k < p.RowPtr[i+1]; k++ {
			a := rapid.Float64Range(0.1, 1).Draw(rt, "v")
			if rapid.Bool().Draw(rt, "sign") {
				a = -a
			}
			if p.ColIdx[k] == i {
				a *= diagScale
			}
			v[k] = a
		}
	}
	return v
}

// denseOf returns shift·I + scale·J as a dense matrix.
func denseOf(p *linalg.Pattern, vals []float64, scale, shift float64) *mat.Dense {
	n := p.Rows
	a := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		a.Set(i, i, shift)
		for k := p.RowPtr[i]; k < p.RowPtr[i+1]; k++ {
			j := p.ColIdx[k]
			a.Set(i, j, a.At(i, j)+scale*vals[k])
		}
	}
	return a
}

// checkSolves compares Solve and SolveTranspose of s with dense solves of
// a, skipping systems too ill-conditioned for the tolerance.
func checkSolves(rt *rapid.T, s *linalg.SparseLU[float64], a *mat.Dense) {
	n, _ := a.Dims()
	var lu mat.LU
	lu.Factorize(a)
	if c := lu.Cond(); c > 1e4 || math.IsInf(c, 0) {
		rt.Skipf("condition number %g", c)
	}
	b := make([]float64, n)
	for i := range b {
		b[i] = rapid.Float64Range(-1, 1).Draw(rt, "b")
	}
	for _, trans := range []bool{false, true} {
		want := mat.NewVecDense(n, nil)
		if err := lu.SolveVecTo(want, trans, mat.NewVecDense(n, append([]float64(nil), b...))); err != nil {
			rt.Fatal(err)
		}
		x := append([]float64(nil), b...)
		if trans {
			s.SolveTranspose(x)
		} else {
			s.Solve(x)
		}
		var diff, norm float64
		for i := range x {
			diff = math.Max(diff, math.Abs(x[i]-want.AtVec(i)))
			norm = math.Max(norm, math.Abs(want.AtVec(i)))
		}
		if diff > 1e-10*norm {
			rt.Fatalf("transpose %v: max error %g against the dense solve, want ≤ 1e-10 × %g", trans, diff, norm)
		}
	}
}

func TestSparseLUMatchesDense(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 200).Draw(rt, "n")
		p := randomPattern(rt, n, rapid.Float64Range(0, 0.3).Draw(rt, "dropDiag"))
		s, err := linalg.NewSparseLU[float64](p)
		if err != nil {
			rt.Fatal(err)
		}
		// Small diagonals make the diagonal pivots unacceptable, so the
		// threshold pivoting has to choose others.
		diagScale := rapid.SampledFrom([]float64{1e-6, 0.01, 1, 10}).Draw(rt, "diagScale")
		vals := randomValues(rt, p, diagScale)
		shifted := rapid.Bool().Draw(rt, "shifted")
		c := rapid.Float64Range(0.1, 10).Draw(rt, "c")
		var k int
		var a *mat.Dense
		if shifted {
			k, a = s.FactorShifted(vals, c), denseOf(p, vals, -c, 1)
		} else {
			k, a = s.Factor(vals), denseOf(p, vals, 1, 0)
		}
		if k >= 0 {
			var lu mat.LU
			lu.Factorize(a)
			if lu.Cond() < 1e12 {
				rt.Fatalf("factorisation reports a zero pivot at %d of a matrix with condition number %g", k, lu.Cond())
			}
			rt.Skip("singular")
		}
		checkSolves(rt, s, a)

		// New values on the same pattern: a refactorisation, or a fallback.
		vals2 := randomValues(rt, p, diagScale)
		if shifted {
			k, a = s.FactorShifted(vals2, c), denseOf(p, vals2, -c, 1)
		} else {
			k, a = s.Factor(vals2), denseOf(p, vals2, 1, 0)
		}
		if k >= 0 {
			rt.Skip("singular")
		}
		st := s.Stats()
		if st.Factors+st.Refactor != 2 || st.Fallback > 2 {
			rt.Fatalf("stats %+v after two factorisations", st)
		}
		checkSolves(rt, s, a)
	})
}

// A reused pivot that becomes zero makes the refactorisation fall back to
// pivoting, and the solve is still right.
func TestSparseLUFallback(t *testing.T) {
	p, _ := linalg.NewPattern(2, 2, []linalg.Entry{{0, 0}, {0, 1}, {1, 0}, {1, 1}})
	s, err := linalg.NewSparseLU[float64](p)
	if err != nil {
		t.Fatal(err)
	}
	// Diagonally dominant: the diagonal pivots are chosen.
	if k := s.Factor([]float64{4, 1, 1, 4}); k >= 0 {
		t.Fatalf("Factor = %d, want −1", k)
	}
	// A zero, then a tiny diagonal: the first reused pivot is unusable.
	for i, v := range [][]float64{{0, 1, 1, 0}, {1e-12, 1, 2, 1e-12}} {
		s.Reset()
		if k := s.Factor([]float64{4, 1, 1, 4}); k >= 0 {
			t.Fatalf("Factor = %d, want −1", k)
		}
		before := s.Stats()
		if k := s.Factor(v); k >= 0 {
			t.Fatalf("Factor(%v) = %d, want −1", v, k)
		}
		st := s.Stats()
		if st.Fallback != before.Fallback+1 || st.Factors != before.Factors+1 || st.Refactor != before.Refactor {
			t.Fatalf("case %d: stats %+v after %+v, want one fallback to a pivoting factorisation", i, st, before)
		}
		a := denseOf(p, v, 1, 0)
		for _, trans := range []bool{false, true} {
			b := []float64{1, 2}
			x := append([]float64(nil), b...)
			var got mat.VecDense
			if trans {
				s.SolveTranspose(x)
				got.MulVec(a.T(), mat.NewVecDense(2, x))
			} else {
				s.Solve(x)
				got.MulVec(a, mat.NewVecDense(2, x))
			}
			for i := range b {
				if math.Abs(got.AtVec(i)-b[i]) > 1e-12 {
					t.Fatalf("transpose %v: residual %g at %d", trans, got.AtVec(i)-b[i], i)
				}
			}
		}
		// The same values again reuse the new pivot order.
		if k := s.Factor(v); k >= 0 || s.Stats().Refactor != st.Refactor+1 {
			t.Fatalf("Factor = %d, stats %+v, want a refactorisation", k, s.Stats())
		}
	}
}

// A zero row or column is reported, and so is a non-finite value; the
// next good factorisation succeeds.
func TestSparseLUSingular(t *testing.T) {
	p := linalg.BandPattern(5, 1, 1)
	s, err := linalg.NewSparseLU[float64](p)
	if err != nil {
		t.Fatal(err)
	}
	good := make([]float64, p.NNZ())
	for i := 0; i < 5; i++ {
		for k := p.RowPtr[i]; k < p.RowPtr[i+1]; k++ {
			good[k] = 1
			if p.ColIdx[k] == i {
				good[k] = 4
			}
		}
	}
	zeroRow := append([]float64(nil), good...)
	for k := p.RowPtr[2]; k < p.RowPtr[3]; k++ {
		zeroRow[k] = 0
	}
	zeroCol := append([]float64(nil), good...)
	for k, j := range p.ColIdx {
		if j == 3 {
			zeroCol[k] = 0
		}
	}
	nan := append([]float64(nil), good...)
	nan[4] = math.NaN()
	for _, tc := range []struct {
		name string
		vals []float64
		row  int // the reported index, or −1 for any
	}{
		{"zero row", zeroRow, 2}, {"zero column", zeroCol, -1}, {"NaN", nan, -1},
	} {
		for _, warm := range []bool{false, true} {
			if warm {
				if k := s.Factor(good); k >= 0 {
					t.Fatalf("%s: Factor(good) = %d", tc.name, k)
				}
			}
			k := s.Factor(tc.vals)
			if k < 0 || (tc.row >= 0 && k != tc.row) {
				t.Errorf("%s (warm %v): Factor = %d, want %d", tc.name, warm, k, tc.row)
			}
		}
	}
	// A NaN below the diagonal, where no pivot would meet it, is reported
	// too, cold and warm.
	tri, _ := linalg.NewPattern(2, 2, []linalg.Entry{{0, 0}, {0, 1}, {1, 1}})
	for _, v := range [][]float64{{1, math.NaN(), 1}, {1, math.Inf(1), 1}} {
		for _, warm := range []bool{false, true} {
			ts, _ := linalg.NewSparseLU[float64](tri)
			if warm {
				ts.Factor([]float64{1, 1, 1})
			}
			if k := ts.Factor(v); k < 0 {
				t.Errorf("Factor(%v) (warm %v) = %d, want an index", v, warm, k)
			}
		}
	}
	// W = I − c·J with c = 1/4 on J = 4·I is singular too.
	diag := linalg.BandPattern(4, 0, 0)
	d, _ := linalg.NewSparseLU[float64](diag)
	if k := d.FactorShifted([]float64{1, 1, 4, 1}, 0.25); k != 2 {
		t.Errorf("FactorShifted of a singular W = %d, want 2", k)
	}
}

func TestSparseLUFloat32(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(rt, "n")
		p := randomPattern(rt, n, 0.2)
		vals := randomValues(rt, p, 1)
		c := rapid.Float64Range(0.1, 2).Draw(rt, "c")
		a := denseOf(p, vals, -c, 1)
		var lu mat.LU
		lu.Factorize(a)
		if lu.Cond() > 1e3 {
			rt.Skip("ill-conditioned")
		}
		s, err := linalg.NewSparseLU[float32](p)
		if err != nil {
			rt.Fatal(err)
		}
		v32 := make([]float32, len(vals))
		for i, v := range vals {
			v32[i] = float32(v)
		}
		if k := s.FactorShifted(v32, float32(c)); k >= 0 {
			rt.Fatalf("FactorShifted = %d", k)
		}
		b := make([]float64, n)
		for i := range b {
			b[i] = float64(i%7) - 3
		}
		want := mat.NewVecDense(n, nil)
		_ = lu.SolveVecTo(want, false, mat.NewVecDense(n, append([]float64(nil), b...)))
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(b[i])
		}
		s.Solve(x)
		for i := range x {
			if d := math.Abs(float64(x[i]) - want.AtVec(i)); d > 1e-3*(1+math.Abs(want.AtVec(i))) {
				rt.Fatalf("x[%d] = %g, want %g", i, x[i], want.AtVec(i))
			}
		}
	})
}

func TestAMDPermutation(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 300).Draw(rt, "n")
		var e []linalg.Entry
		m := rapid.IntRange(0, 4*n).Draw(rt, "m")
		for t := 0; t < m; t++ {
			e = append(e, linalg.Entry{Row: rapid.IntRange(0, n-1).Draw(rt, "i"), Col: rapid.IntRange(0, n-1).Draw(rt, "j")})
		}
		// Sometimes a dense row and column.
		if n > 20 && rapid.Bool().Draw(rt, "dense") {
			d := rapid.IntRange(0, n-1).Draw(rt, "d")
			for j := 0; j < n; j++ {
				e = append(e, linalg.Entry{Row: d, Col: j}, linalg.Entry{Row: j, Col: d})
			}
		}
		p, err := linalg.NewPattern(n, n, e)
		if err != nil {
			rt.Fatal(err)
		}
		perm, err := linalg.AMD(p)
		if err != nil {
			rt.Fatal(err)
		}
		if len(perm) != n {
			rt.Fatalf("len(perm) = %d, want %d", len(perm), n)
		}
		seen := make([]bool, n)
		for _, i := range perm {
			if i < 0 || i >= n || seen[i] {
				rt.Fatalf("perm %v is not a permutation", perm)
			}
			seen[i] = true
		}
	})
}

func TestAMDErrors(t *testing.T) {
	p, _ := linalg.NewPattern(2, 3, nil)
	if _, err := linalg.AMD(p); err == nil {
		t.Error("AMD of a 2×3 pattern: no error")
	}
	if _, err := linalg.NewSparseLU[float64](p); err == nil {
		t.Error("NewSparseLU of a 2×3 pattern: no error")
	}
}

// On a 2-D grid, minimum degree must beat the natural order by far.
func TestAMDFillOnGrid(t *testing.T) {
	p := brusselatorPattern(32)
	s, err := linalg.NewSparseLU[float64](p)
	if err != nil {
		t.Fatal(err)
	}
	vals := brusselatorValues(p, 32)
	if k := s.FactorShifted(vals, 1e-3); k >= 0 {
		t.Fatalf("FactorShifted = %d", k)
	}
	st := s.Stats()
	// Natural order fills the band of width 2·N² below and above.
	if band := 2 * 32 * 32 * 2 * 32 * 32; st.NNZL+st.NNZU > band/8 {
		t.Errorf("nnz(L+U) = %d on the 32×32 Brusselator, want far below the band's %d", st.NNZL+st.NNZU, band)
	}
}

func TestSparseLUAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	p := brusselatorPattern(8)
	vals := brusselatorValues(p, 8)
	s, err := linalg.NewSparseLU[float64](p)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float64, p.Rows)
	s.FactorShifted(vals, 0.01)
	allocs := testing.AllocsPerRun(10, func() {
		if k := s.FactorShifted(vals, 0.01); k >= 0 {
			t.Fatalf("FactorShifted = %d", k)
		}
		s.Solve(x)
		s.SolveTranspose(x)
	})
	if allocs != 0 {
		t.Errorf("FactorShifted+Solve+SolveTranspose allocate %v times, want 0", allocs)
	}
}

// Refactorisations on the Brusselator, whose factors have wide supernodes,
// agree with dense solves as c changes.
func TestSparseLURefactorBrusselator(t *testing.T) {
	const N = 8
	p := brusselatorPattern(N)
	vals := brusselatorValues(p, N)
	s, err := linalg.NewSparseLU[float64](p)
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		c := rapid.Float64Range(1e-5, 1e-1).Draw(rt, "c")
		if k := s.FactorShifted(vals, c); k >= 0 {
			rt.Fatalf("FactorShifted = %d", k)
		}
		checkSolves(rt, s, denseOf(p, vals, -c, 1))
	})
	if st := s.Stats(); st.Refactor == 0 {
		t.Errorf("stats %+v, want refactorisations", st)
	}
}

// A clone factors and solves as the original does, independently.
func TestSparseLUClone(t *testing.T) {
	const N = 6
	p := brusselatorPattern(N)
	vals := brusselatorValues(p, N)
	s, err := linalg.NewSparseLU[float64](p)
	if err != nil {
		t.Fatal(err)
	}
	c0 := s.Clone()
	s.FactorShifted(vals, 1e-3)
	c1 := s.Clone()
	for i, c := range []*linalg.SparseLU[float64]{c0, c1} {
		c.FactorShifted(vals, 1e-3)
		x, y := make([]float64, p.Rows), make([]float64, p.Rows)
		for j := range x {
			x[j], y[j] = float64(j%5), float64(j%5)
		}
		s.Solve(x)
		c.Solve(y)
		for j := range x {
			if x[j] != y[j] {
				t.Fatalf("clone %d: x[%d] = %g, want the original's %g", i, j, y[j], x[j])
			}
		}
	}
	// Factoring the clone leaves the original's factors alone.
	c1.FactorShifted(vals, 1e-1)
	x := make([]float64, p.Rows)
	x[3] = 1
	s.Solve(x)
	w := denseOf(p, vals, -1e-3, 1)
	var r mat.VecDense
	r.MulVec(w, mat.NewVecDense(p.Rows, x))
	for j := 0; j < p.Rows; j++ {
		want := 0.0
		if j == 3 {
			want = 1
		}
		if math.Abs(r.AtVec(j)-want) > 1e-12 {
			t.Fatalf("after the clone's factorisation, the original's residual at %d is %g", j, r.AtVec(j)-want)
		}
	}
}
