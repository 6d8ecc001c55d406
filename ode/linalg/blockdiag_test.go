package linalg_test

import (
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/internal/race"
	"github.com/flatkit/flatkit/ode/linalg"
)

// bdDense is the dense n×n matrix I − c·J of block-diagonal J.
func bdDense(J []float64, n, bs int, c float64) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for k0 := 0; k0 < n; k0 += bs {
		for i := range bs {
			for j := range bs {
				v := -c * J[k0*bs+i*bs+j]
				if i == j {
					v++
				}
				m.Set(k0+i, k0+j, v)
			}
		}
	}
	return m
}

// TestBlockLUMatchesDenseSolve factors random I − c·J, block sizes 1 to
// 8, with c large enough that the pivoting is exercised, and checks Solve
// and SolveTranspose against gonum's dense LU.
func TestBlockLUMatchesDenseSolve(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bs := rapid.IntRange(1, 8).Draw(t, "block")
		n := bs * rapid.IntRange(1, 6).Draw(t, "blocks")
		c := rapid.Float64Range(0.01, 10).Draw(t, "c")
		J := make([]float64, n*bs)
		for i := range J {
			J[i] = rapid.Float64Range(-1, 1).Draw(t, "J")
		}
		m := bdDense(J, n, bs, c)
		if cond := mat.Cond(m, 2); cond > 1e6 {
			t.Skipf("condition number %g", cond)
		}
		lu := linalg.NewBlockLU[float64](n, bs)
		if k := lu.FactorShifted(J, c); k >= 0 {
			t.Fatalf("singular at column %d, condition number %g", k, mat.Cond(m, 2))
		}
		b := make([]float64, n)
		for i := range b {
			b[i] = rapid.Float64Range(-1, 1).Draw(t, "b")
		}
		for _, trans := range []bool{false, true} {
			x := append([]float64(nil), b...)
			var want mat.VecDense
			var err error
			if trans {
				lu.SolveTranspose(x)
				err = want.SolveVec(m.T(), mat.NewVecDense(n, b))
			} else {
				lu.Solve(x)
				err = want.SolveVec(m, mat.NewVecDense(n, b))
			}
			if err != nil {
				t.Fatalf("gonum: %v", err)
			}
			if !trans {
				y := make([]float64, n)
				lu.SolveTo(y, b)
				for i := range y {
					if y[i] != x[i] {
						t.Fatalf("SolveTo: y[%d] = %g, Solve %g", i, y[i], x[i])
					}
				}
			}
			scale := mat.Norm(&want, math.Inf(1))
			for i := range x {
				if d := math.Abs(x[i] - want.AtVec(i)); d > 1e-10*scale {
					t.Fatalf("transpose %v: x[%d] = %g, dense solve %g", trans, i, x[i], want.AtVec(i))
				}
			}
		}
	})
}

// TestBlockLUFloat32 solves in float32 against the float64 factors.
func TestBlockLUFloat32(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bs := rapid.IntRange(1, 8).Draw(t, "block")
		n := bs * rapid.IntRange(1, 4).Draw(t, "blocks")
		c := rapid.Float64Range(0.01, 0.5/float64(bs)).Draw(t, "c") // diagonally dominant
		J := make([]float64, n*bs)
		J32 := make([]float32, n*bs)
		for i := range J {
			J32[i] = float32(rapid.Float64Range(-1, 1).Draw(t, "J"))
			J[i] = float64(J32[i])
		}
		lu := linalg.NewBlockLU[float64](n, bs)
		lu32 := linalg.NewBlockLU[float32](n, bs)
		if lu.FactorShifted(J, c) >= 0 || lu32.FactorShifted(J32, float32(c)) >= 0 {
			t.Fatal("singular, want a factorisation")
		}
		x := make([]float64, n)
		x32 := make([]float32, n)
		for i := range x {
			x32[i] = float32(rapid.Float64Range(-1, 1).Draw(t, "b"))
			x[i] = float64(x32[i])
		}
		lu.Solve(x)
		lu32.Solve(x32)
		for i := range x {
			if math.Abs(float64(x32[i])-x[i]) > 1e-5*(1+math.Abs(x[i])) {
				t.Fatalf("x[%d] = %g in float32, %g in float64", i, x32[i], x[i])
			}
		}
	})
}

// TestBlockLUSingularBlock reports the global column of the zero pivot:
// block 2 of four 3×3 blocks has two proportional rows, exactly and up to
// rounding, so its second pivot, column 2·3+1 = 7, is zero or noise.
func TestBlockLUSingularBlock(t *testing.T) {
	for _, c := range []float64{1, 0.1} {
		bs, n := 3, 12
		J := make([]float64, n*bs)
		for k := range 4 {
			for i := range bs {
				J[k*9+i*bs+i] = 0.5 // I − c·J = (1 − c/2)·I
			}
		}
		// I − c·J of block 2 is c·[[1 2 3] [3 6 9] [0 0 1]].
		M := []float64{1, 2, 3, 3, 6, 9, 0, 0, 1}
		for i := range bs {
			for j := range bs {
				v := -c * M[i*bs+j]
				if i == j {
					v++
				}
				J[2*9+i*bs+j] = v / c
			}
		}
		lu := linalg.NewBlockLU[float64](n, bs)
		if k := lu.FactorShifted(J, c); k != 7 {
			t.Errorf("c = %g: FactorShifted = %d, want 7", c, k)
		}
	}
}

// TestBlockLUAllocs pins the factorisation and the solves at zero
// allocations.
func TestBlockLUAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation pins skip under -race")
	}
	for _, bs := range []int{1, 2, 3} {
		n := 6 * bs
		J := make([]float64, n*bs)
		for i := range J {
			J[i] = float64(i%5) - 2
		}
		lu := linalg.NewBlockLU[float64](n, bs)
		x := make([]float64, n)
		allocs := testing.AllocsPerRun(10, func() {
			lu.FactorShifted(J, 0.1)
			lu.Solve(x)
			lu.SolveTranspose(x)
		})
		if allocs != 0 {
			t.Fatalf("block %d: %g allocations, want 0", bs, allocs)
		}
	}
}

// TestNewBlockLUPanics names the sizes that came.
func TestNewBlockLUPanics(t *testing.T) {
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "NewBlockLU(10, 3)") {
			t.Fatalf("panic %q, want one naming NewBlockLU(10, 3)", msg)
		}
	}()
	linalg.NewBlockLU[float64](10, 3)
}
