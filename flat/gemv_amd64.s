//go:build !noasm

#include "textflag.h"

// GEMV kernels for amd64. All four add alpha·op(A)·x to y (Gemv has already
// scaled y by beta) for m, n > 0, A row-major with row stride lda floats.
//
// Without the transpose (gemvN*), y[i] is the dot product of row i with x.
// gemvNAVX512 and gemvNAVX2 run four rows together, each with two
// accumulators (so eight FMA chains are in flight), reading A straight from
// memory as the FMA's third operand; the columns past the last full vector
// are loaded under a mask. At the end of the rows the accumulators are folded
// horizontally into four sums, which are scaled by alpha and added to
// y[i..i+3] in one vector operation; left over rows (m mod 4) run one at a
// time. gemvN1AVX512 runs one row at a time with four accumulators: a single
// sequential stream through A, faster while A is in L2 (gemvN1Max).
//
// With the transpose (gemvT*), y = Σ_i x[i]·A[i,:] is a sum of scaled rows.
// A block of y's columns is held in registers across all m rows (AVX-512:
// 256 columns in sixteen ZMM accumulators, one row per step, then 128 columns
// two rows per step into sixteen; AVX2: 64 columns in eight YMM
// accumulators); the columns left over run one vector at a time with four
// rows per step into four accumulators, the last vector under a mask. Each
// block is then scaled by alpha and added to y.

// Mask table for AVX2 masked loads: gemvMask<>+4·(8-r) holds r all-ones lanes
// followed by zero lanes.
DATA gemvMask<>+0(SB)/4, $0xffffffff
DATA gemvMask<>+4(SB)/4, $0xffffffff
DATA gemvMask<>+8(SB)/4, $0xffffffff
DATA gemvMask<>+12(SB)/4, $0xffffffff
DATA gemvMask<>+16(SB)/4, $0xffffffff
DATA gemvMask<>+20(SB)/4, $0xffffffff
DATA gemvMask<>+24(SB)/4, $0xffffffff
DATA gemvMask<>+28(SB)/4, $0xffffffff
DATA gemvMask<>+32(SB)/4, $0
DATA gemvMask<>+36(SB)/4, $0
DATA gemvMask<>+40(SB)/4, $0
DATA gemvMask<>+44(SB)/4, $0
DATA gemvMask<>+48(SB)/4, $0
DATA gemvMask<>+52(SB)/4, $0
DATA gemvMask<>+56(SB)/4, $0
DATA gemvMask<>+60(SB)/4, $0
GLOBL gemvMask<>(SB), RODATA|NOPTR, $64

// AVX2MASK loads into Y12 the mask for min(CX, 8) lanes. Clobbers AX, R11.
#define AVX2MASK \
	MOVQ    $8, AX;                \
	CMPQ    CX, AX;                \
	CMOVQLT CX, AX;                \
	NEGQ    AX;                    \
	ADDQ    $8, AX;                \
	LEAQ    gemvMask<>(SB), R11;   \
	VMOVUPS (R11)(AX*4), Y12

// func gemvNAVX512(m, n int, alpha float32, a *float32, lda int, x, y *float32)
TEXT ·gemvNAVX512(SB), NOSPLIT, $0-56
	MOVQ         m+0(FP), DX
	MOVQ         n+8(FP), R13
	VBROADCASTSS alpha+16(FP), Z14
	MOVQ         a+24(FP), R8
	MOVQ         lda+32(FP), R12
	SHLQ         $2, R12
	MOVQ         x+40(FP), SI
	MOVQ         y+48(FP), DI

	// K2 masks the last n mod 16 columns (all clear if there are none).
	MOVQ  R13, CX
	ANDQ  $15, CX
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K2

	CMPQ DX, $4
	JB   rows1

rows4:
	LEAQ   (R8)(R12*1), R9
	LEAQ   (R9)(R12*1), R10
	LEAQ   (R10)(R12*1), R11
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   BX, BX
	MOVQ   R13, CX
	CMPQ   CX, $32
	JB     r4one

r4loop:
	VMOVUPS     (SI)(BX*1), Z8
	VMOVUPS     64(SI)(BX*1), Z9
	VFMADD231PS (R8)(BX*1), Z8, Z0
	VFMADD231PS (R9)(BX*1), Z8, Z1
	VFMADD231PS (R10)(BX*1), Z8, Z2
	VFMADD231PS (R11)(BX*1), Z8, Z3
	VFMADD231PS 64(R8)(BX*1), Z9, Z4
	VFMADD231PS 64(R9)(BX*1), Z9, Z5
	VFMADD231PS 64(R10)(BX*1), Z9, Z6
	VFMADD231PS 64(R11)(BX*1), Z9, Z7
	ADDQ        $128, BX
	SUBQ        $32, CX
	CMPQ        CX, $32
	JAE         r4loop

r4one:
	CMPQ        CX, $16
	JB          r4tail
	VMOVUPS     (SI)(BX*1), Z8
	VFMADD231PS (R8)(BX*1), Z8, Z0
	VFMADD231PS (R9)(BX*1), Z8, Z1
	VFMADD231PS (R10)(BX*1), Z8, Z2
	VFMADD231PS (R11)(BX*1), Z8, Z3
	ADDQ        $64, BX
	SUBQ        $16, CX

r4tail:
	TESTQ       CX, CX
	JE          r4reduce
	VMOVUPS.Z   (SI)(BX*1), K2, Z8
	VMOVUPS.Z   (R8)(BX*1), K2, Z9
	VMOVUPS.Z   (R9)(BX*1), K2, Z10
	VMOVUPS.Z   (R10)(BX*1), K2, Z11
	VMOVUPS.Z   (R11)(BX*1), K2, Z12
	VFMADD231PS Z9, Z8, Z4
	VFMADD231PS Z10, Z8, Z5
	VFMADD231PS Z11, Z8, Z6
	VFMADD231PS Z12, Z8, Z7

r4reduce:
	VADDPS        Z4, Z0, Z0
	VADDPS        Z5, Z1, Z1
	VADDPS        Z6, Z2, Z2
	VADDPS        Z7, Z3, Z3
	VEXTRACTF64X4 $1, Z0, Y4
	VEXTRACTF64X4 $1, Z1, Y5
	VEXTRACTF64X4 $1, Z2, Y6
	VEXTRACTF64X4 $1, Z3, Y7
	VADDPS        Y4, Y0, Y0
	VADDPS        Y5, Y1, Y1
	VADDPS        Y6, Y2, Y2
	VADDPS        Y7, Y3, Y3
	VHADDPS       Y1, Y0, Y0
	VHADDPS       Y3, Y2, Y2
	VHADDPS       Y2, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VMOVUPS       (DI), X1
	VFMADD231PS   X14, X0, X1
	VMOVUPS       X1, (DI)
	ADDQ          $16, DI
	LEAQ          (R11)(R12*1), R8
	SUBQ          $4, DX
	CMPQ          DX, $4
	JAE           rows4

rows1:
	TESTQ DX, DX
	JE    done

r1:
	VXORPS Y0, Y0, Y0
	VXORPS Y4, Y4, Y4
	XORQ   BX, BX
	MOVQ   R13, CX
	CMPQ   CX, $32
	JB     r1one

r1loop:
	VMOVUPS     (SI)(BX*1), Z8
	VMOVUPS     64(SI)(BX*1), Z9
	VFMADD231PS (R8)(BX*1), Z8, Z0
	VFMADD231PS 64(R8)(BX*1), Z9, Z4
	ADDQ        $128, BX
	SUBQ        $32, CX
	CMPQ        CX, $32
	JAE         r1loop

r1one:
	CMPQ        CX, $16
	JB          r1tail
	VMOVUPS     (SI)(BX*1), Z8
	VFMADD231PS (R8)(BX*1), Z8, Z0
	ADDQ        $64, BX
	SUBQ        $16, CX

r1tail:
	TESTQ       CX, CX
	JE          r1reduce
	VMOVUPS.Z   (SI)(BX*1), K2, Z8
	VMOVUPS.Z   (R8)(BX*1), K2, Z9
	VFMADD231PS Z9, Z8, Z4

r1reduce:
	VADDPS        Z4, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VMOVHLPS      X0, X1, X1
	VADDPS        X1, X0, X0
	VMOVSHDUP     X0, X1
	VADDSS        X1, X0, X0
	VMOVSS        (DI), X1
	VFMADD231SS   X14, X0, X1
	VMOVSS        X1, (DI)
	ADDQ          $4, DI
	ADDQ          R12, R8
	DECQ          DX
	JNE           r1

done:
	VZEROUPPER
	RET

// func gemvN1AVX512(m, n int, alpha float32, a *float32, lda int, x, y *float32)
//
// One row at a time, four accumulators of 16 columns each: a single
// sequential stream through A, which the hardware prefetchers follow best
// while A is in L2.
TEXT ·gemvN1AVX512(SB), NOSPLIT, $0-56
	MOVQ         m+0(FP), DX
	MOVQ         n+8(FP), R13
	VBROADCASTSS alpha+16(FP), Z14
	MOVQ         a+24(FP), R8
	MOVQ         lda+32(FP), R12
	SHLQ         $2, R12
	MOVQ         x+40(FP), SI
	MOVQ         y+48(FP), DI
	MOVQ         R13, CX
	ANDQ         $15, CX
	MOVL         $1, AX
	SHLL         CX, AX
	DECL         AX
	KMOVW        AX, K2

r1:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   BX, BX
	MOVQ   R13, CX
	CMPQ   CX, $64
	JB     r1one

r1loop:
	VMOVUPS     (SI)(BX*1), Z8
	VMOVUPS     64(SI)(BX*1), Z9
	VMOVUPS     128(SI)(BX*1), Z10
	VMOVUPS     192(SI)(BX*1), Z11
	VFMADD231PS (R8)(BX*1), Z8, Z0
	VFMADD231PS 64(R8)(BX*1), Z9, Z1
	VFMADD231PS 128(R8)(BX*1), Z10, Z2
	VFMADD231PS 192(R8)(BX*1), Z11, Z3
	ADDQ        $256, BX
	SUBQ        $64, CX
	CMPQ        CX, $64
	JAE         r1loop

r1one:
	CMPQ        CX, $16
	JB          r1tail
	VMOVUPS     (SI)(BX*1), Z8
	VFMADD231PS (R8)(BX*1), Z8, Z0
	ADDQ        $64, BX
	SUBQ        $16, CX
	JMP         r1one

r1tail:
	TESTQ       CX, CX
	JE          r1reduce
	VMOVUPS.Z   (SI)(BX*1), K2, Z8
	VMOVUPS.Z   (R8)(BX*1), K2, Z9
	VFMADD231PS Z9, Z8, Z1

r1reduce:
	VADDPS        Z1, Z0, Z0
	VADDPS        Z3, Z2, Z2
	VADDPS        Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VMOVHLPS      X0, X1, X1
	VADDPS        X1, X0, X0
	VMOVSHDUP     X0, X1
	VADDSS        X1, X0, X0
	VMOVSS        (DI), X1
	VFMADD231SS   X14, X0, X1
	VMOVSS        X1, (DI)
	ADDQ          $4, DI
	ADDQ          R12, R8
	DECQ          DX
	JNE           r1

	VZEROUPPER
	RET

// func gemvNAVX2(m, n int, alpha float32, a *float32, lda int, x, y *float32)
TEXT ·gemvNAVX2(SB), NOSPLIT, $0-56
	MOVQ         m+0(FP), DX
	MOVQ         n+8(FP), R13
	VBROADCASTSS alpha+16(FP), Y14
	MOVQ         a+24(FP), R8
	MOVQ         lda+32(FP), R12
	SHLQ         $2, R12
	MOVQ         x+40(FP), SI
	MOVQ         y+48(FP), DI
	CMPQ         DX, $4
	JB           rows1

rows4:
	LEAQ   (R8)(R12*1), R9
	LEAQ   (R9)(R12*1), R10
	LEAQ   (R10)(R12*1), R14
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   BX, BX
	MOVQ   R13, CX
	CMPQ   CX, $16
	JB     r4tail

r4loop:
	VMOVUPS     (SI)(BX*1), Y8
	VMOVUPS     32(SI)(BX*1), Y9
	VFMADD231PS (R8)(BX*1), Y8, Y0
	VFMADD231PS (R9)(BX*1), Y8, Y1
	VFMADD231PS (R10)(BX*1), Y8, Y2
	VFMADD231PS (R14)(BX*1), Y8, Y3
	VFMADD231PS 32(R8)(BX*1), Y9, Y4
	VFMADD231PS 32(R9)(BX*1), Y9, Y5
	VFMADD231PS 32(R10)(BX*1), Y9, Y6
	VFMADD231PS 32(R14)(BX*1), Y9, Y7
	ADDQ        $64, BX
	SUBQ        $16, CX
	CMPQ        CX, $16
	JAE         r4loop

r4tail: // at most two vectors, the last under a mask
	TESTQ       CX, CX
	JE          r4reduce
	AVX2MASK
	VMASKMOVPS  (SI)(BX*1), Y12, Y8
	VMASKMOVPS  (R8)(BX*1), Y12, Y9
	VMASKMOVPS  (R9)(BX*1), Y12, Y10
	VMASKMOVPS  (R10)(BX*1), Y12, Y11
	VMASKMOVPS  (R14)(BX*1), Y12, Y13
	VFMADD231PS Y9, Y8, Y0
	VFMADD231PS Y10, Y8, Y1
	VFMADD231PS Y11, Y8, Y2
	VFMADD231PS Y13, Y8, Y3
	ADDQ        $32, BX
	SUBQ        $8, CX
	JG          r4tail

r4reduce:
	VADDPS       Y4, Y0, Y0
	VADDPS       Y5, Y1, Y1
	VADDPS       Y6, Y2, Y2
	VADDPS       Y7, Y3, Y3
	VHADDPS      Y1, Y0, Y0
	VHADDPS      Y3, Y2, Y2
	VHADDPS      Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVUPS      (DI), X1
	VFMADD231PS  X14, X0, X1
	VMOVUPS      X1, (DI)
	ADDQ         $16, DI
	LEAQ         (R14)(R12*1), R8
	SUBQ         $4, DX
	CMPQ         DX, $4
	JAE          rows4

rows1:
	TESTQ DX, DX
	JE    done

r1:
	VXORPS Y0, Y0, Y0
	VXORPS Y4, Y4, Y4
	XORQ   BX, BX
	MOVQ   R13, CX
	CMPQ   CX, $16
	JB     r1tail

r1loop:
	VMOVUPS     (SI)(BX*1), Y8
	VMOVUPS     32(SI)(BX*1), Y9
	VFMADD231PS (R8)(BX*1), Y8, Y0
	VFMADD231PS 32(R8)(BX*1), Y9, Y4
	ADDQ        $64, BX
	SUBQ        $16, CX
	CMPQ        CX, $16
	JAE         r1loop

r1tail:
	TESTQ       CX, CX
	JE          r1reduce
	AVX2MASK
	VMASKMOVPS  (SI)(BX*1), Y12, Y8
	VMASKMOVPS  (R8)(BX*1), Y12, Y9
	VFMADD231PS Y9, Y8, Y4
	ADDQ        $32, BX
	SUBQ        $8, CX
	JG          r1tail

r1reduce:
	VADDPS       Y4, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVHLPS     X0, X1, X1
	VADDPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0
	VMOVSS       (DI), X1
	VFMADD231SS  X14, X0, X1
	VMOVSS       X1, (DI)
	ADDQ         $4, DI
	ADDQ         R12, R8
	DECQ         DX
	JNE          r1

done:
	VZEROUPPER
	RET

// func gemvTAVX512(m, n int, alpha float32, a *float32, lda int, x, y *float32)
TEXT ·gemvTAVX512(SB), NOSPLIT, $0-56
	MOVQ         m+0(FP), DX
	MOVQ         n+8(FP), R13
	VBROADCASTSS alpha+16(FP), Z18
	MOVQ         a+24(FP), R8
	MOVQ         lda+32(FP), R12
	SHLQ         $2, R12
	MOVQ         x+40(FP), SI
	MOVQ         y+48(FP), DI
	LEAQ         (R12)(R12*2), BX    // 3·lda bytes
	CMPQ         R13, $256
	JB           blk128

blk256: // 256 columns in sixteen accumulators, one row per step
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	MOVQ   R8, R9
	MOVQ   SI, R10
	MOVQ   DX, CX

blk256loop:
	VBROADCASTSS (R10), Z16
	VFMADD231PS  (R9), Z16, Z0
	VFMADD231PS  64(R9), Z16, Z1
	VFMADD231PS  128(R9), Z16, Z2
	VFMADD231PS  192(R9), Z16, Z3
	VFMADD231PS  256(R9), Z16, Z4
	VFMADD231PS  320(R9), Z16, Z5
	VFMADD231PS  384(R9), Z16, Z6
	VFMADD231PS  448(R9), Z16, Z7
	VFMADD231PS  512(R9), Z16, Z8
	VFMADD231PS  576(R9), Z16, Z9
	VFMADD231PS  640(R9), Z16, Z10
	VFMADD231PS  704(R9), Z16, Z11
	VFMADD231PS  768(R9), Z16, Z12
	VFMADD231PS  832(R9), Z16, Z13
	VFMADD231PS  896(R9), Z16, Z14
	VFMADD231PS  960(R9), Z16, Z15
	ADDQ         R12, R9
	ADDQ         $4, R10
	DECQ         CX
	JNE          blk256loop
	VFMADD213PS (DI), Z18, Z0
	VFMADD213PS 64(DI), Z18, Z1
	VFMADD213PS 128(DI), Z18, Z2
	VFMADD213PS 192(DI), Z18, Z3
	VFMADD213PS 256(DI), Z18, Z4
	VFMADD213PS 320(DI), Z18, Z5
	VFMADD213PS 384(DI), Z18, Z6
	VFMADD213PS 448(DI), Z18, Z7
	VFMADD213PS 512(DI), Z18, Z8
	VFMADD213PS 576(DI), Z18, Z9
	VFMADD213PS 640(DI), Z18, Z10
	VFMADD213PS 704(DI), Z18, Z11
	VFMADD213PS 768(DI), Z18, Z12
	VFMADD213PS 832(DI), Z18, Z13
	VFMADD213PS 896(DI), Z18, Z14
	VFMADD213PS 960(DI), Z18, Z15
	VMOVUPS     Z0, (DI)
	VMOVUPS     Z1, 64(DI)
	VMOVUPS     Z2, 128(DI)
	VMOVUPS     Z3, 192(DI)
	VMOVUPS     Z4, 256(DI)
	VMOVUPS     Z5, 320(DI)
	VMOVUPS     Z6, 384(DI)
	VMOVUPS     Z7, 448(DI)
	VMOVUPS     Z8, 512(DI)
	VMOVUPS     Z9, 576(DI)
	VMOVUPS     Z10, 640(DI)
	VMOVUPS     Z11, 704(DI)
	VMOVUPS     Z12, 768(DI)
	VMOVUPS     Z13, 832(DI)
	VMOVUPS     Z14, 896(DI)
	VMOVUPS     Z15, 960(DI)
	ADDQ        $1024, R8
	ADDQ        $1024, DI
	SUBQ        $256, R13
	CMPQ        R13, $256
	JAE         blk256

blk128:
	CMPQ R13, $128
	JB   cols

blk: // 128 columns, two rows per step into sixteen accumulators
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15
	MOVQ   R8, R9
	MOVQ   SI, R10
	MOVQ   DX, CX
	CMPQ   CX, $2
	JB     blkodd

blkloop:
	VBROADCASTSS (R10), Z16
	VBROADCASTSS 4(R10), Z17
	LEAQ         (R9)(R12*1), R11
	VFMADD231PS  (R9), Z16, Z0
	VFMADD231PS  64(R9), Z16, Z1
	VFMADD231PS  128(R9), Z16, Z2
	VFMADD231PS  192(R9), Z16, Z3
	VFMADD231PS  256(R9), Z16, Z4
	VFMADD231PS  320(R9), Z16, Z5
	VFMADD231PS  384(R9), Z16, Z6
	VFMADD231PS  448(R9), Z16, Z7
	VFMADD231PS  (R11), Z17, Z8
	VFMADD231PS  64(R11), Z17, Z9
	VFMADD231PS  128(R11), Z17, Z10
	VFMADD231PS  192(R11), Z17, Z11
	VFMADD231PS  256(R11), Z17, Z12
	VFMADD231PS  320(R11), Z17, Z13
	VFMADD231PS  384(R11), Z17, Z14
	VFMADD231PS  448(R11), Z17, Z15
	LEAQ         (R11)(R12*1), R9
	ADDQ         $8, R10
	SUBQ         $2, CX
	CMPQ         CX, $2
	JAE          blkloop

blkodd:
	TESTQ        CX, CX
	JE           blkstore
	VBROADCASTSS (R10), Z16
	VFMADD231PS  (R9), Z16, Z0
	VFMADD231PS  64(R9), Z16, Z1
	VFMADD231PS  128(R9), Z16, Z2
	VFMADD231PS  192(R9), Z16, Z3
	VFMADD231PS  256(R9), Z16, Z4
	VFMADD231PS  320(R9), Z16, Z5
	VFMADD231PS  384(R9), Z16, Z6
	VFMADD231PS  448(R9), Z16, Z7

blkstore:
	VADDPS      Z8, Z0, Z0
	VADDPS      Z9, Z1, Z1
	VADDPS      Z10, Z2, Z2
	VADDPS      Z11, Z3, Z3
	VADDPS      Z12, Z4, Z4
	VADDPS      Z13, Z5, Z5
	VADDPS      Z14, Z6, Z6
	VADDPS      Z15, Z7, Z7
	VFMADD213PS (DI), Z18, Z0
	VFMADD213PS 64(DI), Z18, Z1
	VFMADD213PS 128(DI), Z18, Z2
	VFMADD213PS 192(DI), Z18, Z3
	VFMADD213PS 256(DI), Z18, Z4
	VFMADD213PS 320(DI), Z18, Z5
	VFMADD213PS 384(DI), Z18, Z6
	VFMADD213PS 448(DI), Z18, Z7
	VMOVUPS     Z0, (DI)
	VMOVUPS     Z1, 64(DI)
	VMOVUPS     Z2, 128(DI)
	VMOVUPS     Z3, 192(DI)
	VMOVUPS     Z4, 256(DI)
	VMOVUPS     Z5, 320(DI)
	VMOVUPS     Z6, 384(DI)
	VMOVUPS     Z7, 448(DI)
	ADDQ        $512, R8
	ADDQ        $512, DI
	SUBQ        $128, R13
	CMPQ        R13, $128
	JAE         blk

cols: // the last n mod 128 columns, 16 at a time, the last group under a mask
	TESTQ R13, R13
	JE    done

col:
	MOVQ  R13, CX
	CMPQ  CX, $16
	JB    colmask
	MOVL  $0xffff, AX
	KMOVW AX, K1
	JMP   colgo

colmask:
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX
	KMOVW AX, K1

colgo:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   R8, R9
	MOVQ   SI, R10
	MOVQ   DX, CX
	CMPQ   CX, $4
	JB     colrem

col4:
	VBROADCASTSS (R10), Z16
	VBROADCASTSS 4(R10), Z17
	VBROADCASTSS 8(R10), Z19
	VBROADCASTSS 12(R10), Z20
	VMOVUPS.Z    (R9), K1, Z4
	VMOVUPS.Z    (R9)(R12*1), K1, Z5
	VMOVUPS.Z    (R9)(R12*2), K1, Z6
	VMOVUPS.Z    (R9)(BX*1), K1, Z7
	VFMADD231PS  Z4, Z16, Z0
	VFMADD231PS  Z5, Z17, Z1
	VFMADD231PS  Z6, Z19, Z2
	VFMADD231PS  Z7, Z20, Z3
	LEAQ         (R9)(R12*4), R9
	ADDQ         $16, R10
	SUBQ         $4, CX
	CMPQ         CX, $4
	JAE          col4

colrem:
	TESTQ        CX, CX
	JE           colstore
	VBROADCASTSS (R10), Z16
	VMOVUPS.Z    (R9), K1, Z4
	VFMADD231PS  Z4, Z16, Z0
	ADDQ         R12, R9
	ADDQ         $4, R10
	DECQ         CX
	JMP          colrem

colstore:
	VADDPS      Z1, Z0, Z0
	VADDPS      Z3, Z2, Z2
	VADDPS      Z2, Z0, Z0
	VMOVUPS.Z   (DI), K1, Z4
	VFMADD231PS Z18, Z0, Z4
	VMOVUPS     Z4, K1, (DI)
	ADDQ        $64, R8
	ADDQ        $64, DI
	SUBQ        $16, R13
	JGT         col

done:
	VZEROUPPER
	RET

// func gemvTAVX2(m, n int, alpha float32, a *float32, lda int, x, y *float32)
TEXT ·gemvTAVX2(SB), NOSPLIT, $0-56
	MOVQ         m+0(FP), DX
	MOVQ         n+8(FP), R13
	VBROADCASTSS alpha+16(FP), Y15
	MOVQ         a+24(FP), R8
	MOVQ         lda+32(FP), R12
	SHLQ         $2, R12
	MOVQ         x+40(FP), SI
	MOVQ         y+48(FP), DI
	LEAQ         (R12)(R12*2), BX    // 3·lda bytes
	CMPQ         R13, $64
	JB           cols

blk:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   R8, R9
	MOVQ   SI, R10
	MOVQ   DX, CX

blkloop:
	VBROADCASTSS (R10), Y8
	VFMADD231PS  (R9), Y8, Y0
	VFMADD231PS  32(R9), Y8, Y1
	VFMADD231PS  64(R9), Y8, Y2
	VFMADD231PS  96(R9), Y8, Y3
	VFMADD231PS  128(R9), Y8, Y4
	VFMADD231PS  160(R9), Y8, Y5
	VFMADD231PS  192(R9), Y8, Y6
	VFMADD231PS  224(R9), Y8, Y7
	ADDQ         R12, R9
	ADDQ         $4, R10
	DECQ         CX
	JNE          blkloop

	VFMADD213PS (DI), Y15, Y0
	VFMADD213PS 32(DI), Y15, Y1
	VFMADD213PS 64(DI), Y15, Y2
	VFMADD213PS 96(DI), Y15, Y3
	VFMADD213PS 128(DI), Y15, Y4
	VFMADD213PS 160(DI), Y15, Y5
	VFMADD213PS 192(DI), Y15, Y6
	VFMADD213PS 224(DI), Y15, Y7
	VMOVUPS     Y0, (DI)
	VMOVUPS     Y1, 32(DI)
	VMOVUPS     Y2, 64(DI)
	VMOVUPS     Y3, 96(DI)
	VMOVUPS     Y4, 128(DI)
	VMOVUPS     Y5, 160(DI)
	VMOVUPS     Y6, 192(DI)
	VMOVUPS     Y7, 224(DI)
	ADDQ        $256, R8
	ADDQ        $256, DI
	SUBQ        $64, R13
	CMPQ        R13, $64
	JAE         blk

cols: // the last n mod 64 columns, 8 at a time, the last group under a mask
	TESTQ R13, R13
	JE    done

col:
	MOVQ   R13, CX
	AVX2MASK
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   R8, R9
	MOVQ   SI, R10
	MOVQ   DX, CX
	CMPQ   CX, $4
	JB     colrem

col4:
	VBROADCASTSS (R10), Y8
	VBROADCASTSS 4(R10), Y9
	VBROADCASTSS 8(R10), Y10
	VBROADCASTSS 12(R10), Y11
	VMASKMOVPS   (R9), Y12, Y4
	VMASKMOVPS   (R9)(R12*1), Y12, Y5
	VMASKMOVPS   (R9)(R12*2), Y12, Y6
	VMASKMOVPS   (R9)(BX*1), Y12, Y7
	VFMADD231PS  Y4, Y8, Y0
	VFMADD231PS  Y5, Y9, Y1
	VFMADD231PS  Y6, Y10, Y2
	VFMADD231PS  Y7, Y11, Y3
	LEAQ         (R9)(R12*4), R9
	ADDQ         $16, R10
	SUBQ         $4, CX
	CMPQ         CX, $4
	JAE          col4

colrem:
	TESTQ        CX, CX
	JE           colstore
	VBROADCASTSS (R10), Y8
	VMASKMOVPS   (R9), Y12, Y4
	VFMADD231PS  Y4, Y8, Y0
	ADDQ         R12, R9
	ADDQ         $4, R10
	DECQ         CX
	JMP          colrem

colstore:
	VADDPS      Y1, Y0, Y0
	VADDPS      Y3, Y2, Y2
	VADDPS      Y2, Y0, Y0
	VMASKMOVPS  (DI), Y12, Y4
	VFMADD231PS Y15, Y0, Y4
	VMASKMOVPS  Y4, Y12, (DI)
	ADDQ        $32, R8
	ADDQ        $32, DI
	SUBQ        $8, R13
	JGT         col

done:
	VZEROUPPER
	RET
