package stiffprob

// sink writes Jacobian entries (i, j, v) into a dense row-major or a band
// matrix of n rows; entries are set, not added.
type sink[T Float] struct {
	J          []T
	n          int
	band       bool
	lower, row int // band: lower bandwidth and row length Lower+Upper+1
}

func denseSink[T Float](J []T, n int) sink[T] {
	clear(J[:n*n])
	return sink[T]{J: J, n: n}
}

func bandSink[T Float](J []T, n, lower, upper int) sink[T] {
	w := lower + upper + 1
	clear(J[:n*w])
	return sink[T]{J: J, n: n, band: true, lower: lower, row: w}
}

func (s *sink[T]) set(i, j int, v T) {
	if s.band {
		s.J[i*s.row+j-i+s.lower] = v
		return
	}
	s.J[i*s.n+j] = v
}
