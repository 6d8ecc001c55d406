package optimisers

import (
	"errors"

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
