//go:build !noasm

#include "textflag.h"

// Relu, MaskPositive, Indicator and Mul for amd64 (see select.go).
//
//   - Relu is VMAXPS with the input as the first Intel source and zero as
//     the second: the instruction returns the second source unless the
//     first is greater, so x ≤ 0, −0 and NaN all give +0, as ReluScalar.
//   - MaskPositive compares 0 < y with the ordered LT_OQ, false for NaN,
//     then keeps c's bits where it holds and +0 elsewhere: a zeroing masked
//     load (AVX-512) or an AND with the all-ones compare result (AVX2).
//     Nothing is computed from c, so a NaN or Inf c masked out gives +0.
//   - Indicator compares with the ordered predicates GT_OQ (x > lo) and
//     LT_OQ (x < hi), false for NaN, and keeps 1.0 where both hold.
//   - Mul is VMULPS, rounded once, as the Go product.
//
// The AVX-512 kernels run four registers (64 elements) per iteration, then
// one register, then a masked tail (opmask K1) that never touches memory
// past the slices; the AVX2 kernels one register per iteration over a
// multiple of 8 elements. Each iteration loads before it stores, so dst
// may be a source.

// SELTAILMASK sets K1 to the low CX bits (CX in 1..15). Clobbers AX.
#define SELTAILMASK \
	MOVL  $1, AX; \
	SHLL  CX, AX; \
	DECL  AX;     \
	KMOVW AX, K1

// func reluAVX512(dst, src []float32)
TEXT ·reluAVX512(SB), NOSPLIT, $0-48
	MOVQ   dst_base+0(FP), DI
	MOVQ   src_base+24(FP), SI
	MOVQ   src_len+32(FP), CX
	VXORPS Z31, Z31, Z31
	CMPQ   CX, $64
	JB     one

loop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS 128(SI), Z2
	VMOVUPS 192(SI), Z3
	VMAXPS  Z31, Z0, Z0
	VMAXPS  Z31, Z1, Z1
	VMAXPS  Z31, Z2, Z2
	VMAXPS  Z31, Z3, Z3
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	ADDQ    $256, SI
	ADDQ    $256, DI
	SUBQ    $64, CX
	CMPQ    CX, $64
	JAE     loop

one:
	CMPQ    CX, $16
	JB      tail
	VMOVUPS (SI), Z0
	VMAXPS  Z31, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     one

tail:
	TESTQ     CX, CX
	JE        done
	SELTAILMASK
	VMOVUPS.Z (SI), K1, Z0
	VMAXPS    Z31, Z0, Z0
	VMOVUPS   Z0, K1, (DI)

done:
	VZEROUPPER
	RET

// func reluAVX2(dst, src []float32)
TEXT ·reluAVX2(SB), NOSPLIT, $0-48
	MOVQ   dst_base+0(FP), DI
	MOVQ   src_base+24(FP), SI
	MOVQ   src_len+32(FP), CX
	VXORPS Y15, Y15, Y15
	SHRQ   $3, CX
	JZ     done

loop:
	VMOVUPS (SI), Y0
	VMAXPS  Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET

// INDZ(x) sets x to 1.0 where lo < x < hi (Z29, Z30), else +0; ones in Z28.
#define INDZ(x) \
	VCMPPS    $0x1e, Z29, x, K2; \
	VCMPPS    $0x11, Z30, x, K3; \
	KANDW     K2, K3, K2;        \
	VMOVAPS.Z Z28, K2, x

// func indicatorAVX512(dst, src []float32, lo, hi float32)
TEXT ·indicatorAVX512(SB), NOSPLIT, $0-56
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), CX
	VBROADCASTSS lo+48(FP), Z29
	VBROADCASTSS hi+52(FP), Z30
	MOVL         $0x3f800000, AX
	VPBROADCASTD AX, Z28
	CMPQ         CX, $64
	JB           one

loop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS 128(SI), Z2
	VMOVUPS 192(SI), Z3
	INDZ(Z0)
	INDZ(Z1)
	INDZ(Z2)
	INDZ(Z3)
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	ADDQ    $256, SI
	ADDQ    $256, DI
	SUBQ    $64, CX
	CMPQ    CX, $64
	JAE     loop

one:
	CMPQ    CX, $16
	JB      tail
	VMOVUPS (SI), Z0
	INDZ(Z0)
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     one

tail:
	TESTQ     CX, CX
	JE        done
	SELTAILMASK
	VMOVUPS.Z (SI), K1, Z0
	INDZ(Z0)
	VMOVUPS   Z0, K1, (DI)

done:
	VZEROUPPER
	RET

// func indicatorAVX2(dst, src []float32, lo, hi float32)
TEXT ·indicatorAVX2(SB), NOSPLIT, $0-56
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), CX
	VBROADCASTSS lo+48(FP), Y13
	VBROADCASTSS hi+52(FP), Y14
	MOVL         $0x3f800000, AX
	MOVL         AX, X15
	VPBROADCASTD X15, Y15
	SHRQ         $3, CX
	JZ           done

loop:
	VMOVUPS (SI), Y0
	VCMPPS  $0x1e, Y13, Y0, Y1
	VCMPPS  $0x11, Y14, Y0, Y2
	VANDPS  Y1, Y2, Y1
	VANDPS  Y15, Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET

// func maskPositiveAVX512(dst, c, y []float32)
TEXT ·maskPositiveAVX512(SB), NOSPLIT, $0-72
	MOVQ   dst_base+0(FP), DI
	MOVQ   c_base+24(FP), SI
	MOVQ   c_len+32(FP), CX
	MOVQ   y_base+48(FP), DX
	VXORPS Z31, Z31, Z31
	CMPQ   CX, $64
	JB     one

loop:
	VCMPPS    $0x11, (DX), Z31, K2
	VCMPPS    $0x11, 64(DX), Z31, K3
	VCMPPS    $0x11, 128(DX), Z31, K4
	VCMPPS    $0x11, 192(DX), Z31, K5
	VMOVUPS.Z (SI), K2, Z0
	VMOVUPS.Z 64(SI), K3, Z1
	VMOVUPS.Z 128(SI), K4, Z2
	VMOVUPS.Z 192(SI), K5, Z3
	VMOVUPS   Z0, (DI)
	VMOVUPS   Z1, 64(DI)
	VMOVUPS   Z2, 128(DI)
	VMOVUPS   Z3, 192(DI)
	ADDQ      $256, SI
	ADDQ      $256, DX
	ADDQ      $256, DI
	SUBQ      $64, CX
	CMPQ      CX, $64
	JAE       loop

one:
	CMPQ      CX, $16
	JB        tail
	VCMPPS    $0x11, (DX), Z31, K2
	VMOVUPS.Z (SI), K2, Z0
	VMOVUPS   Z0, (DI)
	ADDQ      $64, SI
	ADDQ      $64, DX
	ADDQ      $64, DI
	SUBQ      $16, CX
	JMP       one

tail:
	TESTQ     CX, CX
	JE        done
	SELTAILMASK
	VMOVUPS.Z (DX), K1, Z1

	// Lanes past the end load +0, which is not positive: K2 is within K1.
	VCMPPS    $0x11, Z1, Z31, K2
	VMOVUPS.Z (SI), K2, Z0
	VMOVUPS   Z0, K1, (DI)

done:
	VZEROUPPER
	RET

// func maskPositiveAVX2(dst, c, y []float32)
TEXT ·maskPositiveAVX2(SB), NOSPLIT, $0-72
	MOVQ   dst_base+0(FP), DI
	MOVQ   c_base+24(FP), SI
	MOVQ   c_len+32(FP), CX
	MOVQ   y_base+48(FP), DX
	VXORPS Y15, Y15, Y15
	SHRQ   $3, CX
	JZ     done

loop:
	VCMPPS  $0x11, (DX), Y15, Y0
	VANDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET

// func mulAVX512(dst, a, b []float32)
TEXT ·mulAVX512(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ a_len+32(FP), CX
	MOVQ b_base+48(FP), DX
	CMPQ CX, $64
	JB   one

loop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS 128(SI), Z2
	VMOVUPS 192(SI), Z3
	VMULPS  (DX), Z0, Z0
	VMULPS  64(DX), Z1, Z1
	VMULPS  128(DX), Z2, Z2
	VMULPS  192(DX), Z3, Z3
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	ADDQ    $256, SI
	ADDQ    $256, DX
	ADDQ    $256, DI
	SUBQ    $64, CX
	CMPQ    CX, $64
	JAE     loop

one:
	CMPQ    CX, $16
	JB      tail
	VMOVUPS (SI), Z0
	VMULPS  (DX), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DX
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     one

tail:
	TESTQ     CX, CX
	JE        done
	SELTAILMASK
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS.Z (DX), K1, Z1
	VMULPS    Z1, Z0, Z0
	VMOVUPS   Z0, K1, (DI)

done:
	VZEROUPPER
	RET

// func mulAVX2(dst, a, b []float32)
TEXT ·mulAVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ a_base+24(FP), SI
	MOVQ a_len+32(FP), CX
	MOVQ b_base+48(FP), DX
	SHRQ $3, CX
	JZ   done

loop:
	VMOVUPS (SI), Y0
	VMULPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET
