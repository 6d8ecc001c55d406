//go:build !linux

package linalg_test

// cpuNanos is 0 where the CPU time is not read: the benchmarks then
// report wall time only.
func cpuNanos() int64 { return 0 }
