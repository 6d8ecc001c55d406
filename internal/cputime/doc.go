// Package cputime measures benchmarks in the calling thread's CPU time. On
// a shared machine, CPU time moves less than wall time when other
// processes take the cores. The package also holds the wall-time loop the
// other benchmarks share. It is a leaf utility for the benchmarks of any
// package.
package cputime
