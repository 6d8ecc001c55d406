package freelist

// Jobs is a free list of parallel jobs. A job holds the operands of one
// call, shared by the goroutines that compute it. Its Part method is bound
// once, when the job is made, because a method value made per call would
// allocate. The zero Jobs is empty and ready to use.
type Jobs[J any, P interface {
	*J
	Part(lo, hi int)
}] struct{ l List[Bound[J]] }

// Bound is a job and its Part method, bound once.
type Bound[J any] struct {
	Job J
	Run func(lo, hi int) // Job.Part
}

// Get returns a job of the list, for the caller to fill.
func (l *Jobs[J, P]) Get() *Bound[J] {
	b := l.l.Get()
	if b.Run == nil {
		b.Run = P(&b.Job).Part
	}
	return b
}

// Put clears b's job, so that the list holds no operands, and returns b to
// the list.
func (l *Jobs[J, P]) Put(b *Bound[J]) {
	var zero J
	b.Job = zero
	l.l.Put(b)
}
