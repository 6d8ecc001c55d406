//go:build !noasm

#include "textflag.h"

// maxPoolRowsAVX512 (see MaxPoolRows in pool.go): sixteen windows per
// block, one lane each. The cells of tap (r, t) of sixteen windows are one
// masked load for stride 1, and for stride 2 two masked loads (32 cells)
// and VPERMT2PS picking the even ones; no load reaches past the last cell
// of the last window. Each tap updates the lanes where
//
//	(cell > best  or  cell is NaN)  and  best is not NaN
//
// (VCMPPS GT_OQ and UNORD_Q), so the first largest value wins, and the
// first NaN once seen is kept. Each row of the window is folded on its own
// (Z6, Z7) and its winner then folded into the window's: the rule picks
// the same cell either way, and the rows' chains of dependent compares can
// overlap. The lanes' indices are int32 (the caller
// keeps them below 2³¹), widened to int64 and offset by base on the store.
//
// Registers: SI x, R8 ld, R9 rows·ld, R10 k, R11 s, R12 the first cell of
// the block's first window, CX windows left, DI out, DX arg, R14 r·ld, AX
// the row's first cell, BX t. Z20 lane·s, Z22 ones, Z23 base, Z24 index of
// tap (0, 0) per lane, Z25 ld, Z26 index of tap (r, 0), Z27 of tap (r, t),
// Z2 best, Z3 its index, Z6 and Z7 the row's; K7 the block's lanes, K5 and K6 the stride-2
// loads' lanes.

DATA maxpoolLanes<>+0(SB)/4, $0
DATA maxpoolLanes<>+4(SB)/4, $1
DATA maxpoolLanes<>+8(SB)/4, $2
DATA maxpoolLanes<>+12(SB)/4, $3
DATA maxpoolLanes<>+16(SB)/4, $4
DATA maxpoolLanes<>+20(SB)/4, $5
DATA maxpoolLanes<>+24(SB)/4, $6
DATA maxpoolLanes<>+28(SB)/4, $7
DATA maxpoolLanes<>+32(SB)/4, $8
DATA maxpoolLanes<>+36(SB)/4, $9
DATA maxpoolLanes<>+40(SB)/4, $10
DATA maxpoolLanes<>+44(SB)/4, $11
DATA maxpoolLanes<>+48(SB)/4, $12
DATA maxpoolLanes<>+52(SB)/4, $13
DATA maxpoolLanes<>+56(SB)/4, $14
DATA maxpoolLanes<>+60(SB)/4, $15
GLOBL maxpoolLanes<>(SB), RODATA|NOPTR, $64

// maxpoolMasks[i] = 2^i − 1, i ≤ 16.
DATA maxpoolMasks<>+0(SB)/2, $0x0000
DATA maxpoolMasks<>+2(SB)/2, $0x0001
DATA maxpoolMasks<>+4(SB)/2, $0x0003
DATA maxpoolMasks<>+6(SB)/2, $0x0007
DATA maxpoolMasks<>+8(SB)/2, $0x000f
DATA maxpoolMasks<>+10(SB)/2, $0x001f
DATA maxpoolMasks<>+12(SB)/2, $0x003f
DATA maxpoolMasks<>+14(SB)/2, $0x007f
DATA maxpoolMasks<>+16(SB)/2, $0x00ff
DATA maxpoolMasks<>+18(SB)/2, $0x01ff
DATA maxpoolMasks<>+20(SB)/2, $0x03ff
DATA maxpoolMasks<>+22(SB)/2, $0x07ff
DATA maxpoolMasks<>+24(SB)/2, $0x0fff
DATA maxpoolMasks<>+26(SB)/2, $0x1fff
DATA maxpoolMasks<>+28(SB)/2, $0x3fff
DATA maxpoolMasks<>+30(SB)/2, $0x7fff
DATA maxpoolMasks<>+32(SB)/2, $0xffff
GLOBL maxpoolMasks<>(SB), RODATA|NOPTR, $34

// func maxPoolRowsAVX512(x *float32, ld, rows, k, s, col0, n int, out *float32, arg *int, base int)
TEXT ·maxPoolRowsAVX512(SB), NOSPLIT, $0-80
	MOVQ x+0(FP), SI
	MOVQ ld+8(FP), R8
	MOVQ rows+16(FP), R9
	MOVQ k+24(FP), R10
	MOVQ s+32(FP), R11
	MOVQ col0+40(FP), R12
	MOVQ n+48(FP), CX
	MOVQ out+56(FP), DI
	MOVQ arg+64(FP), DX
	MOVQ base+72(FP), R13
	IMULQ R8, R9
	VMOVDQU32 maxpoolLanes<>(SB), Z20
	VPBROADCASTD R11, Z21
	VPMULLD Z21, Z20, Z20
	VPTERNLOGD $0xff, Z22, Z22, Z22
	VPSRLD $31, Z22, Z22
	VPBROADCASTQ R13, Z23
	VPBROADCASTD R8, Z25

block:
	TESTQ CX, CX
	JLE   done
	MOVQ  CX, BX
	CMPQ  BX, $16
	JLE   lanes
	MOVQ  $16, BX

lanes:
	LEAQ  maxpoolMasks<>(SB), AX
	KMOVW (AX)(BX*2), K7
	// stride 2: cells 0 … 2m−2 of the block, the first 16 in K5, the rest in K6
	LEAQ  -1(BX)(BX*1), R13
	MOVQ  R13, BX
	SUBQ  $16, BX
	JGT   two
	KMOVW (AX)(R13*2), K5
	KXORW K6, K6, K6
	JMP   start

two:
	KMOVW (AX)(BX*2), K6
	KXNORW K5, K5, K5

start:
	VPBROADCASTD R12, Z24
	VPADDD       Z20, Z24, Z24
	VMOVDQA32    Z24, Z26
	VMOVDQA32    Z24, Z3
	XORQ         R14, R14
	LEAQ         (SI)(R12*4), AX
	CMPQ         R11, $1
	JNE          first2
	VMOVUPS.Z    (AX), K7, Z2
	JMP          row

first2:
	VMOVUPS.Z (AX), K5, Z2
	VMOVUPS.Z 64(AX), K6, Z1
	VPERMT2PS Z1, Z20, Z2

row:
	LEAQ      (R14)(R12*1), AX
	LEAQ      (SI)(AX*4), AX
	VMOVDQA32 Z26, Z7
	CMPQ      R11, $1
	JNE       row2
	VMOVUPS.Z (AX), K7, Z6
	JMP       rowtaps

row2:
	VMOVUPS.Z (AX), K5, Z6
	VMOVUPS.Z 64(AX), K6, Z1
	VPERMT2PS Z1, Z20, Z6

rowtaps:
	VMOVDQA32 Z26, Z27
	MOVQ      $1, BX
	CMPQ      BX, R10
	JGE       rowdone

tap:
	VPADDD    Z22, Z27, Z27
	CMPQ      R11, $1
	JNE       load2
	VMOVUPS.Z (AX)(BX*4), K7, Z0
	JMP       update

load2:
	VMOVUPS.Z (AX)(BX*4), K5, Z0
	VMOVUPS.Z 64(AX)(BX*4), K6, Z1
	VPERMT2PS Z1, Z20, Z0

update:
	VCMPPS    $0x1e, Z6, Z0, K1
	VCMPPS    $3, Z0, Z0, K2
	VCMPPS    $3, Z6, Z6, K3
	KORW      K2, K1, K1
	KANDNW    K1, K3, K1
	VMOVAPS   Z0, K1, Z6
	VMOVDQA32 Z27, K1, Z7
	INCQ      BX
	CMPQ      BX, R10
	JLT       tap

rowdone:
	// fold the row's winner (Z6, Z7) into the window's (Z2, Z3)
	VCMPPS    $0x1e, Z2, Z6, K1
	VCMPPS    $3, Z6, Z6, K2
	VCMPPS    $3, Z2, Z2, K3
	KORW      K2, K1, K1
	KANDNW    K1, K3, K1
	VMOVAPS   Z6, K1, Z2
	VMOVDQA32 Z7, K1, Z3
	VPADDD    Z25, Z26, Z26
	ADDQ      R8, R14
	CMPQ      R14, R9
	JLT       row

	VMOVUPS       Z2, K7, (DI)
	VPMOVSXDQ     Y3, Z4
	VPADDQ        Z23, Z4, Z4
	VMOVDQU64     Z4, K7, (DX)
	VEXTRACTI32X8 $1, Z3, Y5
	VPMOVSXDQ     Y5, Z5
	VPADDQ        Z23, Z5, Z5
	KSHIFTRW      $8, K7, K4
	VMOVDQU64     Z5, K4, 64(DX)
	ADDQ          $64, DI
	ADDQ          $128, DX
	SUBQ          $16, CX
	MOVQ          R11, AX
	SHLQ          $4, AX
	ADDQ          AX, R12
	JMP           block

done:
	VZEROUPPER
	RET
