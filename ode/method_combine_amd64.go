//go:build !noasm

package ode

//go:generate sh -c "python3 gen/combine_amd64.py > method_combine_amd64.s"

import "github.com/flatkit/flatkit/internal/cpu"

// haveCombineAVX says whether combineAVX runs here: at cpu.Best's AVX2
// level, though the kernel itself needs AVX only.
var haveCombineAVX = cpu.Best >= cpu.AVX2

// combineAVX is erk.combine for float64 in 256-bit lanes, in
// method_combine_amd64.s:
//
//	dst[j] = u[j] + h·(0 + val[0]·k[off[0]+j] + … + val[nz−1]·k[off[nz−1]+j]),  j < n,
//
// Each lane does the same multiplies and adds in the same order as the
// scalar loop, with no fused multiply-add, so it gets the same bits. The
// discrete adjoint and the segment replays rely on that. The caller checks
// every index: dst and u hold n values, k holds off[m]+n values for every
// m < nz.
//
//go:noescape
func combineAVX(dst, u *float64, n int, h float64, k *float64, off *int, val *float64, nz int)
