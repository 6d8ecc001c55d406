package cputime

import (
	"runtime"
	"testing"
)

// Loop runs fn b.N times on a locked thread. It reports the CPU
// nanoseconds per call, "cpu-ns/op", beside the wall time.
func Loop(b *testing.B, fn func()) {
	b.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	c0 := Thread()
	for b.Loop() {
		fn()
	}
	b.ReportMetric(float64(Thread()-c0)/float64(b.N), "cpu-ns/op")
}

// Warm runs step once before the timing and then b.N times. So the first
// call's growth of a reused tape and of the scratch pools is neither timed
// nor counted. It reports wall time and allocations. It locks no thread and
// reports no CPU time, because the benchmarks that use it may spread over
// goroutines.
func Warm(b *testing.B, step func()) {
	b.Helper()
	step()
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}
