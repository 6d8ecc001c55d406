package ode

// padElems is the padding on each side of a padded buffer: 16 elements, at
// least 64 bytes (a cache line) for float32 and float64.
const padElems = 16

// padded returns a zeroed slice of length and capacity n whose backing array
// has a cache line of unused padding on each side. A stepper's or an
// integrator's working vectors are small (a few times the dimension) and
// written on every stage; allocated plainly, those of integrators set up one
// after the other (an ensemble's workers, a user's goroutines) share cache
// lines, and two goroutines writing them run no faster than one.
func padded[T Float](n int) []T {
	b := make([]T, n+2*padElems)
	return b[padElems : padElems+n : padElems+n]
}
