// Package race reports whether the binary was built with the race
// detector. It serves the tests that pin allocations at zero. Under -race,
// sync.Pool drops items on purpose and the detector allocates, so those
// tests skip their pins when race.Enabled is set.
//
// It is a leaf utility of internal/: it imports nothing of flatkit's and
// any package's tests may use it.
package race
