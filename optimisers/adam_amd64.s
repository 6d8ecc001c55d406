//go:build !noasm

#include "textflag.h"

// Adam's fused step (adam.fuse without AMSGrad) over 8 (AVX2) or 16
// (AVX-512) floats at a time. Each lane does exactly the operations of the
// Go loop, in the same order and each rounded once (no FMA), so the result
// is bit for bit the Go loop's:
//
//	mi = m·b1 + c1·g;  vi = v·b2 + (c2·g)·g;  m, v = mi, vi
//	θ  = θ·keep − (a·mi)/(√vi + e)
//
// The kernels handle len(θ) rounded down to a multiple of the lane count;
// the caller finishes the rest. k points to an adam value: b1, c1, b2, c2,
// a, e at byte offsets 0, 4, 8, 12, 16, 20 and keep at 28.

// func adamFuseAVX2(k *adam, θ, g, m, v []float32)
TEXT ·adamFuseAVX2(SB), NOSPLIT, $0-104
	MOVQ         k+0(FP), DX
	VBROADCASTSS 0(DX), Y8
	VBROADCASTSS 4(DX), Y9
	VBROADCASTSS 8(DX), Y10
	VBROADCASTSS 12(DX), Y11
	VBROADCASTSS 16(DX), Y12
	VBROADCASTSS 20(DX), Y13
	VBROADCASTSS 28(DX), Y14
	MOVQ         θ_base+8(FP), DI
	MOVQ         θ_len+16(FP), CX
	MOVQ         g_base+32(FP), SI
	MOVQ         m_base+56(FP), R8
	MOVQ         v_base+80(FP), R9
	SHRQ         $3, CX
	JZ           done2

loop2:
	VMOVUPS (SI), Y0
	VMULPS  (R8), Y8, Y1
	VMULPS  Y0, Y9, Y2
	VADDPS  Y2, Y1, Y1
	VMOVUPS Y1, (R8)
	VMULPS  (R9), Y10, Y3
	VMULPS  Y0, Y11, Y4
	VMULPS  Y0, Y4, Y4
	VADDPS  Y4, Y3, Y3
	VMOVUPS Y3, (R9)
	VSQRTPS Y3, Y3
	VADDPS  Y13, Y3, Y3
	VMULPS  Y1, Y12, Y1
	VDIVPS  Y3, Y1, Y1
	VMULPS  (DI), Y14, Y5
	VSUBPS  Y1, Y5, Y5
	VMOVUPS Y5, (DI)
	ADDQ    $32, SI
	ADDQ    $32, R8
	ADDQ    $32, R9
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop2

done2:
	VZEROUPPER
	RET

// func adamFuseAVX512(k *adam, θ, g, m, v []float32)
TEXT ·adamFuseAVX512(SB), NOSPLIT, $0-104
	MOVQ         k+0(FP), DX
	VBROADCASTSS 0(DX), Z8
	VBROADCASTSS 4(DX), Z9
	VBROADCASTSS 8(DX), Z10
	VBROADCASTSS 12(DX), Z11
	VBROADCASTSS 16(DX), Z12
	VBROADCASTSS 20(DX), Z13
	VBROADCASTSS 28(DX), Z14
	MOVQ         θ_base+8(FP), DI
	MOVQ         θ_len+16(FP), CX
	MOVQ         g_base+32(FP), SI
	MOVQ         m_base+56(FP), R8
	MOVQ         v_base+80(FP), R9
	SHRQ         $4, CX
	JZ           done5

loop5:
	VMOVUPS (SI), Z0
	VMULPS  (R8), Z8, Z1
	VMULPS  Z0, Z9, Z2
	VADDPS  Z2, Z1, Z1
	VMOVUPS Z1, (R8)
	VMULPS  (R9), Z10, Z3
	VMULPS  Z0, Z11, Z4
	VMULPS  Z0, Z4, Z4
	VADDPS  Z4, Z3, Z3
	VMOVUPS Z3, (R9)
	VSQRTPS Z3, Z3
	VADDPS  Z13, Z3, Z3
	VMULPS  Z1, Z12, Z1
	VDIVPS  Z3, Z1, Z1
	VMULPS  (DI), Z14, Z5
	VSUBPS  Z1, Z5, Z5
	VMOVUPS Z5, (DI)
	ADDQ    $64, SI
	ADDQ    $64, R8
	ADDQ    $64, R9
	ADDQ    $64, DI
	DECQ    CX
	JNZ     loop5

done5:
	VZEROUPPER
	RET
