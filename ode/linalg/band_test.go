package linalg_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/internal/cputime"
	"github.com/flatkit/flatkit/internal/race"
	"github.com/flatkit/flatkit/internal/relerr"
	"github.com/flatkit/flatkit/internal/wanterr"
	"github.com/flatkit/flatkit/ode/linalg"
)

// bandCase is a random band matrix in band storage, as the property tests
// draw it.
type bandCase struct {
	n, lower, upper int
	band            []float64 // band storage, entries outside the matrix random too
}

// drawBand draws a band matrix. When dominant, each diagonal entry
// outweighs the rest of its row, so the matrix is well conditioned and
// (with shift) so is I − c·J for c ≥ 0 and J = −A. Otherwise the diagonal
// is small beside the rest, so partial pivoting must interchange rows.
func drawBand(t *rapid.T, dominant bool) bandCase {
	n := rapid.IntRange(1, 30).Draw(t, "n")
	lower := rapid.IntRange(0, n+1).Draw(t, "lower")
	upper := rapid.IntRange(0, n+1).Draw(t, "upper")
	w := lower + upper + 1
	band := rapid.SliceOfN(rapid.Float64Range(-1, 1), n*w, n*w).Draw(t, "band")
	for i := 0; i < n; i++ {
		d := &band[i*w+lower]
		if dominant {
			s := 1.0
			for j := max(0, i-lower); j <= min(n-1, i+upper); j++ {
				if j != i {
					s += math.Abs(band[i*w+j-i+lower])
				}
			}
			*d = math.Copysign(s, *d)
		} else {
			*d *= 0.01
		}
	}
	return bandCase{n, lower, upper, band}
}

func (c bandCase) dense() []float64 {
	d := make([]float64, c.n*c.n)
	linalg.BandToDense(d, c.n, c.lower, c.upper, c.band)
	return d
}

// bandCheckSolves checks Solve and SolveTranspose of lu, which holds the
// factors of the dense n×n matrix w, against gonum's dense solves: the
// residual always, and the solution to 1e-10 relative when w's condition
// number is below 1e4.
func bandCheckSolves(t wanterr.TB, lu *linalg.BandLU[float64], n int, w, b []float64) {
	t.Helper()
	W := mat.NewDense(n, n, w)
	cond := mat.Cond(W, 1)
	for _, trans := range []bool{false, true} {
		x, M := bandSolve(lu, W, b, trans)
		// Backward error: ‖Mx − b‖∞ small beside ‖M‖∞·‖x‖∞.
		var r mat.VecDense
		r.MulVec(M, mat.NewVecDense(n, x))
		res := 0.0
		for i := range n {
			res = max(res, math.Abs(r.AtVec(i)-b[i]))
		}
		if bound := 1e-13 * float64(n) * mat.Norm(M, math.Inf(1)) * vecNormInf(x); res > bound {
			t.Fatalf("transpose %v: residual %g, want at most %g", trans, res, bound)
		}
		if cond > 1e4 {
			continue
		}
		var want mat.VecDense
		if err := want.SolveVec(M, mat.NewVecDense(n, b)); err != nil {
			t.Fatalf("gonum's dense solve: %v", err)
		}
		diff := 0.0
		for i := range n {
			diff = max(diff, math.Abs(x[i]-want.AtVec(i)))
		}
		if scale := vecNormInf(want.RawVector().Data); diff > 1e-10*scale {
			t.Fatalf("transpose %v (cond %.3g): x differs from the dense solve by %g, want at most 1e-10·%g", trans, cond, diff, scale)
		}
	}
}

// bandSolve returns lu's solution of W·x = b, or of Wᵀ·x = b when trans
// is set, and the matrix solved with, W or Wᵀ.
func bandSolve[T linalg.Float](lu *linalg.BandLU[T], W *mat.Dense, b []T, trans bool) ([]T, mat.Matrix) {
	x := append([]T(nil), b...)
	if trans {
		lu.SolveTranspose(x)
		return x, W.T()
	}
	lu.Solve(x)
	return x, W
}

func vecNormInf(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s = max(s, math.Abs(v))
	}
	return s
}

func TestBandLUFactorAgreesWithDense(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawBand(t, rapid.Bool().Draw(t, "dominant"))
		lu := linalg.NewBandLU[float64](c.n, c.lower, c.upper)
		if k := lu.Factor(c.band); k >= 0 {
			t.Skipf("singular at column %d", k) // possible only without dominance
		}
		bandCheckSolves(t, lu, c.n, c.dense(), rapid.SliceOfN(rapid.Float64Range(-1, 1), c.n, c.n).Draw(t, "b"))
	})
}

func TestBandLUFactorShiftedAgreesWithDense(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dominant := rapid.Bool().Draw(t, "dominant")
		c := drawBand(t, dominant)
		// J = −A/h, so that I − h·J = I + A.
		h := rapid.Float64Range(0.01, 10).Draw(t, "h")
		J := make([]float64, len(c.band))
		for i, v := range c.band {
			J[i] = -v / h
		}
		if dominant {
			// Keep I + A dominant: the diagonal's sign positive.
			w := c.lower + c.upper + 1
			for i := 0; i < c.n; i++ {
				J[i*w+c.lower] = -math.Abs(J[i*w+c.lower])
			}
		}
		lu := linalg.NewBandLU[float64](c.n, c.lower, c.upper)
		if k := lu.FactorShifted(J, h); k >= 0 {
			t.Skipf("singular at column %d", k)
		}
		w := make([]float64, c.n*c.n)
		linalg.BandToDense(w, c.n, c.lower, c.upper, J)
		for i := range w {
			w[i] *= -h
		}
		for i := 0; i < c.n; i++ {
			w[i*c.n+i]++
		}
		bandCheckSolves(t, lu, c.n, w, rapid.SliceOfN(rapid.Float64Range(-1, 1), c.n, c.n).Draw(t, "b"))
	})
}

func TestBandLUFloat32(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawBand(t, true)
		a32 := make([]float32, len(c.band))
		for i, v := range c.band {
			a32[i] = float32(v)
		}
		lu := linalg.NewBandLU[float32](c.n, c.lower, c.upper)
		if k := lu.Factor(a32); k >= 0 {
			t.Fatalf("Factor of a dominant matrix: singular at column %d", k)
		}
		// The reference is the float64 solve of the float32 matrix.
		w := make([]float64, c.n*c.n)
		linalg.BandToDense(w, c.n, c.lower, c.upper, c.band)
		for i := range w {
			w[i] = float64(float32(w[i]))
		}
		W := mat.NewDense(c.n, c.n, w)
		b := rapid.SliceOfN(rapid.Float32Range(-1, 1), c.n, c.n).Draw(t, "b")
		b64 := make([]float64, c.n)
		for i, v := range b {
			b64[i] = float64(v)
		}
		for _, trans := range []bool{false, true} {
			x, M := bandSolve(lu, W, b, trans)
			var want mat.VecDense
			if err := want.SolveVec(M, mat.NewVecDense(c.n, b64)); err != nil {
				t.Fatal(err)
			}
			if err := relerr.Check(fmt.Sprintf("x (transpose %v)", trans), x, want.RawVector().Data, 1e-5); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// Larger systems than the property tests draw, past the chunks in which
// the factorisation loads its rows, with and without interchanges.
func TestBandLULarge(t *testing.T) {
	for _, n := range []int{63, 64, 65, 130, 300} {
		for _, bw := range [][2]int{{2, 2}, {10, 3}, {0, 5}, {5, 0}} {
			for _, pivoting := range []bool{false, true} {
				l, u := bw[0], bw[1]
				J := bandBrusselatorLike(n, l, u, uint64(n), pivoting)
				lu := linalg.NewBandLU[float64](n, l, u)
				const c = 0.3
				if k := lu.FactorShifted(J, c); k >= 0 {
					t.Fatalf("n=%d bandwidths %v: FactorShifted = %d, want -1", n, bw, k)
				}
				w := make([]float64, n*n)
				linalg.BandToDense(w, n, l, u, J)
				for i := range w {
					w[i] *= -c
				}
				for i := range n {
					w[i*n+i]++
				}
				b := make([]float64, n)
				for i := range b {
					b[i] = math.Sin(float64(i))
				}
				bandCheckSolves(t, lu, n, w, b)
			}
		}
	}
}

// A regular matrix whose diagonal is zero cannot be factored without
// interchanges: this one needs one at steps 0 and 1, and the second fills
// U's row 0 out to lower+upper.
func TestBandLUPivots(t *testing.T) {
	// [0 2 0]
	// [1 0 3]
	// [0 4 5]
	band := []float64{
		0, 0, 2, // the first entry is outside the matrix
		1, 0, 3,
		4, 5, 99, // so is the last
	}
	lu := linalg.NewBandLU[float64](3, 1, 1)
	if k := lu.Factor(band); k != -1 {
		t.Fatalf("Factor = %d, want -1", k)
	}
	x := []float64{4, 10, 23} // A·(1, 2, 3)
	lu.Solve(x)
	if want := []float64{1, 2, 3}; !closeTo(x, want, 1e-15) {
		t.Errorf("Solve = %v, want %v", x, want)
	}
	x = []float64{2, 14, 21} // Aᵀ·(1, 2, 3)
	lu.SolveTranspose(x)
	if want := []float64{1, 2, 3}; !closeTo(x, want, 1e-15) {
		t.Errorf("SolveTranspose = %v, want %v", x, want)
	}
}

// The Laplacian tridiag(−1, 2, −1) solved for the all-ones solution, and
// with a shift: I − c·J for J = tridiag(1, −2, 1) and c = 1 is
// tridiag(−1, 3, −1).
func TestBandLUKnownCases(t *testing.T) {
	const n = 5
	lap := make([]float64, 3*n)
	J := make([]float64, 3*n)
	for i := 0; i < n; i++ {
		copy(lap[3*i:], []float64{-1, 2, -1})
		copy(J[3*i:], []float64{1, -2, 1})
	}
	lu := linalg.NewBandLU[float64](n, 1, 1)
	if k := lu.Factor(lap); k != -1 {
		t.Fatalf("Factor = %d, want -1", k)
	}
	x := []float64{1, 0, 0, 0, 1}
	lu.Solve(x)
	if want := []float64{1, 1, 1, 1, 1}; !closeTo(x, want, 1e-15) {
		t.Errorf("Laplacian: Solve = %v, want %v", x, want)
	}
	if k := lu.FactorShifted(J, 1); k != -1 {
		t.Fatalf("FactorShifted = %d, want -1", k)
	}
	x = []float64{2, 1, 1, 1, 2}
	lu.Solve(x)
	if want := []float64{1, 1, 1, 1, 1}; !closeTo(x, want, 1e-15) {
		t.Errorf("shifted: Solve = %v, want %v", x, want)
	}
	// A diagonal matrix with bandwidths 0 and a 1×1 one.
	d := linalg.NewBandLU[float32](3, 0, 0)
	if k := d.Factor([]float32{2, 4, 8}); k != -1 {
		t.Fatalf("diagonal: Factor = %d, want -1", k)
	}
	x32 := []float32{1, 1, 1}
	d.SolveTranspose(x32)
	if x32[0] != 0.5 || x32[1] != 0.25 || x32[2] != 0.125 {
		t.Errorf("diagonal: SolveTranspose = %v, want [0.5 0.25 0.125]", x32)
	}
	one := linalg.NewBandLU[float64](1, 2, 3)
	if k := one.FactorShifted([]float64{9, 9, 0.5, 9, 9, 9}, 1); k != -1 {
		t.Fatalf("1×1: FactorShifted = %d, want -1", k)
	}
	x = []float64{3}
	one.Solve(x)
	if x[0] != 6 {
		t.Errorf("1×1: Solve = %v, want [6]", x)
	}
}

func closeTo(x, want []float64, tol float64) bool {
	for i := range x {
		if math.Abs(x[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			return false
		}
	}
	return len(x) == len(want)
}

// A zero column k makes the matrix singular, and the factorisation
// reports k: the leading columns of a dominant matrix still factor.
func TestBandLUSingularColumn(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawBand(t, true)
		k := rapid.IntRange(0, c.n-1).Draw(t, "k")
		w := c.lower + c.upper + 1
		for i := max(0, k-c.upper); i <= min(c.n-1, k+c.lower); i++ {
			c.band[i*w+k-i+c.lower] = 0
		}
		lu := linalg.NewBandLU[float64](c.n, c.lower, c.upper)
		if got := lu.Factor(c.band); got != k {
			t.Fatalf("Factor = %d, want %d", got, k)
		}
		// The same matrix as I − J, for J = I − A.
		J := make([]float64, len(c.band))
		for i, v := range c.band {
			J[i] = -v
		}
		for i := 0; i < c.n; i++ {
			J[i*w+c.lower]++
		}
		if got := lu.FactorShifted(J, 1); got != k {
			t.Fatalf("FactorShifted = %d, want %d", got, k)
		}
	})
}

// Singular to rounding: the last row is the middle one times 1/3,
// rounded. A zero column, a pivot of rounding noise and a NaN pivot are
// reported at their column.
func TestBandLUNearlySingular(t *testing.T) {
	third := 1.0 / 3
	lu := linalg.NewBandLU[float64](3, 1, 1)
	band := []float64{
		0, 1, 0,
		0, 3, 1,
		third * 3, third, 0,
	}
	if k := lu.Factor(band); k != 2 {
		t.Errorf("Factor of a matrix singular to rounding = %d, want 2", k)
	}
	// Column 1 of I − 2·J vanishes: J_11 = 1/2, J_01 = J_21 = 0.
	J := []float64{0, 0, 0, 0, 0.5, 0.1, 0, 0, 0}
	if k := lu.FactorShifted(J, 2); k != 1 {
		t.Errorf("FactorShifted with a zero column 1 = %d, want 1", k)
	}
	// A pivot of rounding noise: 1 − c·J_11 with c·J_11 = 1+ε is −ε,
	// below 4ε·max(1, max_j |c·J_1j|).
	J = []float64{0, 0, 0, 0, 1 + 0x1p-52, 0.5, 0, 0, 0}
	if k := lu.FactorShifted(J, 1); k != 1 {
		t.Errorf("FactorShifted with a pivot of rounding noise = %d, want 1", k)
	}
	J = []float64{0, 0, 0, 0, 0, 0, 0, math.NaN(), 0}
	if k := lu.FactorShifted(J, 1); k != 2 {
		t.Errorf("FactorShifted with a NaN pivot in column 2 = %d, want 2", k)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Solve after a failed factorisation did not panic")
		}
	}()
	lu.Solve(make([]float64, 3))
}

func TestBandDenseRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawBand(t, false)
		d := c.dense()
		back := make([]float64, len(c.band))
		linalg.BandFromDense(back, c.n, c.lower, c.upper, d)
		w := c.lower + c.upper + 1
		for i := 0; i < c.n; i++ {
			for j := i - c.lower; j <= i+c.upper; j++ {
				want := 0.0
				if j >= 0 && j < c.n {
					want = c.band[i*w+j-i+c.lower]
				}
				if got := back[i*w+j-i+c.lower]; got != want {
					t.Fatalf("entry (%d, %d) = %g, want %g", i, j, got, want)
				}
			}
		}
		for i := 0; i < c.n; i++ {
			for j := 0; j < c.n; j++ {
				if (j < i-c.lower || j > i+c.upper) && d[i*c.n+j] != 0 {
					t.Fatalf("dense entry (%d, %d) outside the band = %g, want 0", i, j, d[i*c.n+j])
				}
			}
		}
	})
}

// bandBrusselatorLike is a band J of the shape of a discretised
// reaction-diffusion system: a negative diagonal that dominates and random
// couplings within the band. With pivoting, every seventh row has a small
// diagonal, so that some steps interchange rows.
func bandBrusselatorLike(n, lower, upper int, seed uint64, pivoting bool) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	w := lower + upper + 1
	J := make([]float64, n*w)
	for i := range J {
		J[i] = rng.Float64()*2 - 1
	}
	for i := 0; i < n; i++ {
		J[i*w+lower] = -float64(w) - rng.Float64()
		if pivoting && i%7 == 3 {
			J[i*w+lower] = 0.01
		}
	}
	return J
}

func TestBandLUAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation counts differ under the race detector")
	}
	const n, l, u = 200, 2, 3
	J := bandBrusselatorLike(n, l, u, 1, true)
	lu := linalg.NewBandLU[float64](n, l, u)
	x := make([]float64, n)
	allocs := testing.AllocsPerRun(10, func() {
		if k := lu.FactorShifted(J, 0.5); k >= 0 {
			t.Fatalf("FactorShifted = %d", k)
		}
		lu.Solve(x)
		lu.SolveTranspose(x)
		lu.Factor(J)
	})
	if allocs != 0 {
		t.Errorf("FactorShifted, Solve, SolveTranspose and Factor allocate %v times, want 0", allocs)
	}
}

// BenchmarkBandLU times FactorShifted, Solve and SolveTranspose on the
// band J of bandBrusselatorLike, whose I − c·J needs no interchanges, and
// FactorShifted on one that does.
func BenchmarkBandLU(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		for _, bw := range []int{2, 10} {
			lu := linalg.NewBandLU[float64](n, bw, bw)
			x := make([]float64, n)
			ones := make([]float64, n)
			for i := range ones {
				ones[i] = 1
			}
			for _, pivoting := range []bool{false, true} {
				J := bandBrusselatorLike(n, bw, bw, 2, pivoting)
				name := "factor"
				if pivoting {
					name = "factor-pivoting"
				}
				b.Run(fmt.Sprintf("n=%d/bw=%d/%s", n, bw, name), func(b *testing.B) {
					cputime.Loop(b, func() { lu.FactorShifted(J, 0.1) })
				})
			}
			J := bandBrusselatorLike(n, bw, bw, 2, false)
			lu.FactorShifted(J, 0.1)
			b.Run(fmt.Sprintf("n=%d/bw=%d/solve", n, bw), func(b *testing.B) {
				cputime.Loop(b, func() {
					copy(x, ones) // repeated solves would reach subnormals
					lu.Solve(x)
				})
			})
			b.Run(fmt.Sprintf("n=%d/bw=%d/solveT", n, bw), func(b *testing.B) {
				cputime.Loop(b, func() {
					copy(x, ones)
					lu.SolveTranspose(x)
				})
			})
		}
	}
}
