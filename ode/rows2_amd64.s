//go:build !noasm

#include "textflag.h"

// PRODUCT(R) writes R1 = J_u·(the column pairs in R0): (a·s0 + b·s1,
// c·s0 + d·s1) per pair, with R2 a scratch register; R is X (one pair)
// or Y (two).
#define PRODUCT(R0, R1, R2, R14, R15, DUPODD) \
	VMOVDDUP  R0, R1         \
	VPERMILPD DUPODD, R0, R2 \
	VMULPD    R14, R1, R1    \
	VMULPD    R15, R2, R2    \
	VADDPD    R2, R1, R1

// func rows2AVX(dS, S *float64, m int, ju, jp *float64, np int)
//
// dS = J_u·S + [J_p 0] for two states: S and dS are m column pairs
// (s_k0, s_k1), ju is J_u = [a b; c d] row-major, jp is J_p (2×np,
// row-major), np ≤ m. Per pair the Go loop's operations in its order,
// (a·s0 + b·s1) + jp0_k and (c·s0 + d·s1) + jp1_k, in lanes without
// fused multiply-adds, so the same bits: two columns per YMM (first those
// with J_p, then one with, then the rest two and one at a time).
// Registers: DI dS, SI S, CX m, R9 jp's row 0, R10 its row 1, DX np,
// AX column k, R11 16·k (the pair's byte offset), Y14 (a c a c),
// Y15 (b d b d).
TEXT ·rows2AVX(SB), NOSPLIT, $0-48
	MOVQ      dS+0(FP), DI
	MOVQ      S+8(FP), SI
	MOVQ      m+16(FP), CX
	MOVQ      ju+24(FP), R8
	MOVQ      jp+32(FP), R9
	MOVQ      np+40(FP), DX
	LEAQ      (R9)(DX*8), R10
	VMOVUPD   (R8), Y0
	VPERMPD   $0x88, Y0, Y14
	VPERMPD   $0xDD, Y0, Y15
	XORQ      AX, AX
	XORQ      R11, R11

pairsp:
	LEAQ      2(AX), BX
	CMPQ      BX, DX
	JGT       onep
	VMOVUPD   (SI)(R11*1), Y0
	PRODUCT(Y0, Y1, Y2, Y14, Y15, $0xF)
	VMOVUPD   (R9)(AX*8), X3
	VMOVUPD   (R10)(AX*8), X4
	VUNPCKLPD X4, X3, X5
	VUNPCKHPD X4, X3, X6
	VINSERTF128 $1, X6, Y5, Y5
	VADDPD    Y5, Y1, Y1
	VMOVUPD   Y1, (DI)(R11*1)
	MOVQ      BX, AX
	ADDQ      $32, R11
	JMP       pairsp

onep:
	CMPQ      AX, DX
	JGE       pairs
	VMOVUPD   (SI)(R11*1), X0
	PRODUCT(X0, X1, X2, X14, X15, $3)
	VMOVSD    (R9)(AX*8), X3
	VMOVHPD   (R10)(AX*8), X3, X3
	VADDPD    X3, X1, X1
	VMOVUPD   X1, (DI)(R11*1)
	INCQ      AX
	ADDQ      $16, R11

pairs:
	LEAQ      2(AX), BX
	CMPQ      BX, CX
	JGT       one
	VMOVUPD   (SI)(R11*1), Y0
	PRODUCT(Y0, Y1, Y2, Y14, Y15, $0xF)
	VMOVUPD   Y1, (DI)(R11*1)
	MOVQ      BX, AX
	ADDQ      $32, R11
	JMP       pairs

one:
	CMPQ      AX, CX
	JGE       done
	VMOVUPD   (SI)(R11*1), X0
	PRODUCT(X0, X1, X2, X14, X15, $3)
	VMOVUPD   X1, (DI)(R11*1)

done:
	VZEROUPPER
	RET
