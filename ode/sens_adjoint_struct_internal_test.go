package ode

import (
	"testing"

	"github.com/flatkit/flatkit/ode/linalg"
	"pgregory.net/rapid"
)

// storageToDense expands J in the storage of structure s into n×n.
func storageToDense(s Structure, n int, vals []float64) []float64 {
	D := make([]float64, n*n)
	switch s := s.(type) {
	case BandJacobian:
		linalg.BandToDense(D, n, s.Lower, s.Upper, vals)
	case SparseJacobian:
		for i := 0; i < n; i++ {
			for k := s.Pattern.RowPtr[i]; k < s.Pattern.RowPtr[i+1]; k++ {
				D[i*n+s.Pattern.ColIdx[k]] = vals[k]
			}
		}
	default:
		copy(D, vals)
	}
	return D
}

// TestAdjointJacTransposes: for random band (lower and upper bandwidths
// apart), sparse and dense Jacobians, adjointJac writes −Jᵀ in the
// transposed structure's storage, with the band's corners 0.
func TestAdjointJacTransposes(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		kind := rapid.IntRange(0, 2).Draw(rt, "kind")
		r := drawLinsysRandom(rt, kind == 0)
		n := r.n
		var s Structure = SparseJacobian{Pattern: r.pat}
		var vals []float64 // J in s's storage
		switch kind {
		case 0:
			lo, up := r.pat.Bandwidths()
			// drawLinsysRandom's band pattern has the drawn bandwidths
			// unless n is small; take the declared ones from the pattern
			// and store into them.
			b := BandJacobian{Lower: lo, Upper: up}
			s = b
			vals = make([]float64, linalg.BandLen(n, lo, up))
			for i := 0; i < n; i++ {
				for k := r.pat.RowPtr[i]; k < r.pat.RowPtr[i+1]; k++ {
					vals[bandPos(i, r.pat.ColIdx[k], lo, up)] = r.a[k]
				}
			}
		case 1:
			vals = r.a
		case 2:
			s = nil
			vals = storageToDense(SparseJacobian{Pattern: r.pat}, n, r.a)
		}
		prob := Problem[float64]{U0: make([]float64, n), JacStructure: s,
			Jac: func(J, _ []float64, _ []float32, _ float64) { copy(J, vals) }}
		st, perm := transposeStructure(s, n)
		aj := newAdjointJac(&prob, perm)
		size := n * n
		switch st := st.(type) {
		case BandJacobian:
			if lo, up := s.(BandJacobian).Lower, s.(BandJacobian).Upper; st.Lower != up || st.Upper != lo {
				rt.Fatalf("transposed band %v of %v", st, s)
			}
			size = linalg.BandLen(n, st.Lower, st.Upper)
		case SparseJacobian:
			size = st.Pattern.NNZ()
		}
		JB := make([]float64, size)
		for k := range JB {
			JB[k] = 7 // stale values: every position must be written
		}
		aj.eval(JB, prob.U0, nil, 0)
		got := storageToDense(st, n, JB)
		J := storageToDense(s, n, vals)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if want := -J[j*n+i]; got[i*n+j] != want {
					rt.Fatalf("%v: (−Jᵀ)[%d][%d] = %g, want %g", s, i, j, got[i*n+j], want)
				}
			}
		}
		if b, ok := st.(BandJacobian); ok {
			w := b.Lower + b.Upper + 1
			for k, v := range JB {
				i, j := k/w, k/w+k%w-b.Lower
				if (j < 0 || j >= n) && v != 0 {
					rt.Fatalf("corner (%d, %d) of the transposed band storage is %g, want 0", i, j, v)
				}
			}
		}
	})
}

// TestTransposedMethodSwapsBandPreconditioner: the backward solve's band
// preconditioner has the bandwidths of Jᵀ.
func TestTransposedMethodSwapsBandPreconditioner(t *testing.T) {
	for _, m := range []Method{
		BDFMethod{Linear: GMRES{Precond: BandPreconditioner{Lower: 1, Upper: 3}}},
		&Rodas5PMethod{Linear: GMRES{Precond: BandPreconditioner{Lower: 1, Upper: 3}}},
		Rosenbrock23Method{Linear: GMRES{Restart: 4, Precond: BandPreconditioner{Lower: 1, Upper: 3}}},
	} {
		var ls LinearSolver
		switch v := transposedMethod(m).(type) {
		case BDFMethod:
			ls = v.Linear
		case Rodas5PMethod:
			ls = v.Linear
		case Rosenbrock23Method:
			ls = v.Linear
		}
		g, _ := ls.(GMRES)
		if p, _ := g.Precond.(BandPreconditioner); p != (BandPreconditioner{Lower: 3, Upper: 1}) {
			t.Errorf("%v: transposed preconditioner %v, want lower 3, upper 1", m, g.Precond)
		}
	}
}
