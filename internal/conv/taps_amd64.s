//go:build !noasm

#include "textflag.h"

// TAPMASK sets K1 to the low CX bits (CX in 1..15). Clobbers AX.
#define TAPMASK \
	MOVL  $1, AX; \
	SHLL  CX, AX; \
	DECL  AX;     \
	KMOVW AX, K1

// func accTapsAVX512(acc, src []float32, offs []int, ws []float32)
//
// For each chunk of acc (64 values in Z0-Z3, then 16 in Z0, then a masked
// tail), load it, add ws[t]·src[offs[t]+j…] for every tap t, store it.
TEXT ·accTapsAVX512(SB), NOSPLIT, $0-96
	MOVQ acc_base+0(FP), DI
	MOVQ acc_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ offs_base+48(FP), R8
	MOVQ offs_len+56(FP), R9
	MOVQ ws_base+72(FP), R10

chunk64:
	CMPQ    CX, $64
	JB      chunk16
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	XORQ    R11, R11

tap64:
	MOVQ         (R8)(R11*8), R12
	LEAQ         (SI)(R12*4), R13
	VBROADCASTSS (R10)(R11*4), Z4
	VFMADD231PS  (R13), Z4, Z0
	VFMADD231PS  64(R13), Z4, Z1
	VFMADD231PS  128(R13), Z4, Z2
	VFMADD231PS  192(R13), Z4, Z3
	INCQ         R11
	CMPQ         R11, R9
	JB           tap64
	VMOVUPS      Z0, (DI)
	VMOVUPS      Z1, 64(DI)
	VMOVUPS      Z2, 128(DI)
	VMOVUPS      Z3, 192(DI)
	ADDQ         $256, DI
	ADDQ         $256, SI
	SUBQ         $64, CX
	JMP          chunk64

chunk16:
	CMPQ    CX, $16
	JB      tail
	VMOVUPS (DI), Z0
	XORQ    R11, R11

tap16:
	MOVQ         (R8)(R11*8), R12
	LEAQ         (SI)(R12*4), R13
	VBROADCASTSS (R10)(R11*4), Z4
	VFMADD231PS  (R13), Z4, Z0
	INCQ         R11
	CMPQ         R11, R9
	JB           tap16
	VMOVUPS      Z0, (DI)
	ADDQ         $64, DI
	ADDQ         $64, SI
	SUBQ         $16, CX
	JMP          chunk16

tail:
	TESTQ     CX, CX
	JE        done
	TAPMASK
	VMOVUPS.Z (DI), K1, Z0
	XORQ      R11, R11

taptail:
	MOVQ         (R8)(R11*8), R12
	LEAQ         (SI)(R12*4), R13
	VBROADCASTSS (R10)(R11*4), Z4
	VMOVUPS.Z    (R13), K1, Z5
	VFMADD231PS  Z5, Z4, Z0
	INCQ         R11
	CMPQ         R11, R9
	JB           taptail
	VMOVUPS      Z0, K1, (DI)

done:
	VZEROUPPER
	RET

// HSUM(z, y, x) reduces the sixteen lanes of z (whose lower halves are
// the registers y and x) to their sum in the low lane of x (clobbers Z14,
// Z15).
#define HSUM(z, y, x) \
	VEXTRACTF32X8 $1, z, Y15;       \
	VADDPS        Y15, y, Y15;      \
	VEXTRACTF128  $1, Y15, X14;     \
	VADDPS        X14, X15, X15;    \
	VPERMILPS     $0x4e, X15, X14;  \
	VADDPS        X14, X15, X15;    \
	VPERMILPS     $0xb1, X15, X14;  \
	VADDPS        X14, X15, x

// func dot8AVX512(s *[8]float32, a, b []float32, offs *[8]int)
//
// Eight sums in Z0-Z7 over chunks of 16 of a (Z8, loaded once per chunk),
// then a masked tail, then a horizontal sum of each.
TEXT ·dot8AVX512(SB), NOSPLIT, $0-64
	MOVQ   s+0(FP), DX
	MOVQ   a_base+8(FP), SI
	MOVQ   a_len+16(FP), CX
	MOVQ   b_base+32(FP), BX
	MOVQ   offs+56(FP), R8
	MOVQ   (R8), R9
	LEAQ   (BX)(R9*4), R9
	MOVQ   8(R8), R10
	LEAQ   (BX)(R10*4), R10
	MOVQ   16(R8), R11
	LEAQ   (BX)(R11*4), R11
	MOVQ   24(R8), R12
	LEAQ   (BX)(R12*4), R12
	MOVQ   32(R8), R13
	LEAQ   (BX)(R13*4), R13
	MOVQ   40(R8), R14
	LEAQ   (BX)(R14*4), R14
	MOVQ   48(R8), R15
	LEAQ   (BX)(R15*4), R15
	MOVQ   56(R8), DI
	LEAQ   (BX)(DI*4), DI
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	XORQ   AX, AX

loop:
	CMPQ        CX, $16
	JB          tail
	VMOVUPS     (SI)(AX*4), Z8
	VFMADD231PS (R9)(AX*4), Z8, Z0
	VFMADD231PS (R10)(AX*4), Z8, Z1
	VFMADD231PS (R11)(AX*4), Z8, Z2
	VFMADD231PS (R12)(AX*4), Z8, Z3
	VFMADD231PS (R13)(AX*4), Z8, Z4
	VFMADD231PS (R14)(AX*4), Z8, Z5
	VFMADD231PS (R15)(AX*4), Z8, Z6
	VFMADD231PS (DI)(AX*4), Z8, Z7
	ADDQ        $16, AX
	SUBQ        $16, CX
	JMP         loop

tail:
	TESTQ       CX, CX
	JE          sums
	MOVQ        CX, BX
	MOVL        $1, CX
	SHLXL       BX, CX, CX
	DECL        CX
	KMOVW       CX, K1
	VMOVUPS.Z   (SI)(AX*4), K1, Z8
	VMOVUPS.Z   (R9)(AX*4), K1, Z9
	VFMADD231PS Z9, Z8, Z0
	VMOVUPS.Z   (R10)(AX*4), K1, Z9
	VFMADD231PS Z9, Z8, Z1
	VMOVUPS.Z   (R11)(AX*4), K1, Z9
	VFMADD231PS Z9, Z8, Z2
	VMOVUPS.Z   (R12)(AX*4), K1, Z9
	VFMADD231PS Z9, Z8, Z3
	VMOVUPS.Z   (R13)(AX*4), K1, Z9
	VFMADD231PS Z9, Z8, Z4
	VMOVUPS.Z   (R14)(AX*4), K1, Z9
	VFMADD231PS Z9, Z8, Z5
	VMOVUPS.Z   (R15)(AX*4), K1, Z9
	VFMADD231PS Z9, Z8, Z6
	VMOVUPS.Z   (DI)(AX*4), K1, Z9
	VFMADD231PS Z9, Z8, Z7

sums:
	HSUM(Z0, Y0, X0)
	VMOVSS X0, (DX)
	HSUM(Z1, Y1, X1)
	VMOVSS X1, 4(DX)
	HSUM(Z2, Y2, X2)
	VMOVSS X2, 8(DX)
	HSUM(Z3, Y3, X3)
	VMOVSS X3, 12(DX)
	HSUM(Z4, Y4, X4)
	VMOVSS X4, 16(DX)
	HSUM(Z5, Y5, X5)
	VMOVSS X5, 20(DX)
	HSUM(Z6, Y6, X6)
	VMOVSS X6, 24(DX)
	HSUM(Z7, Y7, X7)
	VMOVSS X7, 28(DX)
	VZEROUPPER
	RET
