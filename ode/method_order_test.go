package ode

import (
	"fmt"
	"math"
	"testing"
)

// Order conditions by rooted trees (Butcher): a method has order p when
// b·Φ(τ) = 1/γ(τ) for every rooted tree τ with at most p nodes, where
// Φ(leaf) = 1, Φ([τ1 … τm])_i = Π_k (A Φ(τk))_i and γ([τ1 … τm]) = |τ|·Π γ(τk).
// A dense output b(θ) of order q satisfies b(θ)·Φ(τ) = θ^|τ|/γ(τ) for |τ| ≤ q.

type rootedTree struct {
	children []int // indices of the subtrees, non-increasing
	order    int
	gamma    float64
}

// treesUpTo lists every rooted tree with at most maxOrder nodes, each once.
func treesUpTo(maxOrder int) []rootedTree {
	trees := []rootedTree{{order: 1, gamma: 1}}
	for n := 2; n <= maxOrder; n++ {
		known := len(trees)
		var rec func(rem, maxID int, cur []int)
		rec = func(rem, maxID int, cur []int) {
			if rem == 0 {
				g := float64(n)
				for _, c := range cur {
					g *= trees[c].gamma
				}
				trees = append(trees, rootedTree{children: append([]int(nil), cur...), order: n, gamma: g})
				return
			}
			for id := maxID; id >= 0; id-- {
				if trees[id].order <= rem {
					rec(rem-trees[id].order, id, append(cur, id))
				}
			}
		}
		rec(n-1, known-1, nil)
	}
	return trees
}

func TestTreeCounts(t *testing.T) {
	want := []int{0, 1, 1, 2, 4, 9, 20, 48, 115} // OEIS A000081
	trees := treesUpTo(8)
	count := make([]int, 9)
	for _, tr := range trees {
		count[tr.order]++
	}
	for n := 1; n <= 8; n++ {
		if count[n] != want[n] {
			t.Errorf("trees of order %d: %d, want %d", n, count[n], want[n])
		}
	}
}

// fullA returns the lower-triangular stage matrix over main and extra stages.
func fullA(tb *tableau) [][]float64 {
	s := len(tb.c) + len(tb.ce)
	A := make([][]float64, s)
	for i := range A {
		A[i] = make([]float64, s)
		if i < len(tb.c) {
			copy(A[i], tb.a[i])
		} else {
			copy(A[i], tb.ae[i-len(tb.c)])
		}
	}
	return A
}

// elementaryWeights returns Φ(τ) for every tree, as vectors over the stages.
func elementaryWeights(A [][]float64, trees []rootedTree) [][]float64 {
	s := len(A)
	phi := make([][]float64, len(trees))
	for k, tr := range trees {
		v := make([]float64, s)
		for i := range v {
			v[i] = 1
		}
		for _, c := range tr.children {
			for i := range v {
				ac := 0.0
				for j := 0; j < s; j++ {
					ac += A[i][j] * phi[c][j]
				}
				v[i] *= ac
			}
		}
		phi[k] = v
	}
	return phi
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

var allMethods = []Method{Tsit5(), DP5(), BS3(), Vern7(), RK4()}

func TestOrderConditions(t *testing.T) {
	trees := treesUpTo(8)
	for _, m := range allMethods {
		tb := m.(*erkMethod).tab
		t.Run(tb.name, func(t *testing.T) {
			if err := tb.check(); err != nil {
				t.Fatal(err)
			}
			A := fullA(tb)
			phi := elementaryWeights(A, trees)
			s := len(A)
			pad := func(w []float64) []float64 { return append(append([]float64(nil), w...), make([]float64, s-len(w))...) }
			b := pad(tb.b)
			// residual of the worst condition of each order
			worst := func(w []float64, order int) float64 {
				r := 0.0
				for k, tr := range trees {
					if tr.order == order {
						r = max(r, math.Abs(dot(w, phi[k])-1/tr.gamma))
					}
				}
				return r
			}
			const tol = 1e-12
			for p := 1; p <= tb.order; p++ {
				if r := worst(b, p); r > tol {
					t.Errorf("solution: order-%d condition off by %g", p, r)
				}
			}
			if r := worst(b, tb.order+1); r < 1e-6 {
				t.Errorf("solution: order %d conditions hold too (residual %g): order should be %d", tb.order+1, r, tb.order+1)
			}
			if tb.bhat != nil {
				bh := pad(tb.bhat)
				for p := 1; p <= tb.embOrder; p++ {
					if r := worst(bh, p); r > tol {
						t.Errorf("embedded: order-%d condition off by %g", p, r)
					}
				}
				if r := worst(bh, tb.embOrder+1); r < 1e-6 {
					t.Errorf("embedded: order %d conditions hold too (residual %g)", tb.embOrder+1, r)
				}
			}
			// dense output b(θ) at several θ
			for _, θ := range []float64{0.1, 0.3, 0.5, 0.77, 1} {
				bθ := make([]float64, s)
				for i := range bθ {
					pw := 1.0
					for j := range tb.bi[i] {
						pw *= θ
						bθ[i] += tb.bi[i][j] * pw
					}
				}
				for k, tr := range trees {
					if tr.order > tb.interpOrder {
						continue
					}
					tol := 1e-11
					if tb.name == "Vern7" && tr.order == 7 {
						// Verner's published extra stages meet the twelve
						// 7th-order conditions of the form [τ], |τ| = 6, only
						// to ~3e-7 (every other one to 1e-12); the resulting
						// interpolation error, ~3e-7·h^7, is far below the
						// 8th-order term.
						tol = 1e-6
					}
					if r := math.Abs(dot(bθ, phi[k]) - math.Pow(θ, float64(tr.order))/tr.gamma); r > tol {
						t.Errorf("interpolant at θ=%g: order-%d condition off by %g", θ, tr.order, r)
					}
				}
				if θ == 1 {
					for i := range tb.b {
						if d := math.Abs(bθ[i] - tb.b[i]); d > 1e-13 {
							t.Errorf("interpolant at θ=1: b_%d(1) = %.17g, want b_%d = %.17g", i, bθ[i], i, tb.b[i])
						}
					}
				}
			}
		})
	}
}

func ExampleMethod_names() {
	for _, m := range []Method{Tsit5(), DP5(), BS3(), Vern7(), RK4()} {
		fmt.Print(m.Name(), " ")
	}
	// Output: Tsit5 DP5 BS3 Vern7 RK4
}
