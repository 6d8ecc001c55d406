//go:build amd64 && !noasm

#include "textflag.h"

// The micro-kernels' outer-product loops (gemm_amd64.go: gemmOuter512,
// gemmOuter256), written by hand (gemm_amd64.s is generated). Each sets
// c[i*ldc+j] = alpha·fma(x[i*incx], y[j], +0) for i < m, j < n, m, n ≥ 1:
// what the micro-kernels compute at k = 1 and beta = 0 (accumulators
// cleared, one fused multiply-add, a product with alpha), so the bits are
// theirs, including the sign of a zero. C is stored without being read.

// func gemmOuterAVX512(m, n int, alpha float32, x *float32, incx int, y, c *float32, ldc int)
//
// Columns in blocks of 256 run with that block of y held in Z0-Z15 while
// every row of the block is written, so the loop is stores only; the last
// n mod 256 columns run row by row, reading y.
TEXT ·gemmOuterAVX512(SB), NOSPLIT, $0-64
	MOVQ         m+0(FP), R8
	MOVQ         n+8(FP), R9
	VBROADCASTSS alpha+16(FP), Z30
	MOVQ         x+24(FP), SI
	MOVQ         incx+32(FP), R10
	SHLQ         $2, R10
	MOVQ         y+40(FP), BX
	MOVQ         c+48(FP), DI
	MOVQ         ldc+56(FP), R11
	SHLQ         $2, R11

block:
	CMPQ R9, $256
	JB   rest
	VMOVUPS (BX), Z0
	VMOVUPS 64(BX), Z1
	VMOVUPS 128(BX), Z2
	VMOVUPS 192(BX), Z3
	VMOVUPS 256(BX), Z4
	VMOVUPS 320(BX), Z5
	VMOVUPS 384(BX), Z6
	VMOVUPS 448(BX), Z7
	VMOVUPS 512(BX), Z8
	VMOVUPS 576(BX), Z9
	VMOVUPS 640(BX), Z10
	VMOVUPS 704(BX), Z11
	VMOVUPS 768(BX), Z12
	VMOVUPS 832(BX), Z13
	VMOVUPS 896(BX), Z14
	VMOVUPS 960(BX), Z15
	MOVQ    SI, R12 // x[i]
	MOVQ    DI, R13 // row i of the block
	MOVQ    R8, CX

brow:
	VBROADCASTSS (R12), Z31
	VPXORD       Z16, Z16, Z16
	VPXORD       Z17, Z17, Z17
	VPXORD       Z18, Z18, Z18
	VPXORD       Z19, Z19, Z19
	VFMADD231PS  Z0, Z31, Z16
	VFMADD231PS  Z1, Z31, Z17
	VFMADD231PS  Z2, Z31, Z18
	VFMADD231PS  Z3, Z31, Z19
	VMULPS       Z30, Z16, Z16
	VMULPS       Z30, Z17, Z17
	VMULPS       Z30, Z18, Z18
	VMULPS       Z30, Z19, Z19
	VMOVUPS      Z16, (R13)
	VMOVUPS      Z17, 64(R13)
	VMOVUPS      Z18, 128(R13)
	VMOVUPS      Z19, 192(R13)
	VPXORD       Z20, Z20, Z20
	VPXORD       Z21, Z21, Z21
	VPXORD       Z22, Z22, Z22
	VPXORD       Z23, Z23, Z23
	VFMADD231PS  Z4, Z31, Z20
	VFMADD231PS  Z5, Z31, Z21
	VFMADD231PS  Z6, Z31, Z22
	VFMADD231PS  Z7, Z31, Z23
	VMULPS       Z30, Z20, Z20
	VMULPS       Z30, Z21, Z21
	VMULPS       Z30, Z22, Z22
	VMULPS       Z30, Z23, Z23
	VMOVUPS      Z20, 256(R13)
	VMOVUPS      Z21, 320(R13)
	VMOVUPS      Z22, 384(R13)
	VMOVUPS      Z23, 448(R13)
	VPXORD       Z16, Z16, Z16
	VPXORD       Z17, Z17, Z17
	VPXORD       Z18, Z18, Z18
	VPXORD       Z19, Z19, Z19
	VFMADD231PS  Z8, Z31, Z16
	VFMADD231PS  Z9, Z31, Z17
	VFMADD231PS  Z10, Z31, Z18
	VFMADD231PS  Z11, Z31, Z19
	VMULPS       Z30, Z16, Z16
	VMULPS       Z30, Z17, Z17
	VMULPS       Z30, Z18, Z18
	VMULPS       Z30, Z19, Z19
	VMOVUPS      Z16, 512(R13)
	VMOVUPS      Z17, 576(R13)
	VMOVUPS      Z18, 640(R13)
	VMOVUPS      Z19, 704(R13)
	VPXORD       Z20, Z20, Z20
	VPXORD       Z21, Z21, Z21
	VPXORD       Z22, Z22, Z22
	VPXORD       Z23, Z23, Z23
	VFMADD231PS  Z12, Z31, Z20
	VFMADD231PS  Z13, Z31, Z21
	VFMADD231PS  Z14, Z31, Z22
	VFMADD231PS  Z15, Z31, Z23
	VMULPS       Z30, Z20, Z20
	VMULPS       Z30, Z21, Z21
	VMULPS       Z30, Z22, Z22
	VMULPS       Z30, Z23, Z23
	VMOVUPS      Z20, 768(R13)
	VMOVUPS      Z21, 832(R13)
	VMOVUPS      Z22, 896(R13)
	VMOVUPS      Z23, 960(R13)
	ADDQ         R10, R12
	ADDQ         R11, R13
	DECQ         CX
	JNZ          brow

	ADDQ $1024, BX
	ADDQ $1024, DI
	SUBQ $256, R9
	JMP  block

rest:
	TESTQ R9, R9
	JE    done

	// K1 masks the last n mod 16 columns.
	MOVQ  R9, CX
	ANDQ  $15, CX
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K1

row:
	VBROADCASTSS (SI), Z31
	MOVQ         BX, R12
	MOVQ         DI, R13
	MOVQ         R9, CX
	CMPQ         CX, $64
	JB           one

four:
	VPXORD      Z0, Z0, Z0
	VPXORD      Z1, Z1, Z1
	VPXORD      Z2, Z2, Z2
	VPXORD      Z3, Z3, Z3
	VFMADD231PS (R12), Z31, Z0
	VFMADD231PS 64(R12), Z31, Z1
	VFMADD231PS 128(R12), Z31, Z2
	VFMADD231PS 192(R12), Z31, Z3
	VMULPS      Z30, Z0, Z0
	VMULPS      Z30, Z1, Z1
	VMULPS      Z30, Z2, Z2
	VMULPS      Z30, Z3, Z3
	VMOVUPS     Z0, (R13)
	VMOVUPS     Z1, 64(R13)
	VMOVUPS     Z2, 128(R13)
	VMOVUPS     Z3, 192(R13)
	ADDQ        $256, R12
	ADDQ        $256, R13
	SUBQ        $64, CX
	CMPQ        CX, $64
	JAE         four

one:
	CMPQ        CX, $16
	JB          tail
	VPXORD      Z0, Z0, Z0
	VFMADD231PS (R12), Z31, Z0
	VMULPS      Z30, Z0, Z0
	VMOVUPS     Z0, (R13)
	ADDQ        $64, R12
	ADDQ        $64, R13
	SUBQ        $16, CX
	JMP         one

tail:
	TESTQ       CX, CX
	JE          next
	VMOVUPS.Z   (R12), K1, Z1
	VPXORD      Z0, Z0, Z0
	VFMADD231PS Z1, Z31, Z0
	VMULPS      Z30, Z0, Z0
	VMOVUPS     Z0, K1, (R13)

next:
	ADDQ R10, SI
	ADDQ R11, DI
	DECQ R8
	JNZ  row

done:
	VZEROUPPER
	RET

// func gemmOuterAVX2(m, n int, alpha float32, x *float32, incx int, y, c *float32, ldc int)
TEXT ·gemmOuterAVX2(SB), NOSPLIT, $0-64
	MOVQ         m+0(FP), R8
	MOVQ         n+8(FP), R9
	VBROADCASTSS alpha+16(FP), Y14
	MOVQ         x+24(FP), SI
	MOVQ         incx+32(FP), R10
	SHLQ         $2, R10
	MOVQ         y+40(FP), BX
	MOVQ         c+48(FP), DI
	MOVQ         ldc+56(FP), R11
	SHLQ         $2, R11

row:
	VBROADCASTSS (SI), Y15
	MOVQ         BX, R12
	MOVQ         DI, R13
	MOVQ         R9, CX
	CMPQ         CX, $32
	JB           one

four:
	VXORPS      Y0, Y0, Y0
	VXORPS      Y1, Y1, Y1
	VXORPS      Y2, Y2, Y2
	VXORPS      Y3, Y3, Y3
	VFMADD231PS (R12), Y15, Y0
	VFMADD231PS 32(R12), Y15, Y1
	VFMADD231PS 64(R12), Y15, Y2
	VFMADD231PS 96(R12), Y15, Y3
	VMULPS      Y14, Y0, Y0
	VMULPS      Y14, Y1, Y1
	VMULPS      Y14, Y2, Y2
	VMULPS      Y14, Y3, Y3
	VMOVUPS     Y0, (R13)
	VMOVUPS     Y1, 32(R13)
	VMOVUPS     Y2, 64(R13)
	VMOVUPS     Y3, 96(R13)
	ADDQ        $128, R12
	ADDQ        $128, R13
	SUBQ        $32, CX
	CMPQ        CX, $32
	JAE         four

one:
	CMPQ        CX, $8
	JB          tail
	VXORPS      Y0, Y0, Y0
	VFMADD231PS (R12), Y15, Y0
	VMULPS      Y14, Y0, Y0
	VMOVUPS     Y0, (R13)
	ADDQ        $32, R12
	ADDQ        $32, R13
	SUBQ        $8, CX
	JMP         one

tail:
	TESTQ       CX, CX
	JE          next
	VMOVSS      (R12), X1
	VXORPS      X0, X0, X0
	VFMADD231SS X1, X15, X0
	VMULSS      X14, X0, X0
	VMOVSS      X0, (R13)
	ADDQ        $4, R12
	ADDQ        $4, R13
	DECQ        CX
	JMP         tail

next:
	ADDQ R10, SI
	ADDQ R11, DI
	DECQ R8
	JNZ  row

	VZEROUPPER
	RET
