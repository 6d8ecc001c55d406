package conv

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// threadCPU is the calling thread's CPU time (Linux RUSAGE_THREAD): on a
// shared machine it moves less than wall time when other processes take
// the cores. Zero where unsupported.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // 1 = RUSAGE_THREAD
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopCPU runs fn b.N times on a locked thread and reports its CPU
// nanoseconds per call beside the wall time.
func loopCPU(b *testing.B, fn func()) {
	b.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	c0 := threadCPU()
	for b.Loop() {
		fn()
	}
	b.ReportMetric(float64(threadCPU()-c0)/float64(b.N), "cpu-ns/op")
}

// benchOperands makes the input, filter and output of g for a benchmark:
// x[i] = i%7 − 3 and w[i] = i%5 − 2 (small integers, so no denormals),
// y zero until a forward pass writes it.
func benchOperands(g *Geom) (x, w, y []float32) {
	x = make([]float32, g.N*g.Cin*g.InVol())
	w = make([]float32, g.Cout*g.CinG()*g.KVol())
	y = make([]float32, g.N*g.Cout*g.OutVol())
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	for i := range w {
		w[i] = float32(i%5) - 2
	}
	return x, w, y
}
