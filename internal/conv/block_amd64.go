//go:build !noasm

package conv

//go:generate sh -c "python3 gen/block_amd64.py > block_amd64.s"

// acc8AVX512 is acc8 (block.go) with its arguments checked (block_amd64.s).
//
//go:noescape
func acc8AVX512(acc *float32, ld, n int, src *float32, offs *int, nt int, w *float32, ws, wt, pf int, bias *float32, relu int)

// acc8cAVX512 is acc8c (block.go) with its arguments checked.
//
//go:noescape
func acc8cAVX512(acc *float32, ld, n int, src *float32, offs *int, nt int, w *float32, ws, wt, pf int, tbl *int, bias *float32, relu int)

func acc8Asm(acc []float32, ld, n int, src []float32, offs []int, wb wblock, pf int, ep epilogue) {
	acc8AVX512(&acc[0], ld, n, &src[0], &offs[0], len(offs), &wb.w[0], wb.rs, wb.ts, pf, ep.biasPtr(), ep.reluFlag())
}

func acc8cAsm(acc []float32, ld, n int, src []float32, offs []int, wb wblock, pf int, tbl []int, ep epilogue) {
	acc8cAVX512(&acc[0], ld, n, &src[0], &offs[0], len(offs), &wb.w[0], wb.rs, wb.ts, pf, &tbl[0], ep.biasPtr(), ep.reluFlag())
}

// biasPtr is the bias's first element, or nil without a bias.
func (ep epilogue) biasPtr() *float32 {
	if ep.bias == nil {
		return nil
	}
	return &ep.bias[0]
}

func (ep epilogue) reluFlag() int {
	if ep.relu {
		return 1
	}
	return 0
}
