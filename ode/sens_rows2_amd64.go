//go:build !noasm

package ode

//go:generate sh -c "python3 gen/rows2_amd64.py > sens_rows2_amd64.s"

// haveRows2AVX says whether rows2AVX runs here; it needs AVX2's VPERMPD.
var haveRows2AVX = haveCombineAVX

// rows2AVX is forwardSens.rows2's product for float64 in 256-bit lanes,
// in sens_rows2_amd64.s: dS = J_u·S + [J_p 0] over m column pairs. It does
// the same operations in the same order as the Go loop, so it gets the
// same bits. The caller checks the lengths: dS and S hold 2m values, ju 4,
// jp 2·np, and 0 < np ≤ m.
//
//go:noescape
func rows2AVX(dS, S *float64, m int, ju, jp *float64, np int)
