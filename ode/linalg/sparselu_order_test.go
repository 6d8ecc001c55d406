package linalg_test

import (
	"testing"

	"github.com/flatkit/flatkit/ode/linalg"
)

// torusDissection is a nested dissection ordering of the Brusselator's
// N×N periodic grid, both species of a point together: the columns i = 0
// and i = N/2 cut the torus into two periodic strips, the rows j = 0 and
// j = N/2 cut each strip into rectangles, and rectangles are halved across
// their longer side, each separator ordered after the parts it separates.
func torusDissection(N int) []int {
	var perm []int
	point := func(i, j int) { perm = append(perm, i+j*N, i+j*N+N*N) }
	var rect func(i0, i1, j0, j1 int)
	rect = func(i0, i1, j0, j1 int) {
		if i1 <= i0 || j1 <= j0 {
			return
		}
		if (i1-i0)*(j1-j0) <= 4 {
			for j := j0; j < j1; j++ {
				for i := i0; i < i1; i++ {
					point(i, j)
				}
			}
			return
		}
		if i1-i0 >= j1-j0 {
			m := (i0 + i1) / 2
			rect(i0, m, j0, j1)
			rect(m+1, i1, j0, j1)
			for j := j0; j < j1; j++ {
				point(m, j)
			}
			return
		}
		m := (j0 + j1) / 2
		rect(i0, i1, j0, m)
		rect(i0, i1, m+1, j1)
		for i := i0; i < i1; i++ {
			point(i, m)
		}
	}
	strip := func(i0, i1 int) {
		rect(i0, i1, 1, N/2)
		rect(i0, i1, N/2+1, N)
		for _, j := range []int{0, N / 2} {
			for i := i0; i < i1; i++ {
				point(i, j)
			}
		}
	}
	strip(1, N/2)
	strip(N/2+1, N)
	for _, i := range []int{0, N / 2} {
		for j := 0; j < N; j++ {
			point(i, j)
		}
	}
	return perm
}

// AMD's fill and work on the Brusselator beside a nested dissection
// ordering's; the figures are logged (go test -v -run FillVersus).
func TestAMDFillVersusDissection(t *testing.T) {
	for _, N := range []int{32, 64} {
		if testing.Short() && N > 32 {
			continue
		}
		p := brusselatorPattern(N)
		vals := brusselatorValues(p, N)
		amd, err := linalg.NewSparseLU[float64](p)
		if err != nil {
			t.Fatal(err)
		}
		nd := linalg.NewSparseLUOrdered[float64](p, torusDissection(N))
		for _, s := range []*linalg.SparseLU[float64]{amd, nd} {
			if k := s.FactorShifted(vals, benchC); k >= 0 {
				t.Fatalf("N=%d: FactorShifted = %d", N, k)
			}
		}
		a, d := amd.Stats(), nd.Stats()
		t.Logf("N=%d: AMD nnz(L+U) %d, multiply-adds %d; nested dissection %d, %d", N, a.NNZL+a.NNZU, a.Flops, d.NNZL+d.NNZU, d.Flops)
		if a.NNZL+a.NNZU > 2*(d.NNZL+d.NNZU) {
			t.Errorf("N=%d: AMD's nnz(L+U) %d, want within twice nested dissection's %d", N, a.NNZL+a.NNZU, d.NNZL+d.NNZU)
		}
	}
}
