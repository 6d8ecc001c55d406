package ode

import (
	"fmt"
	"math"
)

// tableau is an explicit Runge–Kutta method as data. One generic loop (erk)
// serves every tableau; a method's file is its coefficients.
//
// Every tableau is written in first-same-as-last form, FSAL: its last main
// stage s−1 is f(t+h, u_new), with a[s−1] = b[:s−1], b[s−1] = 0 and
// c[s−1] = 1. A method that is not FSAL by design, such as RK4 or Vern7,
// gets that stage appended. When the error estimate does not use it, that
// is when bhat[s−1] == b[s−1], it is evaluated lazily. It costs nothing
// then: it is the next step's first stage.
//
// The dense output is
//
//	u(t + θh) ≈ u + h Σ_i b_i(θ) k_i,   b_i(θ) = Σ_{j=1..deg} bi[i][j−1] θ^j,
//
// over the main stages and the extra stages ce and ae. The extra stages
// are evaluated only when a step is interpolated.
type tableau struct {
	name        string
	order       int         // order of the solution
	embOrder    int         // order of the embedded solution, 0 if none
	interpOrder int         // order of the dense output
	c           []float64   // nodes of the s main stages
	a           [][]float64 // a[i] has i entries (a[0] is empty)
	b           []float64   // weights of the solution, len s
	bhat        []float64   // weights of the embedded solution, len s, or nil
	ce          []float64   // nodes of the extra (interpolation) stages
	ae          [][]float64 // ae[x] has s+x entries
	bi          [][]float64 // s+len(ce) rows of deg coefficients
}

// check verifies the structural invariants of a tableau; a failure is a bug
// in a coefficient file, so callers panic.
func (tb *tableau) check() error {
	s := len(tb.c)
	if s < 2 || len(tb.a) != s || len(tb.b) != s || (tb.bhat != nil && len(tb.bhat) != s) {
		return fmt.Errorf("%s: inconsistent stage counts", tb.name)
	}
	for i, row := range tb.a {
		if len(row) != i {
			return fmt.Errorf("%s: a[%d] has %d entries, want %d", tb.name, i, len(row), i)
		}
	}
	last := s - 1
	if tb.b[last] != 0 || tb.c[last] != 1 {
		return fmt.Errorf("%s: not in FSAL form (b[s-1] = %g, c[s-1] = %g)", tb.name, tb.b[last], tb.c[last])
	}
	for j := 0; j < last; j++ {
		if tb.a[last][j] != tb.b[j] {
			return fmt.Errorf("%s: not in FSAL form: a[s-1][%d] = %g ≠ b[%d] = %g", tb.name, j, tb.a[last][j], j, tb.b[j])
		}
	}
	if len(tb.ae) != len(tb.ce) {
		return fmt.Errorf("%s: %d extra nodes but %d extra rows", tb.name, len(tb.ce), len(tb.ae))
	}
	for x, row := range tb.ae {
		if len(row) != s+x {
			return fmt.Errorf("%s: ae[%d] has %d entries, want %d", tb.name, x, len(row), s+x)
		}
	}
	if len(tb.bi) != s+len(tb.ce) {
		return fmt.Errorf("%s: bi has %d rows, want %d", tb.name, len(tb.bi), s+len(tb.ce))
	}
	deg := len(tb.bi[0])
	for i, row := range tb.bi {
		if len(row) != deg {
			return fmt.Errorf("%s: bi[%d] has %d entries, want %d", tb.name, i, len(row), deg)
		}
	}
	// Nodes are the row sums of A (to rounding of the published digits).
	for i := 1; i < s; i++ {
		if d := math.Abs(sum(tb.a[i]) - tb.c[i]); d > 1e-14 {
			return fmt.Errorf("%s: c[%d] = %g but row sum of a is %g", tb.name, i, tb.c[i], sum(tb.a[i]))
		}
	}
	for x, row := range tb.ae {
		if d := math.Abs(sum(row) - tb.ce[x]); d > 1e-14 {
			return fmt.Errorf("%s: ce[%d] = %g but row sum of ae is %g", tb.name, x, tb.ce[x], sum(row))
		}
	}
	return nil
}

func sum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

// erkMethod is the Method of a tableau.
type erkMethod struct {
	tab *tableau
	tabMethod
}

func newERKMethod(tb *tableau, fixedOnly bool) *erkMethod {
	if err := tb.check(); err != nil {
		panic("ode: bad tableau " + err.Error())
	}
	return &erkMethod{tab: tb, tabMethod: tabMethod{tb.name, methodInfo{order: tb.order, adaptive: tb.bhat != nil, fixedOnly: fixedOnly}}}
}

// hermiteBi returns the dense-output coefficients of the cubic Hermite
// interpolant through u, u_new, k_0 = f(t, u) and k_{s−1} = f(t+h, u_new).
// An FSAL tableau always has both slopes. It is of third order and needs
// no extra stages.
func hermiteBi(b []float64) [][]float64 {
	s := len(b)
	bi := make([][]float64, s)
	for i := range bi {
		var d0, d1 float64
		if i == 0 {
			d0 = 1
		}
		if i == s-1 {
			d1 = 1
		}
		bi[i] = []float64{d0, 3*b[i] - 2*d0 - d1, d0 + d1 - 2*b[i]}
	}
	return bi
}
