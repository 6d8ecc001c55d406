package linalg_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/flatkit/flatkit/ode/linalg"
)

// brusselatorPattern is the Jacobian pattern of the 2-D Brusselator of
// the SciML tutorial on an N×N periodic grid: state ix(i, j, k) =
// i + j·N + k·N², the row of species k at (i, j) depending on its four
// periodic neighbours in the same species and on both species at (i, j).
func brusselatorPattern(N int) *linalg.Pattern {
	var e []linalg.Entry
	ix := func(i, j, k int) int { return (i+N)%N + (j+N)%N*N + k*N*N }
	for k := 0; k < 2; k++ {
		for j := 0; j < N; j++ {
			for i := 0; i < N; i++ {
				r := ix(i, j, k)
				e = append(e,
					linalg.Entry{Row: r, Col: ix(i-1, j, k)}, linalg.Entry{Row: r, Col: ix(i+1, j, k)},
					linalg.Entry{Row: r, Col: ix(i, j-1, k)}, linalg.Entry{Row: r, Col: ix(i, j+1, k)},
					linalg.Entry{Row: r, Col: ix(i, j, 0)}, linalg.Entry{Row: r, Col: ix(i, j, 1)})
			}
		}
	}
	p, err := linalg.NewPattern(2*N*N, 2*N*N, e)
	if err != nil {
		panic(err)
	}
	return p
}

// brusselatorValues is the Brusselator's Jacobian at the tutorial's
// initial state, u = 22(y(1−y))^1.5, v = 27(x(1−x))^1.5, with A = 3.4,
// α = 10/Δx² and Δx = 1/(N−1), in p's order.
func brusselatorValues(p *linalg.Pattern, N int) []float64 {
	const A = 3.4
	dx := 1 / float64(N-1)
	al := 10 / (dx * dx)
	vals := make([]float64, p.NNZ())
	for r := 0; r < p.Rows; r++ {
		k, rem := r/(N*N), r%(N*N)
		i, j := rem%N, rem/N
		x, y := float64(i)*dx, float64(j)*dx
		u := 22 * math.Pow(y*(1-y), 1.5)
		v := 27 * math.Pow(x*(1-x), 1.5)
		for e := p.RowPtr[r]; e < p.RowPtr[r+1]; e++ {
			c := p.ColIdx[e]
			switch {
			case c == r && k == 0:
				vals[e] = -4*al + 2*u*v - (A + 1)
			case c == r:
				vals[e] = -4*al - u*u
			case c == rem+N*N && k == 0:
				vals[e] = u * u
			case c == rem && k == 1:
				vals[e] = A - 2*u*v
			default:
				vals[e] = al
			}
		}
	}
	return vals
}

// cpuRun runs f b.N times and reports the CPU time per run beside the
// wall time.
func cpuRun(b *testing.B, f func()) {
	c0 := cpuNanos()
	for range b.N {
		f()
	}
	if c := cpuNanos() - c0; c > 0 {
		b.ReportMetric(float64(c)/float64(b.N), "cpu-ns/op")
	}
}

// The γ·h of a BDF step on the Brusselator is around 1e-3 to 1e-2.
const benchC = 3e-3

func BenchmarkSparseLUBrusselator(b *testing.B) {
	for _, N := range []int{32, 64} {
		p := brusselatorPattern(N)
		vals := brusselatorValues(p, N)
		b.Run(fmt.Sprintf("N=%d/analyse", N), func(b *testing.B) {
			cpuRun(b, func() {
				if _, err := linalg.NewSparseLU[float64](p); err != nil {
					b.Fatal(err)
				}
			})
		})
		s, err := linalg.NewSparseLU[float64](p)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("N=%d/factor", N), func(b *testing.B) {
			cpuRun(b, func() {
				s.Reset()
				if k := s.FactorShifted(vals, benchC); k >= 0 {
					b.Fatal(k)
				}
			})
			st := s.Stats()
			b.ReportMetric(float64(st.NNZL+st.NNZU), "nnz(L+U)")
			b.ReportMetric(float64(st.Flops), "madds")
		})
		benchRefactorSolve(b, N, s, vals, true)
	}
}

// The refactorisation and the solve in float32, beside the float64 ones.
func BenchmarkSparseLUBrusselator32(b *testing.B) {
	for _, N := range []int{32, 64} {
		p := brusselatorPattern(N)
		vals := brusselatorValues(p, N)
		v32 := make([]float32, len(vals))
		for i, v := range vals {
			v32[i] = float32(v)
		}
		s, err := linalg.NewSparseLU[float32](p)
		if err != nil {
			b.Fatal(err)
		}
		benchRefactorSolve(b, N, s, v32, false)
	}
}

// benchRefactorSolve times s's refactorisation with vals and its solves
// (the transposed one too when trans is set).
func benchRefactorSolve[T linalg.Float](b *testing.B, N int, s *linalg.SparseLU[T], vals []T, trans bool) {
	if k := s.FactorShifted(vals, benchC); k >= 0 {
		b.Fatal(k)
	}
	b.Run(fmt.Sprintf("N=%d/refactor", N), func(b *testing.B) {
		cpuRun(b, func() {
			if k := s.FactorShifted(vals, benchC); k >= 0 {
				b.Fatal(k)
			}
		})
	})
	x := make([]T, 2*N*N)
	// Each solve starts from ones: repeated solves would shrink x into
	// subnormal numbers and time those.
	solves := map[string]func([]T){"solve": s.Solve}
	if trans {
		solves["solveT"] = s.SolveTranspose
	}
	for _, name := range []string{"solve", "solveT"} {
		solve, ok := solves[name]
		if !ok {
			continue
		}
		b.Run(fmt.Sprintf("N=%d/%s", N, name), func(b *testing.B) {
			cpuRun(b, func() {
				for i := range x {
					x[i] = 1
				}
				solve(x)
			})
		})
	}
}
