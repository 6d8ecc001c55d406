package conv

// Sized scratch buffers and jobs from free lists, shared by every path.

import "github.com/flatkit/flatkit/internal/freelist"

// ints holds the tap offset lists.
var ints freelist.Slices[int]

// scratch is a free list rather than a sync.Pool: a pool allocates now and
// then when goroutines move between processors, and empties at each GC.
var scratch freelist.Slices[float32]

// jobList is a free list of one kernel's jobs (the operands of one call,
// shared by the goroutines that compute it), each with its part method
// bound once, when the job is made: a method value made per call would
// allocate.
type jobList[J any, P interface {
	*J
	part(lo, hi int)
}] struct{ l freelist.List[boundJob[J]] }

// boundJob is a job and its part method, bound once.
type boundJob[J any] struct {
	job J
	run func(lo, hi int) // job.part
}

// get returns a job of the list, for the caller to fill.
func (l *jobList[J, P]) get() *boundJob[J] {
	b := l.l.Get()
	if b.run == nil {
		b.run = P(&b.job).part
	}
	return b
}

// put clears b's job, so that the list holds no operands, and returns b to
// the list.
func (l *jobList[J, P]) put(b *boundJob[J]) {
	var zero J
	b.job = zero
	l.l.Put(b)
}
