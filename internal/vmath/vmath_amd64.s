//go:build !noasm

#include "textflag.h"

// Tanh and Sigmoid kernels for amd64: AVX-512 (sixteen lanes, ZMM) and AVX2
// (eight lanes, YMM).
//
// Each kernel evaluates TanhScalar's formula with the same float32
// operations in the same order: separate multiplies and adds, no fused
// multiply-adds, and a true division, so every lane rounds exactly as the Go
// code does and the results agree bit for bit. The branches of TanhScalar
// become lane operations:
//
//   - the clamp to ±tanhClamp is VMAXPS then VMINPS with the input as the
//     second (Intel) source operand, which is the one those instructions
//     return when either operand is NaN, so NaN goes through the clamp and
//     the polynomials and comes out NaN; ±Inf clamps to ±tanhClamp;
//   - where |x| < tanhSmall, the result is x itself, selected by a compare
//     mask after the division (so tanh(−0) = −0).
//
// The AVX-512 kernels finish the last 1..15 elements with a masked load and
// store (opmask K1), which never touch memory past the slices; the AVX2
// kernels handle a multiple of 8 elements and the Go caller does the rest.
// Each iteration loads its input before it stores, so dst may be src.
//
// The sigmoid kernels likewise follow SigmoidScalar: −|x| is an OR with the
// sign bit, the clamp at expLow a VMAXPS (NaN passes), the rounding of
// y·log₂e VRNDSCALEPS or VROUNDPS to nearest even, and the choice between
// 1/(1 + e) and e/(1 + e) a compare mask. The scaling by 2ⁿ is VSCALEFPS
// with AVX-512, which rounds p·2ⁿ once, and (p·2ⁿ⁺⁶⁴)·2⁻⁶⁴ with AVX2, as in
// the Go code: the same rounding of the same exact product.

#define C_NCLAMP 0
#define C_CLAMP 32
#define C_ABSMASK 64
#define C_SMALL 96
#define C_A13 128
#define C_A11 160
#define C_A9 192
#define C_A7 224
#define C_A5 256
#define C_A3 288
#define C_A1 320
#define C_B6 352
#define C_B4 384
#define C_B2 416
#define C_B0 448
#define C_SIGN 480
#define C_EXPLOW 512
#define C_LOG2E 544
#define C_C1 576
#define C_C2 608
#define C_P0 640
#define C_P1 672
#define C_P2 704
#define C_P3 736
#define C_P4 768
#define C_P5 800
#define C_ONE 832
#define C_TWOM64 864
#define C_BIAS 896

// The constants, each as eight copies of its float32 (or int32) bit pattern,
// 32 bytes, one YMM register: the AVX2 kernels use them as memory operands,
// the AVX-512 kernels broadcast the first copy. The values are float32(c)
// for the constants c of vmath.go, rounded as the Go code rounds them.
// −tanhClamp
DATA consts<>+0(SB)/4, $0xc0fcf84f
DATA consts<>+4(SB)/4, $0xc0fcf84f
DATA consts<>+8(SB)/4, $0xc0fcf84f
DATA consts<>+12(SB)/4, $0xc0fcf84f
DATA consts<>+16(SB)/4, $0xc0fcf84f
DATA consts<>+20(SB)/4, $0xc0fcf84f
DATA consts<>+24(SB)/4, $0xc0fcf84f
DATA consts<>+28(SB)/4, $0xc0fcf84f
// tanhClamp
DATA consts<>+32(SB)/4, $0x40fcf84f
DATA consts<>+36(SB)/4, $0x40fcf84f
DATA consts<>+40(SB)/4, $0x40fcf84f
DATA consts<>+44(SB)/4, $0x40fcf84f
DATA consts<>+48(SB)/4, $0x40fcf84f
DATA consts<>+52(SB)/4, $0x40fcf84f
DATA consts<>+56(SB)/4, $0x40fcf84f
DATA consts<>+60(SB)/4, $0x40fcf84f
// clears the sign bit
DATA consts<>+64(SB)/4, $0x7fffffff
DATA consts<>+68(SB)/4, $0x7fffffff
DATA consts<>+72(SB)/4, $0x7fffffff
DATA consts<>+76(SB)/4, $0x7fffffff
DATA consts<>+80(SB)/4, $0x7fffffff
DATA consts<>+84(SB)/4, $0x7fffffff
DATA consts<>+88(SB)/4, $0x7fffffff
DATA consts<>+92(SB)/4, $0x7fffffff
// tanhSmall
DATA consts<>+96(SB)/4, $0x39d1b717
DATA consts<>+100(SB)/4, $0x39d1b717
DATA consts<>+104(SB)/4, $0x39d1b717
DATA consts<>+108(SB)/4, $0x39d1b717
DATA consts<>+112(SB)/4, $0x39d1b717
DATA consts<>+116(SB)/4, $0x39d1b717
DATA consts<>+120(SB)/4, $0x39d1b717
DATA consts<>+124(SB)/4, $0x39d1b717
// tanhA13
DATA consts<>+128(SB)/4, $0xa59f25c0
DATA consts<>+132(SB)/4, $0xa59f25c0
DATA consts<>+136(SB)/4, $0xa59f25c0
DATA consts<>+140(SB)/4, $0xa59f25c0
DATA consts<>+144(SB)/4, $0xa59f25c0
DATA consts<>+148(SB)/4, $0xa59f25c0
DATA consts<>+152(SB)/4, $0xa59f25c0
DATA consts<>+156(SB)/4, $0xa59f25c0
// tanhA11
DATA consts<>+160(SB)/4, $0x2a61337e
DATA consts<>+164(SB)/4, $0x2a61337e
DATA consts<>+168(SB)/4, $0x2a61337e
DATA consts<>+172(SB)/4, $0x2a61337e
DATA consts<>+176(SB)/4, $0x2a61337e
DATA consts<>+180(SB)/4, $0x2a61337e
DATA consts<>+184(SB)/4, $0x2a61337e
DATA consts<>+188(SB)/4, $0x2a61337e
// tanhA9
DATA consts<>+192(SB)/4, $0xaebd37ff
DATA consts<>+196(SB)/4, $0xaebd37ff
DATA consts<>+200(SB)/4, $0xaebd37ff
DATA consts<>+204(SB)/4, $0xaebd37ff
DATA consts<>+208(SB)/4, $0xaebd37ff
DATA consts<>+212(SB)/4, $0xaebd37ff
DATA consts<>+216(SB)/4, $0xaebd37ff
DATA consts<>+220(SB)/4, $0xaebd37ff
// tanhA7
DATA consts<>+224(SB)/4, $0x335c0041
DATA consts<>+228(SB)/4, $0x335c0041
DATA consts<>+232(SB)/4, $0x335c0041
DATA consts<>+236(SB)/4, $0x335c0041
DATA consts<>+240(SB)/4, $0x335c0041
DATA consts<>+244(SB)/4, $0x335c0041
DATA consts<>+248(SB)/4, $0x335c0041
DATA consts<>+252(SB)/4, $0x335c0041
// tanhA5
DATA consts<>+256(SB)/4, $0x3779434a
DATA consts<>+260(SB)/4, $0x3779434a
DATA consts<>+264(SB)/4, $0x3779434a
DATA consts<>+268(SB)/4, $0x3779434a
DATA consts<>+272(SB)/4, $0x3779434a
DATA consts<>+276(SB)/4, $0x3779434a
DATA consts<>+280(SB)/4, $0x3779434a
DATA consts<>+284(SB)/4, $0x3779434a
// tanhA3
DATA consts<>+288(SB)/4, $0x3a270ded
DATA consts<>+292(SB)/4, $0x3a270ded
DATA consts<>+296(SB)/4, $0x3a270ded
DATA consts<>+300(SB)/4, $0x3a270ded
DATA consts<>+304(SB)/4, $0x3a270ded
DATA consts<>+308(SB)/4, $0x3a270ded
DATA consts<>+312(SB)/4, $0x3a270ded
DATA consts<>+316(SB)/4, $0x3a270ded
// tanhA1
DATA consts<>+320(SB)/4, $0x3ba059dc
DATA consts<>+324(SB)/4, $0x3ba059dc
DATA consts<>+328(SB)/4, $0x3ba059dc
DATA consts<>+332(SB)/4, $0x3ba059dc
DATA consts<>+336(SB)/4, $0x3ba059dc
DATA consts<>+340(SB)/4, $0x3ba059dc
DATA consts<>+344(SB)/4, $0x3ba059dc
DATA consts<>+348(SB)/4, $0x3ba059dc
// tanhB6
DATA consts<>+352(SB)/4, $0x35a0d3d8
DATA consts<>+356(SB)/4, $0x35a0d3d8
DATA consts<>+360(SB)/4, $0x35a0d3d8
DATA consts<>+364(SB)/4, $0x35a0d3d8
DATA consts<>+368(SB)/4, $0x35a0d3d8
DATA consts<>+372(SB)/4, $0x35a0d3d8
DATA consts<>+376(SB)/4, $0x35a0d3d8
DATA consts<>+380(SB)/4, $0x35a0d3d8
// tanhB4
DATA consts<>+384(SB)/4, $0x38f895d6
DATA consts<>+388(SB)/4, $0x38f895d6
DATA consts<>+392(SB)/4, $0x38f895d6
DATA consts<>+396(SB)/4, $0x38f895d6
DATA consts<>+400(SB)/4, $0x38f895d6
DATA consts<>+404(SB)/4, $0x38f895d6
DATA consts<>+408(SB)/4, $0x38f895d6
DATA consts<>+412(SB)/4, $0x38f895d6
// tanhB2
DATA consts<>+416(SB)/4, $0x3b14aa05
DATA consts<>+420(SB)/4, $0x3b14aa05
DATA consts<>+424(SB)/4, $0x3b14aa05
DATA consts<>+428(SB)/4, $0x3b14aa05
DATA consts<>+432(SB)/4, $0x3b14aa05
DATA consts<>+436(SB)/4, $0x3b14aa05
DATA consts<>+440(SB)/4, $0x3b14aa05
DATA consts<>+444(SB)/4, $0x3b14aa05
// tanhB0
DATA consts<>+448(SB)/4, $0x3ba059dd
DATA consts<>+452(SB)/4, $0x3ba059dd
DATA consts<>+456(SB)/4, $0x3ba059dd
DATA consts<>+460(SB)/4, $0x3ba059dd
DATA consts<>+464(SB)/4, $0x3ba059dd
DATA consts<>+468(SB)/4, $0x3ba059dd
DATA consts<>+472(SB)/4, $0x3ba059dd
DATA consts<>+476(SB)/4, $0x3ba059dd
// the sign bit
DATA consts<>+480(SB)/4, $0x80000000
DATA consts<>+484(SB)/4, $0x80000000
DATA consts<>+488(SB)/4, $0x80000000
DATA consts<>+492(SB)/4, $0x80000000
DATA consts<>+496(SB)/4, $0x80000000
DATA consts<>+500(SB)/4, $0x80000000
DATA consts<>+504(SB)/4, $0x80000000
DATA consts<>+508(SB)/4, $0x80000000
// expLow
DATA consts<>+512(SB)/4, $0xc2d00000
DATA consts<>+516(SB)/4, $0xc2d00000
DATA consts<>+520(SB)/4, $0xc2d00000
DATA consts<>+524(SB)/4, $0xc2d00000
DATA consts<>+528(SB)/4, $0xc2d00000
DATA consts<>+532(SB)/4, $0xc2d00000
DATA consts<>+536(SB)/4, $0xc2d00000
DATA consts<>+540(SB)/4, $0xc2d00000
// expLog2e
DATA consts<>+544(SB)/4, $0x3fb8aa3b
DATA consts<>+548(SB)/4, $0x3fb8aa3b
DATA consts<>+552(SB)/4, $0x3fb8aa3b
DATA consts<>+556(SB)/4, $0x3fb8aa3b
DATA consts<>+560(SB)/4, $0x3fb8aa3b
DATA consts<>+564(SB)/4, $0x3fb8aa3b
DATA consts<>+568(SB)/4, $0x3fb8aa3b
DATA consts<>+572(SB)/4, $0x3fb8aa3b
// expC1
DATA consts<>+576(SB)/4, $0x3f318000
DATA consts<>+580(SB)/4, $0x3f318000
DATA consts<>+584(SB)/4, $0x3f318000
DATA consts<>+588(SB)/4, $0x3f318000
DATA consts<>+592(SB)/4, $0x3f318000
DATA consts<>+596(SB)/4, $0x3f318000
DATA consts<>+600(SB)/4, $0x3f318000
DATA consts<>+604(SB)/4, $0x3f318000
// expC2
DATA consts<>+608(SB)/4, $0xb95e8083
DATA consts<>+612(SB)/4, $0xb95e8083
DATA consts<>+616(SB)/4, $0xb95e8083
DATA consts<>+620(SB)/4, $0xb95e8083
DATA consts<>+624(SB)/4, $0xb95e8083
DATA consts<>+628(SB)/4, $0xb95e8083
DATA consts<>+632(SB)/4, $0xb95e8083
DATA consts<>+636(SB)/4, $0xb95e8083
// expP0
DATA consts<>+640(SB)/4, $0x39506967
DATA consts<>+644(SB)/4, $0x39506967
DATA consts<>+648(SB)/4, $0x39506967
DATA consts<>+652(SB)/4, $0x39506967
DATA consts<>+656(SB)/4, $0x39506967
DATA consts<>+660(SB)/4, $0x39506967
DATA consts<>+664(SB)/4, $0x39506967
DATA consts<>+668(SB)/4, $0x39506967
// expP1
DATA consts<>+672(SB)/4, $0x3ab743ce
DATA consts<>+676(SB)/4, $0x3ab743ce
DATA consts<>+680(SB)/4, $0x3ab743ce
DATA consts<>+684(SB)/4, $0x3ab743ce
DATA consts<>+688(SB)/4, $0x3ab743ce
DATA consts<>+692(SB)/4, $0x3ab743ce
DATA consts<>+696(SB)/4, $0x3ab743ce
DATA consts<>+700(SB)/4, $0x3ab743ce
// expP2
DATA consts<>+704(SB)/4, $0x3c088908
DATA consts<>+708(SB)/4, $0x3c088908
DATA consts<>+712(SB)/4, $0x3c088908
DATA consts<>+716(SB)/4, $0x3c088908
DATA consts<>+720(SB)/4, $0x3c088908
DATA consts<>+724(SB)/4, $0x3c088908
DATA consts<>+728(SB)/4, $0x3c088908
DATA consts<>+732(SB)/4, $0x3c088908
// expP3
DATA consts<>+736(SB)/4, $0x3d2aa9c1
DATA consts<>+740(SB)/4, $0x3d2aa9c1
DATA consts<>+744(SB)/4, $0x3d2aa9c1
DATA consts<>+748(SB)/4, $0x3d2aa9c1
DATA consts<>+752(SB)/4, $0x3d2aa9c1
DATA consts<>+756(SB)/4, $0x3d2aa9c1
DATA consts<>+760(SB)/4, $0x3d2aa9c1
DATA consts<>+764(SB)/4, $0x3d2aa9c1
// expP4
DATA consts<>+768(SB)/4, $0x3e2aaaaa
DATA consts<>+772(SB)/4, $0x3e2aaaaa
DATA consts<>+776(SB)/4, $0x3e2aaaaa
DATA consts<>+780(SB)/4, $0x3e2aaaaa
DATA consts<>+784(SB)/4, $0x3e2aaaaa
DATA consts<>+788(SB)/4, $0x3e2aaaaa
DATA consts<>+792(SB)/4, $0x3e2aaaaa
DATA consts<>+796(SB)/4, $0x3e2aaaaa
// expP5 (0.5)
DATA consts<>+800(SB)/4, $0x3f000000
DATA consts<>+804(SB)/4, $0x3f000000
DATA consts<>+808(SB)/4, $0x3f000000
DATA consts<>+812(SB)/4, $0x3f000000
DATA consts<>+816(SB)/4, $0x3f000000
DATA consts<>+820(SB)/4, $0x3f000000
DATA consts<>+824(SB)/4, $0x3f000000
DATA consts<>+828(SB)/4, $0x3f000000
// 1
DATA consts<>+832(SB)/4, $0x3f800000
DATA consts<>+836(SB)/4, $0x3f800000
DATA consts<>+840(SB)/4, $0x3f800000
DATA consts<>+844(SB)/4, $0x3f800000
DATA consts<>+848(SB)/4, $0x3f800000
DATA consts<>+852(SB)/4, $0x3f800000
DATA consts<>+856(SB)/4, $0x3f800000
DATA consts<>+860(SB)/4, $0x3f800000
// 2⁻⁶⁴
DATA consts<>+864(SB)/4, $0x1f800000
DATA consts<>+868(SB)/4, $0x1f800000
DATA consts<>+872(SB)/4, $0x1f800000
DATA consts<>+876(SB)/4, $0x1f800000
DATA consts<>+880(SB)/4, $0x1f800000
DATA consts<>+884(SB)/4, $0x1f800000
DATA consts<>+888(SB)/4, $0x1f800000
DATA consts<>+892(SB)/4, $0x1f800000
// the int32 127 + 64
DATA consts<>+896(SB)/4, $0x000000bf
DATA consts<>+900(SB)/4, $0x000000bf
DATA consts<>+904(SB)/4, $0x000000bf
DATA consts<>+908(SB)/4, $0x000000bf
DATA consts<>+912(SB)/4, $0x000000bf
DATA consts<>+916(SB)/4, $0x000000bf
DATA consts<>+920(SB)/4, $0x000000bf
DATA consts<>+924(SB)/4, $0x000000bf
GLOBL consts<>(SB), RODATA|NOPTR, $928

// TAILMASK sets K1 to the low CX bits (CX in 1..15). Clobbers AX.
#define TAILMASK \
	MOVL  $1, AX; \
	SHLL  CX, AX; \
	DECL  AX;     \
	KMOVW AX, K1

// The AVX-512 loops run two registers (32 elements) per iteration, then one,
// then a masked tail; the AVX2 loops one register per iteration. Each
// kernel loads its constants into registers first (LOAD… macros), and the
// body is a macro of the same name in capitals.

// LOADTANHZ broadcasts tanhAVX512's constants: Z16 −clamp, Z17 clamp,
// Z18 |·| mask, Z19 small, Z20..Z26 a13..a1, Z27..Z30 b6..b0. Sets R8.
#define LOADTANHZ \
	LEAQ         consts<>(SB), R8;    \
	VBROADCASTSS C_NCLAMP(R8), Z16;  \
	VBROADCASTSS C_CLAMP(R8), Z17;   \
	VBROADCASTSS C_ABSMASK(R8), Z18; \
	VBROADCASTSS C_SMALL(R8), Z19;   \
	VBROADCASTSS C_A13(R8), Z20;     \
	VBROADCASTSS C_A11(R8), Z21;     \
	VBROADCASTSS C_A9(R8), Z22;      \
	VBROADCASTSS C_A7(R8), Z23;      \
	VBROADCASTSS C_A5(R8), Z24;      \
	VBROADCASTSS C_A3(R8), Z25;      \
	VBROADCASTSS C_A1(R8), Z26;      \
	VBROADCASTSS C_B6(R8), Z27;      \
	VBROADCASTSS C_B4(R8), Z28;      \
	VBROADCASTSS C_B2(R8), Z29;      \
	VBROADCASTSS C_B0(R8), Z30

// TANHZ sets r = TanhScalar(x) in sixteen lanes. x is left unchanged; c, x2,
// p, q and the opmask k are scratch. Predicate 0x11 is LT_OQ: |x| < small,
// false for NaN.
#define TANHZ(x, c, x2, p, q, r, k) \
	VMAXPS  x, Z16, c;        \
	VMINPS  c, Z17, c;        \
	VMULPS  c, c, x2;         \
	VMULPS  Z20, x2, p;       \
	VADDPS  Z21, p, p;        \
	VMULPS  x2, p, p;         \
	VADDPS  Z22, p, p;        \
	VMULPS  x2, p, p;         \
	VADDPS  Z23, p, p;        \
	VMULPS  x2, p, p;         \
	VADDPS  Z24, p, p;        \
	VMULPS  x2, p, p;         \
	VADDPS  Z25, p, p;        \
	VMULPS  x2, p, p;         \
	VADDPS  Z26, p, p;        \
	VMULPS  c, p, p;          \
	VMULPS  Z27, x2, q;       \
	VADDPS  Z28, q, q;        \
	VMULPS  x2, q, q;         \
	VADDPS  Z29, q, q;        \
	VMULPS  x2, q, q;         \
	VADDPS  Z30, q, q;        \
	VDIVPS  q, p, r;          \
	VPANDD  Z18, x, c;        \
	VCMPPS  $0x11, Z19, c, k; \
	VMOVAPS x, k, r

// LOADSIGMOIDZ broadcasts sigmoidAVX512's constants: Z16 sign bit,
// Z17 expLow, Z18 log₂e, Z19 c1, Z20 c2, Z21..Z26 p0..p5, Z27 1, Z28 0.
// Sets R8.
#define LOADSIGMOIDZ \
	LEAQ         consts<>(SB), R8;   \
	VBROADCASTSS C_SIGN(R8), Z16;   \
	VBROADCASTSS C_EXPLOW(R8), Z17; \
	VBROADCASTSS C_LOG2E(R8), Z18;  \
	VBROADCASTSS C_C1(R8), Z19;     \
	VBROADCASTSS C_C2(R8), Z20;     \
	VBROADCASTSS C_P0(R8), Z21;     \
	VBROADCASTSS C_P1(R8), Z22;     \
	VBROADCASTSS C_P2(R8), Z23;     \
	VBROADCASTSS C_P3(R8), Z24;     \
	VBROADCASTSS C_P4(R8), Z25;     \
	VBROADCASTSS C_P5(R8), Z26;     \
	VBROADCASTSS C_ONE(R8), Z27;    \
	VPXORD       Z28, Z28, Z28

// SIGMOIDZ sets r = SigmoidScalar(x) in sixteen lanes. x is left unchanged;
// y, n, t, r2, p, e, d and the opmask k are scratch. VRNDSCALEPS $0 rounds
// to nearest even; predicate 0x1d is GE_OQ: x ≥ 0, false for NaN.
#define SIGMOIDZ(x, y, n, t, r2, p, e, d, r, k) \
	VPORD       Z16, x, y;        \
	VMAXPS      y, Z17, y;        \
	VMULPS      Z18, y, n;        \
	VRNDSCALEPS $0, n, n;         \
	VMULPS      Z19, n, t;        \
	VSUBPS      t, y, r;          \
	VMULPS      Z20, n, t;        \
	VSUBPS      t, r, r;          \
	VMULPS      r, r, r2;         \
	VMULPS      Z21, r, p;        \
	VADDPS      Z22, p, p;        \
	VMULPS      r, p, p;          \
	VADDPS      Z23, p, p;        \
	VMULPS      r, p, p;          \
	VADDPS      Z24, p, p;        \
	VMULPS      r, p, p;          \
	VADDPS      Z25, p, p;        \
	VMULPS      r, p, p;          \
	VADDPS      Z26, p, p;        \
	VMULPS      r2, p, p;         \
	VADDPS      r, p, p;          \
	VADDPS      Z27, p, p;        \
	VSCALEFPS   n, p, e;          \
	VADDPS      Z27, e, d;        \
	VCMPPS      $0x1d, Z28, x, k; \
	VMOVAPS     Z27, k, e;        \
	VDIVPS      d, e, r

// func tanhAVX512(dst, src []float32)
TEXT ·tanhAVX512(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	LOADTANHZ
	CMPQ CX, $32
	JB   one

loop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z8
	TANHZ(Z0, Z1, Z2, Z3, Z4, Z5, K2)
	TANHZ(Z8, Z9, Z10, Z11, Z12, Z13, K3)
	VMOVUPS Z5, (DI)
	VMOVUPS Z13, 64(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     loop

one:
	CMPQ    CX, $16
	JB      tail
	VMOVUPS (SI), Z0
	TANHZ(Z0, Z1, Z2, Z3, Z4, Z5, K2)
	VMOVUPS Z5, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX

tail:
	TESTQ     CX, CX
	JE        done
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0
	TANHZ(Z0, Z1, Z2, Z3, Z4, Z5, K2)
	VMOVUPS   Z5, K1, (DI)

done:
	VZEROUPPER
	RET

// func sigmoidAVX512(dst, src []float32)
TEXT ·sigmoidAVX512(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	LOADSIGMOIDZ
	CMPQ CX, $32
	JB   one

loop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z10
	SIGMOIDZ(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, K2)
	SIGMOIDZ(Z10, Z11, Z12, Z13, Z14, Z15, Z29, Z30, Z31, K3)
	VMOVUPS Z8, (DI)
	VMOVUPS Z31, 64(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JAE     loop

one:
	CMPQ    CX, $16
	JB      tail
	VMOVUPS (SI), Z0
	SIGMOIDZ(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, K2)
	VMOVUPS Z8, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX

tail:
	TESTQ     CX, CX
	JE        done
	TAILMASK
	VMOVUPS.Z (SI), K1, Z0
	SIGMOIDZ(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, K2)
	VMOVUPS   Z8, K1, (DI)

done:
	VZEROUPPER
	RET

// The AVX2 kernels have sixteen registers: they keep a few constants in
// Y12..Y15 and read the other constants from memory (R8 = consts).

// LOADTANHY loads tanhAVX2's constants: Y15 −clamp, Y14 clamp, Y13 |·| mask,
// Y12 small. Sets R8.
#define LOADTANHY \
	LEAQ    consts<>(SB), R8;    \
	VMOVUPS C_NCLAMP(R8), Y15;  \
	VMOVUPS C_CLAMP(R8), Y14;   \
	VMOVUPS C_ABSMASK(R8), Y13; \
	VMOVUPS C_SMALL(R8), Y12

// TANHY sets r = TanhScalar(x) in eight lanes. x is left unchanged; c, x2,
// p, q and a are scratch. Predicate 0x11 as in TANHZ.
#define TANHY(x, c, x2, p, q, r, a) \
	VMAXPS    x, Y15, c;        \
	VMINPS    c, Y14, c;        \
	VMULPS    c, c, x2;         \
	VMULPS    C_A13(R8), x2, p; \
	VADDPS    C_A11(R8), p, p;  \
	VMULPS    x2, p, p;         \
	VADDPS    C_A9(R8), p, p;   \
	VMULPS    x2, p, p;         \
	VADDPS    C_A7(R8), p, p;   \
	VMULPS    x2, p, p;         \
	VADDPS    C_A5(R8), p, p;   \
	VMULPS    x2, p, p;         \
	VADDPS    C_A3(R8), p, p;   \
	VMULPS    x2, p, p;         \
	VADDPS    C_A1(R8), p, p;   \
	VMULPS    c, p, p;          \
	VMULPS    C_B6(R8), x2, q;  \
	VADDPS    C_B4(R8), q, q;   \
	VMULPS    x2, q, q;         \
	VADDPS    C_B2(R8), q, q;   \
	VMULPS    x2, q, q;         \
	VADDPS    C_B0(R8), q, q;   \
	VDIVPS    q, p, r;          \
	VANDPS    Y13, x, a;        \
	VCMPPS    $0x11, Y12, a, a; \
	VBLENDVPS a, x, r, r

// LOADSIGMOIDY loads sigmoidAVX2's constants: Y15 sign bit, Y14 expLow,
// Y13 1, Y12 0. Sets R8.
#define LOADSIGMOIDY \
	LEAQ    consts<>(SB), R8;   \
	VMOVUPS C_SIGN(R8), Y15;   \
	VMOVUPS C_EXPLOW(R8), Y14; \
	VMOVUPS C_ONE(R8), Y13;    \
	VXORPS  Y12, Y12, Y12

// SIGMOIDY sets r = SigmoidScalar(x) in eight lanes. x is left unchanged;
// y, n, t, r2, p, e and d are scratch. VROUNDPS $0 rounds to nearest even,
// and VCVTPS2DQ converts the integral n exactly; predicate 0x1d as in
// SIGMOIDZ.
#define SIGMOIDY(x, y, n, t, r2, p, e, d, r) \
	VORPS     Y15, x, y;           \
	VMAXPS    y, Y14, y;           \
	VMULPS    C_LOG2E(R8), y, n;   \
	VROUNDPS  $0, n, n;            \
	VMULPS    C_C1(R8), n, t;      \
	VSUBPS    t, y, r;             \
	VMULPS    C_C2(R8), n, t;      \
	VSUBPS    t, r, r;             \
	VMULPS    r, r, r2;            \
	VMULPS    C_P0(R8), r, p;      \
	VADDPS    C_P1(R8), p, p;      \
	VMULPS    r, p, p;             \
	VADDPS    C_P2(R8), p, p;      \
	VMULPS    r, p, p;             \
	VADDPS    C_P3(R8), p, p;      \
	VMULPS    r, p, p;             \
	VADDPS    C_P4(R8), p, p;      \
	VMULPS    r, p, p;             \
	VADDPS    C_P5(R8), p, p;      \
	VMULPS    r2, p, p;            \
	VADDPS    r, p, p;             \
	VADDPS    Y13, p, p;           \
	VCVTPS2DQ n, n;                \
	VPADDD    C_BIAS(R8), n, n;    \
	VPSLLD    $23, n, n;           \
	VMULPS    n, p, p;             \
	VMULPS    C_TWOM64(R8), p, e;  \
	VADDPS    Y13, e, d;           \
	VCMPPS    $0x1d, Y12, x, t;    \
	VBLENDVPS t, Y13, e, e;        \
	VDIVPS    d, e, r

// func tanhAVX2(dst, src []float32)
TEXT ·tanhAVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	LOADTANHY
	SHRQ $3, CX
	JZ   done

loop:
	VMOVUPS (SI), Y0
	TANHY(Y0, Y1, Y2, Y3, Y4, Y5, Y6)
	VMOVUPS Y5, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET

// func sigmoidAVX2(dst, src []float32)
TEXT ·sigmoidAVX2(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	LOADSIGMOIDY
	SHRQ $3, CX
	JZ   done

loop:
	VMOVUPS (SI), Y0
	SIGMOIDY(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8)
	VMOVUPS Y8, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET
