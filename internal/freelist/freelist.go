// Package freelist is a stack of reusable scratch values shared by
// goroutines. Unlike a sync.Pool it is never emptied by the garbage
// collector and never allocates to move an item between processors, so a
// loop that takes and returns the same few items allocates nothing once
// warm; it holds at most as many items as were ever out at the same time.
package freelist

import "sync"

// List is a free list of *T. The zero List is empty and ready to use; Get
// makes a new zero T when it is empty.
type List[T any] struct {
	mu    sync.Mutex
	items []*T
}

// Get returns an item from the list, or a new zero T.
func (l *List[T]) Get() *T {
	l.mu.Lock()
	var x *T
	if n := len(l.items); n > 0 {
		x = l.items[n-1]
		l.items[n-1] = nil
		l.items = l.items[:n-1]
	}
	l.mu.Unlock()
	if x == nil {
		x = new(T)
	}
	return x
}

// Put returns x to the list for a later Get.
func (l *List[T]) Put(x *T) {
	l.mu.Lock()
	l.items = append(l.items, x)
	l.mu.Unlock()
}
