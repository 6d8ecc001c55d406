package optimisers

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/optimize"
)

// ownLoop is the optimize.Method side of the methods Minimize runs in
// loops of their own (LBFGSB, NewtonCG): they are optimize.Methods only to
// be passed to Minimize. gonum's optimize.Minimize is refused through Uses,
// since it tests convergence on the full gradient and evaluates the start
// itself.
type ownLoop struct{}

// errOwnLoop is Uses' error.
var errOwnLoop = errors.New("optimisers: LBFGSB and NewtonCG run through optimisers.Minimize, not gonum's optimize.Minimize, which tests convergence on the full gradient")

// Init is part of optimize.Method; see Uses.
func (ownLoop) Init(dim, tasks int) int { return 1 }

// Run is part of optimize.Method. It ends at once: gonum never calls it,
// because Uses fails.
func (ownLoop) Run(operation chan<- optimize.Task, result <-chan optimize.Task, tasks []optimize.Task) {
	operation <- optimize.Task{Op: optimize.MethodDone}
	for range result {
	}
	close(operation)
}

// Uses returns an error: these methods run through Minimize, which does
// not ask.
func (ownLoop) Uses(optimize.Available) (optimize.Available, error) {
	return optimize.Available{}, errOwnLoop
}

// evalWidened calls fg at x rounded into x32 and widens its gradient from
// g32 into g: the evaluation of the methods that run in their own loops.
// A non-finite loss or gradient is an error naming evaluation n.
func evalWidened(fg Objective, x, g []float64, x32, g32 []float32, n int) (float64, error) {
	for i, v := range x {
		x32[i] = float32(v)
	}
	f, err := fg(x32, g32)
	if err != nil {
		return f, err
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f, errorf("the objective returned %v at evaluation %d, want a finite loss", f, n)
	}
	for i, v := range g32 {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return f, errorf("the objective's gradient is %v at index %d (evaluation %d, loss %g), want finite values", v, i, n, f)
		}
		g[i] = float64(v)
	}
	return f, nil
}
