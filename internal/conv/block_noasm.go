//go:build noasm || !amd64

package conv

func acc8Asm(acc []float32, ld, n int, src []float32, offs []int, wp []float32, pf int, ep epilogue) {
	acc8Go(acc, ld, n, src, offs, wp, ep)
}

func acc8cAsm(acc []float32, ld, n int, src []float32, offs []int, wp []float32, pf int, tbl []int, ep epilogue) {
	panic("conv: acc8c without AVX-512")
}
