package proptest

import (
	"fmt"
	"math"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/linalg"
)

// StiffODECases draws small stiff problems for the stiff methods and the
// Jacobian structures: 3 to 6 states whose terms read only their own and
// neighbouring components (a tridiagonal Jacobian, BandJacobian{1, 1}),
// plus a diffusion of rate 10 to 1000 (ODECase.Stiff), over the span and
// with the losses of ODECases. Problem64In gives a case with its Jacobian
// in a band, sparse or matrix-free structure.
func StiffODECases() *rapid.Generator[ODECase] {
	return rapid.Custom(drawStiffODECase).Filter(ODECase.bounded)
}

func drawStiffODECase(t *rapid.T) ODECase {
	n := rapid.IntRange(3, 6).Draw(t, "n")
	np := rapid.IntRange(1, 4).Draw(t, "np")
	c := ODECase{N: n, NP: np}
	drawODECaseTerms(t, &c, func(out int, label string) int {
		return min(max(out+rapid.IntRange(-1, 1).Draw(t, label), 0), n-1)
	})
	drawODECaseRest(t, &c)
	e := rapid.Float64Range(1, 3).Draw(t, "stiff")
	c.Stiff = math.Round(math.Pow(10, e))
	return c
}

// Pattern is the case's Jacobian pattern: the diagonal, the diffusion's
// neighbours when Stiff > 0, and the entries its terms read.
func (c ODECase) Pattern() *linalg.Pattern {
	var e []linalg.Entry
	for i := 0; i < c.N; i++ {
		e = append(e, linalg.Entry{Row: i, Col: i})
		if c.Stiff > 0 {
			if i > 0 {
				e = append(e, linalg.Entry{Row: i, Col: i - 1})
			}
			if i+1 < c.N {
				e = append(e, linalg.Entry{Row: i, Col: i + 1})
			}
		}
	}
	for _, r := range c.Terms {
		e = append(e, linalg.Entry{Row: r.Out, Col: r.A}, linalg.Entry{Row: r.Out, Col: r.B})
	}
	p, err := linalg.NewPattern(c.N, c.N, e)
	if err != nil {
		panic(fmt.Sprintf("proptest: %v: %v", c, err))
	}
	return p
}

// Bandwidths are the lower and upper bandwidths of the case's Jacobian.
func (c ODECase) Bandwidths() (lower, upper int) {
	p := c.Pattern()
	for i := 0; i < c.N; i++ {
		for _, j := range p.Row(i) {
			lower, upper = max(lower, i-j), max(upper, j-i)
		}
	}
	return lower, upper
}

// Problem64In is Problem64 with its Jacobian in structure s: a
// BandJacobian or a SparseJacobian (Jac writes the storage of s, which
// must hold Pattern: else Problem64In panics naming the entry), a
// MatrixFreeJacobian (no Jac), or nil or DenseJacobian (Problem64).
func (c ODECase) Problem64In(s ode.Structure) ode.Problem[float64] {
	prob := c.Problem64()
	n := c.N
	dense := prob.Jac
	var pos func(i, j int) int
	var size int
	switch s := s.(type) {
	case nil, ode.DenseJacobian:
		return prob
	case ode.MatrixFreeJacobian:
		prob.Jac, prob.JacStructure = nil, s
		return prob
	case ode.BandJacobian:
		w := s.Lower + s.Upper + 1
		size = n * w
		pos = func(i, j int) int {
			if j-i < -s.Lower || j-i > s.Upper {
				return -1
			}
			return i*w + j - i + s.Lower
		}
	case ode.SparseJacobian:
		size = s.Pattern.NNZ()
		pos = s.Pattern.Index
	default:
		panic(fmt.Sprintf("proptest: Problem64In: structure %v, want band, sparse, matrix-free or dense", s))
	}
	p := c.Pattern()
	for i := 0; i < n; i++ {
		for _, j := range p.Row(i) {
			if pos(i, j) < 0 {
				panic(fmt.Sprintf("proptest: Problem64In: %v lacks the Jacobian's entry (%d, %d) of %v", s, i, j, c))
			}
		}
	}
	buf := make([]float64, n*n)
	prob.JacStructure = s
	prob.Jac = func(J, u []float64, q []float32, t float64) {
		dense(buf, u, q, t)
		clear(J[:size])
		for i := 0; i < n; i++ {
			for _, j := range p.Row(i) {
				J[pos(i, j)] = buf[i*n+j]
			}
		}
	}
	return prob
}
