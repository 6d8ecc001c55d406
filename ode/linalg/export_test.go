package linalg

// NewSparseLUOrdered exports newSparseLUOrdered to the tests, which
// compare AMD's fill with other orderings.
func NewSparseLUOrdered[T Float](p *Pattern, perm []int) *SparseLU[T] {
	return newSparseLUOrdered[T](p, perm)
}
