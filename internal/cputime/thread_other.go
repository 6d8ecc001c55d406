//go:build !linux

package cputime

import "time"

// Thread is zero: only Linux has RUSAGE_THREAD for the calling thread's CPU
// time. So elsewhere cpu-ns/op reads 0.
func Thread() time.Duration { return 0 }
