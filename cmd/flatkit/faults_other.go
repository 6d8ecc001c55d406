//go:build !unix

package main

// minorFaults is not measured on this platform.
func minorFaults() int64 { return 0 }

// pageTouchCost is not measured on this platform.
func pageTouchCost() float64 { return 0 }
