// Package freelist is a stack of reusable scratch values shared by
// goroutines. Unlike a sync.Pool it is never emptied by the garbage
// collector and never allocates to move an item between processors, so a
// loop that takes and returns the same few items allocates nothing once
// warm; it holds at most as many items as were ever out at the same time.
//
// It is a leaf utility: it imports nothing of flatkit's, and every package
// of the module (flat, model, ode, the internal kernels) may use it for
// the scratch its hot paths need instead of a sync.Pool or a getter of its
// own. List holds any *T; Slices adds the sized get of a []E that most
// scratch buffers want; Jobs keeps the jobs a kernel splits over goroutines,
// each with its Part method bound once.
package freelist
