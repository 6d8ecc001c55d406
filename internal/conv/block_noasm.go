//go:build noasm || !amd64

package conv

func acc8Asm(acc []float32, ld, n int, src []float32, offs []int, wb wblock, pf int, ep epilogue) {
	acc8Go(acc, ld, n, src, offs, wb, ep)
}

func acc8cAsm(acc []float32, ld, n int, src []float32, offs []int, wb wblock, pf int, tbl []int, ep epilogue) {
	panic("conv: acc8c without AVX-512")
}
