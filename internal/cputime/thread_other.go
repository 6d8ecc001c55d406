//go:build !linux

package cputime

import "time"

// Thread is zero: the calling thread's CPU time is read on Linux only
// (RUSAGE_THREAD), so elsewhere cpu-ns/op reads 0.
func Thread() time.Duration { return 0 }
