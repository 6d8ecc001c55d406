//go:build race

package model_test

// lossRaceEnabled reports a -race build: sync.Pool then drops items on
// purpose, so the zero-allocation pins of the losses and layers that pool
// their index scratch are skipped.
const lossRaceEnabled = true
