package conv

// Sized scratch buffers from free lists, shared by every path.

import "github.com/flatkit/flatkit/internal/freelist"

// ints holds the tap offset lists.
var ints freelist.List[[]int]

func getInts(n int) *[]int {
	p := ints.Get()
	if cap(*p) < n {
		*p = make([]int, n)
	}
	*p = (*p)[:n]
	return p
}

// scratch is a free list rather than a sync.Pool: a pool allocates now and
// then when goroutines move between processors, and empties at each GC.
var scratch freelist.List[[]float32]

func getScratch(n int) *[]float32 {
	p := scratch.Get()
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	*p = (*p)[:n]
	return p
}
