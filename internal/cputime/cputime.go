// Package cputime measures benchmarks in the calling thread's CPU time,
// which on a shared machine moves less than wall time when other processes
// take the cores. It is a leaf utility for the benchmarks of any package.
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
