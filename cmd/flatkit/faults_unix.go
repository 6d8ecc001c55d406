//go:build unix

package main

import (
	"syscall"
	"time"
)

// minorFaults is the process's count of minor page faults so far.
func minorFaults() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return int64(ru.Minflt)
}

// pageTouchCost maps 64 fresh anonymous pages, writes one byte to each and
// returns the time per page in microseconds. That is what a first touch of
// fresh memory costs on this machine. On some virtual machines it costs
// far more than on bare metal, and it dominates a fresh process's first
// call.
func pageTouchCost() float64 {
	const pages = 64
	size := pages * syscall.Getpagesize()
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return 0
	}
	defer syscall.Munmap(b)
	start := time.Now()
	for i := 0; i < size; i += syscall.Getpagesize() {
		b[i] = 1
	}
	return float64(time.Since(start).Nanoseconds()) / pages / 1e3
}
