//go:build race

package conv

// convRace reports a -race build: sync.Pool then drops items on purpose,
// so the zero-allocation pins are skipped.
const convRace = true
