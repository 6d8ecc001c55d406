//go:build race

package main

// raceEnabled reports a -race build: sync.Pool then drops items on purpose
// and the detector allocates, so the zero-allocation pins are skipped.
const raceEnabled = true
