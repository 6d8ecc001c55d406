package odead_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// A right-hand side written with ad ops gets its exact Jacobian from
// automatic differentiation (float32 state).
func ExampleProblem() {
	robertson := func(u, _ ad.Var, _ float64) ad.Var {
		y1, y2, y3 := ad.Slice(u, 0, 1), ad.Slice(u, 1, 2), ad.Slice(u, 2, 3)
		r1, r2, r3 := ad.Scale(y1, 0.04), ad.Scale(ad.Mul(y2, y3), 1e4), ad.Scale(ad.Square(y2), 3e7)
		return ad.Concat(0, ad.Sub(r2, r1), ad.Sub(ad.Sub(r1, r2), r3), r3)
	}
	prob, err := odead.Problem(robertson, []float32{1, 0, 0}, 0, 1e5, nil)
	if err != nil {
		panic(err)
	}
	sol, err := ode.Solve(context.Background(), prob, ode.Rodas5P(), ode.Tol(1e-4, 1e-8))
	if err != nil {
		panic(err)
	}
	fmt.Printf("y1(1e5) = %.4f\n", sol.U[1][0])
	// Output:
	// y1(1e5) = 0.0179
}

// A right-hand side that fails on its tape: the solve ends with Failed,
// and the tape's error is the cause.
func ExampleFunc_error() {
	errDomain := errors.New("u left the domain")
	f := func(u, _ ad.Var, t float64) ad.Var {
		if t > 1 {
			return u.Tape().Fail(errDomain)
		}
		return ad.Neg(u)
	}
	prob := odead.Func(f, 1)
	prob.U0, prob.T1 = []float32{1}, 2
	_, err := ode.Solve(context.Background(), prob, ode.Tsit5())
	var oe *ode.Error
	if errors.As(err, &oe) {
		fmt.Println(oe.Code, oe.T < 1, errors.Is(err, errDomain))
		fmt.Println(oe.Err)
	}
	// Output:
	// Failed true true
	// odead: the ad right-hand side: u left the domain
}

// The pattern of du_i = u_i·u_{i+1} from the ad recording at u = 0,
// where every derivative is 0: the pattern is structural, so both
// dependencies of each row are in it.
func ExampleSparsity() {
	f := func(u, _ ad.Var, _ float64) ad.Var {
		right := ad.Crop(ad.Pad(u, 0, 1), 1, 0) // u_{i+1}, 0 past the end
		return ad.Mul(u, right)
	}
	pat, err := odead.Sparsity(f, make([]float32, 4), nil, 0)
	if err != nil {
		panic(err)
	}
	for i := range pat.Rows {
		fmt.Println(i, pat.Row(i))
	}
	lower, upper := pat.Bandwidths()
	fmt.Println("bandwidths", lower, upper)
	// Output:
	// 0 [0 1]
	// 1 [1 2]
	// 2 [2 3]
	// 3 [3]
	// bandwidths 0 1
}
