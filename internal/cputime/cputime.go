package cputime

import (
	"runtime"
	"testing"
)

// Loop runs fn b.N times on a locked thread and reports its CPU
// nanoseconds per call ("cpu-ns/op") beside the wall time.
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

// Warm runs step once before the timing, so that its first call's growth
// of a reused tape and of the scratch pools is not timed nor counted, and
// then b.N times, reporting wall time and allocations (no CPU-time metric,
// no locked thread: the benchmarks that use it may spread over goroutines).
func Warm(b *testing.B, step func()) {
	b.Helper()
	step()
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}
