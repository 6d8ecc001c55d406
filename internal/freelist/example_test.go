package freelist_test

import (
	"fmt"
	"sync"

	"github.com/flatkit/flatkit/internal/freelist"
)

// A Get after a Put returns the same item: a loop that takes and returns
// its scratch allocates it once.
func ExampleList() {
	type scratch struct{ buf [64]float32 }
	var l freelist.List[scratch]
	a := l.Get() // a new zero scratch: the list is empty
	a.buf[0] = 7
	l.Put(a)
	b := l.Get()
	fmt.Println(a == b, b.buf[0])
	// Output:
	// true 7
}

// Get hands out the shortest slice whose capacity holds the request, so
// one list serves buffers of several sizes.
func ExampleSlices() {
	var s freelist.Slices[float64]
	short, long := s.Get(4), s.Get(1000)
	s.Put(short)
	s.Put(long)
	p := s.Get(3)
	fmt.Println(len(*p), cap(*p), p == short)
	s.Put(p)
	// Output:
	// 3 4 true
}

// double is a parallel job: the operands of one call, and the part of it
// that one goroutine computes.
type double struct{ dst, src []float64 }

func (j *double) Part(lo, hi int) {
	for i := lo; i < hi; i++ {
		j.dst[i] = 2 * j.src[i]
	}
}

// A kernel takes a job, fills its operands and runs its halves on two
// goroutines through the method bound when the job was made.
func ExampleJobs() {
	var jobs freelist.Jobs[double, *double]
	src, dst := []float64{1, 2, 3, 4}, make([]float64, 4)

	b := jobs.Get()
	b.Job = double{dst: dst, src: src}
	var wg sync.WaitGroup
	wg.Go(func() { b.Run(0, 2) })
	wg.Go(func() { b.Run(2, 4) })
	wg.Wait()
	jobs.Put(b) // clears the operands, so the list holds no slices
	fmt.Println(dst)
	// Output:
	// [2 4 6 8]
}
