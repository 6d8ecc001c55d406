package main

import (
	"fmt"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/ode/linalg"
	"github.com/flatkit/flatkit/ode/odead"
)

// adBruss is the 2-D Brusselator's right-hand side written with ad ops,
// from which odead finds the Jacobian's sparsity pattern: the periodic
// Laplacian by gathering each state's four neighbours, the reactions by
// slices of u and v.
type adBruss struct {
	n      int
	nbr    [4][]int // for each state, a neighbour of the same species
	force  []float32
	shape  []int
	alpha  float32
	forced bool
}

func newADBruss(n int) *adBruss {
	a := &adBruss{n: n, shape: []int{n * n}, alpha: float32(10 * float64(n-1) * float64(n-1)), force: make([]float32, n*n)}
	for d := range a.nbr {
		a.nbr[d] = make([]int, 2*n*n)
	}
	at := func(i, j, k int) int { return (i+n)%n + (j+n)%n*n + k*n*n }
	for k := range 2 {
		for j := range n {
			for i := range n {
				s := at(i, j, k)
				a.nbr[0][s], a.nbr[1][s], a.nbr[2][s], a.nbr[3][s] = at(i-1, j, k), at(i+1, j, k), at(i, j-1, k), at(i, j+1, k)
				x, y := float64(i)/float64(n-1), float64(j)/float64(n-1)
				if k == 0 && (x-0.3)*(x-0.3)+(y-0.6)*(y-0.6) <= 0.01 {
					a.force[s] = 5
				}
			}
		}
	}
	return a
}

// f is u' = α∇²u + B + u²v − (A+1)u + forcing, v' = α∇²v + Au − u²v.
func (a *adBruss) f(u, _ ad.Var, t float64) ad.Var {
	nn := a.n * a.n
	nb := func(d int) ad.Var { return ad.Gather(u, a.nbr[d], 2*nn) }
	lap := ad.Scale(ad.Sub(ad.Add(ad.Add(nb(0), nb(1)), ad.Add(nb(2), nb(3))), ad.Scale(u, 4)), float64(a.alpha))
	U, V := ad.Slice(u, 0, nn), ad.Slice(u, nn, 2*nn)
	u2v := ad.Mul(ad.Square(U), V)
	du := ad.Sub(ad.Add(u2v, u.Tape().Scalar(1)), ad.Scale(U, 4.4))
	if t >= 1.1 {
		du = ad.Add(du, u.Tape().Const(flat.Tensor{Shape: a.shape, Data: a.force}))
	}
	dv := ad.Sub(ad.Scale(U, 3.4), u2v)
	return ad.Add(lap, ad.Concat(0, du, dv))
}

// detectPattern finds the Jacobian's pattern from a recording of the ad
// right-hand side at u0 and checks that it is the one the hand-written
// Jacobian fills, want: the entries are then in the same CSR order.
func detectPattern(n int, u0 []float64, want *linalg.Pattern) (*linalg.Pattern, error) {
	u := make([]float32, len(u0))
	for i, v := range u0 {
		u[i] = float32(v)
	}
	p, err := odead.Sparsity(newADBruss(n).f, u, nil, 2)
	if err != nil {
		return nil, err
	}
	if p.NNZ() != want.NNZ() {
		return nil, fmt.Errorf("the detected pattern has %d entries, the Jacobian %d", p.NNZ(), want.NNZ())
	}
	for i := range p.Rows {
		for _, j := range p.Row(i) {
			if !want.Has(i, j) {
				return nil, fmt.Errorf("the detected pattern has entry (%d, %d), which the Jacobian lacks", i, j)
			}
		}
	}
	return p, nil
}
