// Package cputime measures benchmarks in the calling thread's CPU time,
// which on a shared machine moves less than wall time when other processes
// take the cores, and holds the wall-time loop the other benchmarks share.
// It is a leaf utility for the benchmarks of any package.
package cputime
