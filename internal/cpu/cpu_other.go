//go:build noasm || !amd64

package cpu

// Without assembly there is nothing to choose.
func detected() Features { return Features{} }
