package freelist

import (
	"runtime"
	"sync/atomic"
)

// List is a free list of *T. The zero List is empty and ready to use; Get
// makes a new zero T when it is empty.
type List[T any] struct {
	// busy is a spin lock. A sync.Mutex that two goroutines contend for
	// parks one of them on a semaphore. Parking takes a runtime sudog,
	// which the runtime now and then allocates, so a kernel that split its
	// work over goroutines allocated in some steps. The critical sections
	// are a few instructions, so yielding until the lock is free costs
	// nothing measurable.
	busy  atomic.Bool
	items []*T
}

func (l *List[T]) lock() {
	for !l.busy.CompareAndSwap(false, true) {
		runtime.Gosched()
	}
}

func (l *List[T]) unlock() { l.busy.Store(false) }

// Get returns an item from the list, or a new zero T.
func (l *List[T]) Get() *T {
	l.lock()
	var x *T
	if n := len(l.items); n > 0 {
		x = l.items[n-1]
		l.items[n-1] = nil
		l.items = l.items[:n-1]
	}
	l.unlock()
	if x == nil {
		x = new(T)
	}
	return x
}

// Put returns x to the list for a later Get.
func (l *List[T]) Put(x *T) {
	l.lock()
	l.items = append(l.items, x)
	l.unlock()
}

// Slices is a free list of slices of E handed out at a requested length.
// The zero Slices is empty and ready to use.
type Slices[E any] struct{ l List[[]E] }

// Get returns a slice of length n from the list: the shortest one whose
// capacity holds n, else the longest, reallocated to n. Its contents are
// whatever its last user left, so callers overwrite or clear what they
// read.
//
// It searches rather than taking the top item because one list serves
// several sizes. Say two goroutines put back a short and a long buffer in
// turn. Taking the top item would hand the long request the short buffer
// at every step, and reallocate it every time.
func (s *Slices[E]) Get(n int) *[]E {
	l := &s.l
	l.lock()
	best := -1
	for i, it := range l.items {
		c, fits := cap(*it), cap(*it) >= n
		switch {
		case best < 0:
			best = i
		case fits && (cap(*l.items[best]) < n || c < cap(*l.items[best])):
			best = i
		case !fits && cap(*l.items[best]) < n && c > cap(*l.items[best]):
			best = i
		}
	}
	var p *[]E
	if best >= 0 {
		last := len(l.items) - 1
		p = l.items[best]
		l.items[best] = l.items[last]
		l.items[last] = nil
		l.items = l.items[:last]
	}
	l.unlock()
	if p == nil {
		p = new([]E)
	}
	if cap(*p) < n {
		*p = make([]E, n)
	}
	*p = (*p)[:n]
	return p
}

// Put returns p to the list for a later Get.
func (s *Slices[E]) Put(p *[]E) { s.l.Put(p) }
