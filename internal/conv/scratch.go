package conv

// Sized scratch buffers from free lists, shared by every path.

import "github.com/flatkit/flatkit/internal/freelist"

// ints holds the tap offset lists.
var ints freelist.Slices[int]

// scratch is a free list rather than a sync.Pool: a pool allocates now and
// then when goroutines move between processors, and empties at each GC.
var scratch freelist.Slices[float32]
