//go:build !noasm

#include "textflag.h"

// func combineAVX(dst, u *float64, n int, h float64, k *float64, off *int, val *float64, nz int)
//
// Blocks of 8 components (two YMM accumulators), then 4, 2 (XMM) and 1;
// in each block the row's terms in order: acc += val[m]·k[off[m]+j…].
// Registers: DI dst, SI u, CX n, Y14 h, R8 k, R9 off, R10 val, R11 nz,
// AX j, DX j+block, R12 &k[j], BX m, R13 off[m].
TEXT ·combineAVX(SB), NOSPLIT, $0-64
	MOVQ         dst+0(FP), DI
	MOVQ         u+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSD h+24(FP), Y14
	MOVQ         k+32(FP), R8
	MOVQ         off+40(FP), R9
	MOVQ         val+48(FP), R10
	MOVQ         nz+56(FP), R11
	XORQ         AX, AX

block8:
	LEAQ   8(AX), DX
	CMPQ   DX, CX
	JGT    block4
	LEAQ   (R8)(AX*8), R12
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	XORQ   BX, BX

terms8:
	CMPQ         BX, R11
	JGE          store8
	MOVQ         (R9)(BX*8), R13
	VBROADCASTSD (R10)(BX*8), Y2
	VMULPD       (R12)(R13*8), Y2, Y3
	VADDPD       Y3, Y0, Y0
	VMULPD       32(R12)(R13*8), Y2, Y4
	VADDPD       Y4, Y1, Y1
	INCQ         BX
	JMP          terms8

store8:
	VMULPD  Y14, Y0, Y0
	VMULPD  Y14, Y1, Y1
	VADDPD  (SI)(AX*8), Y0, Y0
	VADDPD  32(SI)(AX*8), Y1, Y1
	VMOVUPD Y0, (DI)(AX*8)
	VMOVUPD Y1, 32(DI)(AX*8)
	MOVQ    DX, AX
	JMP     block8

block4:
	LEAQ   4(AX), DX
	CMPQ   DX, CX
	JGT    block2
	LEAQ   (R8)(AX*8), R12
	VXORPD Y0, Y0, Y0
	XORQ   BX, BX

terms4:
	CMPQ         BX, R11
	JGE          store4
	MOVQ         (R9)(BX*8), R13
	VBROADCASTSD (R10)(BX*8), Y2
	VMULPD       (R12)(R13*8), Y2, Y3
	VADDPD       Y3, Y0, Y0
	INCQ         BX
	JMP          terms4

store4:
	VMULPD  Y14, Y0, Y0
	VADDPD  (SI)(AX*8), Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	MOVQ    DX, AX

block2:
	LEAQ   2(AX), DX
	CMPQ   DX, CX
	JGT    block1
	LEAQ   (R8)(AX*8), R12
	VXORPD X0, X0, X0
	XORQ   BX, BX

terms2:
	CMPQ      BX, R11
	JGE       store2
	MOVQ      (R9)(BX*8), R13
	VMOVDDUP  (R10)(BX*8), X2
	VMULPD    (R12)(R13*8), X2, X3
	VADDPD    X3, X0, X0
	INCQ      BX
	JMP       terms2

store2:
	VMULPD  X14, X0, X0
	VADDPD  (SI)(AX*8), X0, X0
	VMOVUPD X0, (DI)(AX*8)
	MOVQ    DX, AX

block1:
	CMPQ   AX, CX
	JGE    done
	LEAQ   (R8)(AX*8), R12
	VXORPD X0, X0, X0
	XORQ   BX, BX

terms1:
	CMPQ   BX, R11
	JGE    store1
	MOVQ   (R9)(BX*8), R13
	VMOVSD (R10)(BX*8), X2
	VMULSD (R12)(R13*8), X2, X3
	VADDSD X3, X0, X0
	INCQ   BX
	JMP    terms1

store1:
	VMULSD X14, X0, X0
	VADDSD (SI)(AX*8), X0, X0
	VMOVSD X0, (DI)(AX*8)

done:
	VZEROUPPER
	RET
