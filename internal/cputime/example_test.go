package cputime_test

import (
	"fmt"
	"runtime"

	"github.com/flatkit/flatkit/internal/cputime"
)

// Thread reads the CPU time of the calling thread, so a measurement locks
// its goroutine to one thread first, as Loop does. The figures depend on
// the machine; that the clock does not go back does not.
func ExampleThread() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := cputime.Thread()
	sum := 0.0
	for i := range 100000 {
		sum += float64(i)
	}
	after := cputime.Thread()
	fmt.Println(sum, after >= before)
	// Output:
	// 4.99995e+09 true
}
