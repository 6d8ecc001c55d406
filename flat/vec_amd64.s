//go:build !noasm

#include "textflag.h"

// Vector kernels for amd64: an AVX-512 and an AVX2+FMA version of each.
//
// AVX-512 kernels run four ZMM registers (64 floats) per iteration, then one
// register at a time, then finish the last 1..15 elements with a masked load
// and store (opmask K1), which never touches memory past the slice. AVX2
// kernels run four YMM registers (32 floats), then one, then a scalar loop.
// Reductions keep four independent accumulators (eight for Norm) so the add
// or FMA latency is hidden, and fold them at the end.

// TAILMASK sets K1 to the low CX bits (CX in 1..15). Clobbers AX.
#define TAILMASK \
	MOVL  $1, AX; \
	SHLL  CX, AX; \
	DECL  AX;     \
	KMOVW AX, K1

// HSUMY0 folds the eight float32 lanes of Y0 into X0's low lane. Clobbers X1.
#define HSUMY0 \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0; \
	VMOVHLPS     X0, X1, X1; \
	VADDPS       X1, X0, X0; \
	VMOVSHDUP    X0, X1;     \
	VADDSS       X1, X0, X0

// HSUMZ0 folds the sixteen float32 lanes of Z0 into X0's low lane.
#define HSUMZ0 \
	VEXTRACTF64X4 $1, Z0, Y1; \
	VADDPS        Y1, Y0, Y0; \
	HSUMY0

// HSUMPDY0 folds the four float64 lanes of Y0 into X0's low lane.
#define HSUMPDY0 \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPD       X1, X0, X0; \
	VUNPCKHPD    X0, X0, X1; \
	VADDSD       X1, X0, X0

// func axpyAVX512(alpha float32, x, y []float32)
TEXT ·axpyAVX512(SB), NOSPLIT, $0-56
	VBROADCASTSS alpha+0(FP), Z0
	MOVQ         x_base+8(FP), SI
	MOVQ         x_len+16(FP), CX
	MOVQ         y_base+32(FP), DI
	CMPQ         CX, $64
	JB           one

loop:
	VMOVUPS     (SI), Z1
	VMOVUPS     64(SI), Z2
	VMOVUPS     128(SI), Z3
	VMOVUPS     192(SI), Z4
	VFMADD213PS (DI), Z0, Z1
	VFMADD213PS 64(DI), Z0, Z2
	VFMADD213PS 128(DI), Z0, Z3
	VFMADD213PS 192(DI), Z0, Z4
	VMOVUPS     Z1, (DI)
	VMOVUPS     Z2, 64(DI)
	VMOVUPS     Z3, 128(DI)
	VMOVUPS     Z4, 192(DI)
	ADDQ        $256, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	CMPQ        CX, $64
	JAE         loop

one:
	CMPQ        CX, $16
	JB          tail
	VMOVUPS     (SI), Z1
	VFMADD213PS (DI), Z0, Z1
	VMOVUPS     Z1, (DI)
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JMP         one

tail:
	TESTQ       CX, CX
	JE          done
	TAILMASK
	VMOVUPS.Z   (SI), K1, Z1
	VMOVUPS.Z   (DI), K1, Z2
	VFMADD213PS Z2, Z0, Z1
	VMOVUPS     Z1, K1, (DI)

done:
	VZEROUPPER
	RET

// func axpyAVX2(alpha float32, x, y []float32)
TEXT ·axpyAVX2(SB), NOSPLIT, $0-56
	VBROADCASTSS alpha+0(FP), Y0
	MOVQ         x_base+8(FP), SI
	MOVQ         x_len+16(FP), CX
	MOVQ         y_base+32(FP), DI
	CMPQ         CX, $32
	JB           one

loop:
	VMOVUPS     (SI), Y1
	VMOVUPS     32(SI), Y2
	VMOVUPS     64(SI), Y3
	VMOVUPS     96(SI), Y4
	VFMADD213PS (DI), Y0, Y1
	VFMADD213PS 32(DI), Y0, Y2
	VFMADD213PS 64(DI), Y0, Y3
	VFMADD213PS 96(DI), Y0, Y4
	VMOVUPS     Y1, (DI)
	VMOVUPS     Y2, 32(DI)
	VMOVUPS     Y3, 64(DI)
	VMOVUPS     Y4, 96(DI)
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	CMPQ        CX, $32
	JAE         loop

one:
	CMPQ        CX, $8
	JB          tail
	VMOVUPS     (SI), Y1
	VFMADD213PS (DI), Y0, Y1
	VMOVUPS     Y1, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         one

tail:
	TESTQ       CX, CX
	JE          done
	VMOVSS      (SI), X1
	VFMADD213SS (DI), X0, X1
	VMOVSS      X1, (DI)
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         tail

done:
	VZEROUPPER
	RET

// func dotAVX512(x, y []float32) float32
TEXT ·dotAVX512(SB), NOSPLIT, $0-52
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	MOVQ   y_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	CMPQ   CX, $64
	JB     one

loop:
	VMOVUPS     (SI), Z4
	VMOVUPS     64(SI), Z5
	VMOVUPS     128(SI), Z6
	VMOVUPS     192(SI), Z7
	VFMADD231PS (DI), Z4, Z0
	VFMADD231PS 64(DI), Z5, Z1
	VFMADD231PS 128(DI), Z6, Z2
	VFMADD231PS 192(DI), Z7, Z3
	ADDQ        $256, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	CMPQ        CX, $64
	JAE         loop

one:
	CMPQ        CX, $16
	JB          tail
	VMOVUPS     (SI), Z4
	VFMADD231PS (DI), Z4, Z0
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JMP         one

tail:
	TESTQ       CX, CX
	JE          reduce
	TAILMASK
	VMOVUPS.Z   (SI), K1, Z4
	VMOVUPS.Z   (DI), K1, Z5
	VFMADD231PS Z5, Z4, Z1

reduce:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	HSUMZ0
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

// func dotAVX2(x, y []float32) float32
TEXT ·dotAVX2(SB), NOSPLIT, $0-52
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	MOVQ   y_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS X8, X8, X8
	CMPQ   CX, $32
	JB     one

loop:
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	CMPQ        CX, $32
	JAE         loop

one:
	CMPQ        CX, $8
	JB          tail
	VMOVUPS     (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         one

tail: // scalar, into X8: a VEX scalar op would clear the upper lanes of an accumulator
	TESTQ       CX, CX
	JE          reduce
	VMOVSS      (SI), X4
	VFMADD231SS (DI), X4, X8
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         tail

reduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUMY0
	VADDSS X8, X0, X0
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

// func sumAVX512(x []float32) float32
TEXT ·sumAVX512(SB), NOSPLIT, $0-28
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	CMPQ   CX, $64
	JB     one

loop:
	VADDPS (SI), Z0, Z0
	VADDPS 64(SI), Z1, Z1
	VADDPS 128(SI), Z2, Z2
	VADDPS 192(SI), Z3, Z3
	ADDQ   $256, SI
	SUBQ   $64, CX
	CMPQ   CX, $64
	JAE    loop

one:
	CMPQ   CX, $16
	JB     tail
	VADDPS (SI), Z0, Z0
	ADDQ   $64, SI
	SUBQ   $16, CX
	JMP    one

tail:
	TESTQ     CX, CX
	JE        reduce
	TAILMASK
	VMOVUPS.Z (SI), K1, Z4
	VADDPS    Z4, Z1, Z1

reduce:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	HSUMZ0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func sumAVX2(x []float32) float32
TEXT ·sumAVX2(SB), NOSPLIT, $0-28
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS X8, X8, X8
	CMPQ   CX, $32
	JB     one

loop:
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	ADDQ   $128, SI
	SUBQ   $32, CX
	CMPQ   CX, $32
	JAE    loop

one:
	CMPQ   CX, $8
	JB     tail
	VADDPS (SI), Y0, Y0
	ADDQ   $32, SI
	SUBQ   $8, CX
	JMP    one

tail:
	TESTQ  CX, CX
	JE     reduce
	VADDSS (SI), X8, X8
	ADDQ   $4, SI
	DECQ   CX
	JMP    tail

reduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUMY0
	VADDSS X8, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func normAVX512(x []float32) float32
//
// Eight float32s at a time are widened to float64 (VCVTPS2PD) and squared
// into eight float64 accumulators with FMAs; the square root is taken in
// float64 and rounded once to float32.
TEXT ·normAVX512(SB), NOSPLIT, $0-28
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	CMPQ   CX, $64
	JB     one

loop:
	VCVTPS2PD   (SI), Z8
	VCVTPS2PD   32(SI), Z9
	VCVTPS2PD   64(SI), Z10
	VCVTPS2PD   96(SI), Z11
	VCVTPS2PD   128(SI), Z12
	VCVTPS2PD   160(SI), Z13
	VCVTPS2PD   192(SI), Z14
	VCVTPS2PD   224(SI), Z15
	VFMADD231PD Z8, Z8, Z0
	VFMADD231PD Z9, Z9, Z1
	VFMADD231PD Z10, Z10, Z2
	VFMADD231PD Z11, Z11, Z3
	VFMADD231PD Z12, Z12, Z4
	VFMADD231PD Z13, Z13, Z5
	VFMADD231PD Z14, Z14, Z6
	VFMADD231PD Z15, Z15, Z7
	ADDQ        $256, SI
	SUBQ        $64, CX
	CMPQ        CX, $64
	JAE         loop

one:
	CMPQ        CX, $8
	JB          tail
	VCVTPS2PD   (SI), Z8
	VFMADD231PD Z8, Z8, Z0
	ADDQ        $32, SI
	SUBQ        $8, CX
	JMP         one

tail:
	TESTQ       CX, CX
	JE          reduce
	TAILMASK
	VMOVUPS.Z   (SI), K1, Z8
	VCVTPS2PD   Y8, Z8
	VFMADD231PD Z8, Z8, Z1

reduce:
	VADDPD        Z1, Z0, Z0
	VADDPD        Z3, Z2, Z2
	VADDPD        Z5, Z4, Z4
	VADDPD        Z7, Z6, Z6
	VADDPD        Z2, Z0, Z0
	VADDPD        Z6, Z4, Z4
	VADDPD        Z4, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPD        Y1, Y0, Y0
	HSUMPDY0
	VSQRTSD       X0, X0, X0
	VCVTSD2SS     X0, X0, X0
	VMOVSS        X0, ret+24(FP)
	VZEROUPPER
	RET

// func normAVX2(x []float32) float32
TEXT ·normAVX2(SB), NOSPLIT, $0-28
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	CMPQ   CX, $32
	JB     one

loop:
	VCVTPS2PD   (SI), Y8
	VCVTPS2PD   16(SI), Y9
	VCVTPS2PD   32(SI), Y10
	VCVTPS2PD   48(SI), Y11
	VCVTPS2PD   64(SI), Y12
	VCVTPS2PD   80(SI), Y13
	VCVTPS2PD   96(SI), Y14
	VCVTPS2PD   112(SI), Y15
	VFMADD231PD Y8, Y8, Y0
	VFMADD231PD Y9, Y9, Y1
	VFMADD231PD Y10, Y10, Y2
	VFMADD231PD Y11, Y11, Y3
	VFMADD231PD Y12, Y12, Y4
	VFMADD231PD Y13, Y13, Y5
	VFMADD231PD Y14, Y14, Y6
	VFMADD231PD Y15, Y15, Y7
	ADDQ        $128, SI
	SUBQ        $32, CX
	CMPQ        CX, $32
	JAE         loop

one:
	CMPQ        CX, $4
	JB          tail
	VCVTPS2PD   (SI), Y8
	VFMADD231PD Y8, Y8, Y0
	ADDQ        $16, SI
	SUBQ        $4, CX
	JMP         one

tail:
	VXORPS X9, X9, X9

tailloop: // scalar, into X9: a VEX scalar op would clear an accumulator's upper lanes
	TESTQ       CX, CX
	JE          reduce
	VCVTSS2SD   (SI), X8, X8
	VFMADD231SD X8, X8, X9
	ADDQ        $4, SI
	DECQ        CX
	JMP         tailloop

reduce:
	VADDPD    Y1, Y0, Y0
	VADDPD    Y3, Y2, Y2
	VADDPD    Y5, Y4, Y4
	VADDPD    Y7, Y6, Y6
	VADDPD    Y2, Y0, Y0
	VADDPD    Y6, Y4, Y4
	VADDPD    Y4, Y0, Y0
	HSUMPDY0
	VADDSD    X9, X0, X0
	VSQRTSD   X0, X0, X0
	VCVTSD2SS X0, X0, X0
	VMOVSS    X0, ret+24(FP)
	VZEROUPPER
	RET

// func scaleAVX512(alpha float32, x []float32)
TEXT ·scaleAVX512(SB), NOSPLIT, $0-32
	VBROADCASTSS alpha+0(FP), Z0
	MOVQ         x_base+8(FP), SI
	MOVQ         x_len+16(FP), CX
	CMPQ         CX, $64
	JB           one

loop:
	VMULPS  (SI), Z0, Z1
	VMULPS  64(SI), Z0, Z2
	VMULPS  128(SI), Z0, Z3
	VMULPS  192(SI), Z0, Z4
	VMOVUPS Z1, (SI)
	VMOVUPS Z2, 64(SI)
	VMOVUPS Z3, 128(SI)
	VMOVUPS Z4, 192(SI)
	ADDQ    $256, SI
	SUBQ    $64, CX
	CMPQ    CX, $64
	JAE     loop

one:
	CMPQ    CX, $16
	JB      tail
	VMULPS  (SI), Z0, Z1
	VMOVUPS Z1, (SI)
	ADDQ    $64, SI
	SUBQ    $16, CX
	JMP     one

tail:
	TESTQ     CX, CX
	JE        done
	TAILMASK
	VMOVUPS.Z (SI), K1, Z1
	VMULPS    Z1, Z0, Z1
	VMOVUPS   Z1, K1, (SI)

done:
	VZEROUPPER
	RET

// func scaleAVX2(alpha float32, x []float32)
TEXT ·scaleAVX2(SB), NOSPLIT, $0-32
	VBROADCASTSS alpha+0(FP), Y0
	MOVQ         x_base+8(FP), SI
	MOVQ         x_len+16(FP), CX
	CMPQ         CX, $32
	JB           one

loop:
	VMULPS  (SI), Y0, Y1
	VMULPS  32(SI), Y0, Y2
	VMULPS  64(SI), Y0, Y3
	VMULPS  96(SI), Y0, Y4
	VMOVUPS Y1, (SI)
	VMOVUPS Y2, 32(SI)
	VMOVUPS Y3, 64(SI)
	VMOVUPS Y4, 96(SI)
	ADDQ    $128, SI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     loop

one:
	CMPQ    CX, $8
	JB      tail
	VMULPS  (SI), Y0, Y1
	VMOVUPS Y1, (SI)
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     one

tail:
	TESTQ  CX, CX
	JE     done
	VMULSS (SI), X0, X1
	VMOVSS X1, (SI)
	ADDQ   $4, SI
	DECQ   CX
	JMP    tail

done:
	VZEROUPPER
	RET

// func fillAVX512(x []float32, v float32)
TEXT ·fillAVX512(SB), NOSPLIT, $0-28
	VBROADCASTSS v+24(FP), Z0
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	CMPQ         CX, $64
	JB           one

loop:
	VMOVUPS Z0, (SI)
	VMOVUPS Z0, 64(SI)
	VMOVUPS Z0, 128(SI)
	VMOVUPS Z0, 192(SI)
	ADDQ    $256, SI
	SUBQ    $64, CX
	CMPQ    CX, $64
	JAE     loop

one:
	CMPQ    CX, $16
	JB      tail
	VMOVUPS Z0, (SI)
	ADDQ    $64, SI
	SUBQ    $16, CX
	JMP     one

tail:
	TESTQ   CX, CX
	JE      done
	TAILMASK
	VMOVUPS Z0, K1, (SI)

done:
	VZEROUPPER
	RET

// func fillAVX2(x []float32, v float32)
TEXT ·fillAVX2(SB), NOSPLIT, $0-28
	VBROADCASTSS v+24(FP), Y0
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	CMPQ         CX, $32
	JB           one

loop:
	VMOVUPS Y0, (SI)
	VMOVUPS Y0, 32(SI)
	VMOVUPS Y0, 64(SI)
	VMOVUPS Y0, 96(SI)
	ADDQ    $128, SI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     loop

one:
	CMPQ    CX, $8
	JB      tail
	VMOVUPS Y0, (SI)
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     one

tail:
	TESTQ  CX, CX
	JE     done
	VMOVSS X0, (SI)
	ADDQ   $4, SI
	DECQ   CX
	JMP    tail

done:
	VZEROUPPER
	RET
