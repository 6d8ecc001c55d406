package cputime

import (
	"syscall"
	"time"
)

// Thread is the calling thread's CPU time from RUSAGE_THREAD, or zero if
// the call fails.
func Thread() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // 1 = RUSAGE_THREAD
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
