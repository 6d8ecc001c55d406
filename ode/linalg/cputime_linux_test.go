package linalg_test

import "syscall"

// cpuNanos is the CPU time of the process in user and system mode, the
// benchmarks' measure that other processes on a loaded machine disturb
// less than wall time.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
