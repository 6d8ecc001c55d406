//go:build race

package model_test

// raceEnabled reports a -race build: sync.Pool then drops items on purpose,
// so the zero-allocation pins are skipped.
const raceEnabled = true
