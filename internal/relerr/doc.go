// Package relerr compares float32 results with a float64 reference within
// a relative tolerance, for the tests of any package. got[i] is near
// want[i] when |got[i] − want[i]| ≤ tol·(1 + |want[i]|). So the tolerance
// is absolute near zero and relative away from it. It is a leaf utility:
// it imports nothing of flatkit's.
package relerr
