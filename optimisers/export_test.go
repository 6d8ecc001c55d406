package optimisers

// SetMinChunk sets the shortest chunk an update hands to another goroutine
// and returns the previous value, so tests can split small layouts.
func SetMinChunk(n int) int {
	old := minChunk
	minChunk = n
	return old
}

// SetSIMD sets the vector kernel level (0 for the Go loops) and returns the
// previous one.
func SetSIMD(level int) int {
	old := simd
	simd = level
	return old
}

// SIMD returns the vector kernel level.
func SIMD() int { return simd }
