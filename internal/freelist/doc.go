// Package freelist is a stack of reusable scratch values shared by
// goroutines. Unlike a sync.Pool, the garbage collector never empties it,
// and moving an item between processors never allocates. So a loop that
// takes and returns the same few items allocates nothing once warm. A list
// holds at most as many items as were ever out at the same time.
//
// It is a leaf utility: it imports nothing of flatkit's. Every package of
// the module may use it for the scratch its hot paths need, instead of a
// sync.Pool or a getter of its own. List holds any *T. Slices adds the
// sized get of a []E that most scratch buffers want. Jobs keeps the jobs a
// kernel splits over goroutines, each with its Part method bound once.
package freelist
