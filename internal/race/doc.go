// Package race reports whether the binary was built with the race detector,
// for the tests that pin allocations at zero: under -race sync.Pool drops
// items on purpose and the detector allocates, so those pins are skipped
// (if race.Enabled { t.Skip(...) }).
//
// It is a leaf utility of internal/: it imports nothing of flatkit's and
// any package's tests may use it.
package race
