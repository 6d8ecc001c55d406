# Generates flat/gemm_amd64.s: the micro-kernels are generated here (one
# function, instantiated for AVX-512 and AVX2 tile shapes); the packing
# routines are hand-written in pack_amd64.s.in and appended. Run from flat/:
#
#     go generate  (python3 gen/gemm_amd64.py > gemm_amd64.s)
import sys
out = []
w = out.append

def kernel(name, mr, vecs, vw, reg, bcst_regs, unroll, comment):
    # vecs: vectors per row; vw: floats per vector; reg: 'Z' or 'Y'
    nr = vecs * vw
    vb = vw * 4  # bytes per vector
    nacc = mr * vecs
    breg = [nacc + v for v in range(vecs)]
    w(comment)
    w("TEXT ·%s(SB), NOSPLIT, $0-48" % name)
    w("\tMOVQ k+0(FP), CX")
    w("\tMOVQ a+8(FP), AX")
    w("\tMOVQ b+16(FP), BX")
    w("\tMOVQ c+24(FP), DI")
    w("\tMOVQ ldc+32(FP), DX")
    w("\tSHLQ $2, DX")
    w("")
    w("\t// Prefetch the C tile; it arrives while the k loop runs.")
    w("\tMOVQ DI, R9")
    for i in range(mr):
        for l in range(0, nr * 4, 64):
            w("\tPREFETCHT0 %d(R9)" % l)
        if i < mr - 1:
            w("\tADDQ DX, R9")
    w("")
    for r in range(nacc):
        if reg == 'Z':
            w("\tVPXORD Z%d, Z%d, Z%d" % (r, r, r))
        else:
            w("\tVXORPS Y%d, Y%d, Y%d" % (r, r, r))
    def step(ao, bo):
        for v in range(vecs):
            w("\tVMOVUPS %d(BX), %s%d" % (bo + v * vb, reg, breg[v]))
        for i in range(mr):
            br = bcst_regs[i % len(bcst_regs)]
            w("\tVBROADCASTSS %d(AX), %s%d" % (ao + 4 * i, reg, br))
            for v in range(vecs):
                w("\tVFMADD231PS %s%d, %s%d, %s%d" % (reg, breg[v], reg, br, reg, i * vecs + v))
    w("")
    w("\tMOVQ CX, R8")
    w("\tSHRQ $%d, R8" % {1: 0, 2: 1, 4: 2, 8: 3}[unroll])
    w("\tJZ %s_tail" % name)
    w("")
    w("%s_loop%d:" % (name, unroll))
    for u in range(unroll):
        step(u * mr * 4, u * nr * 4)
    w("\tADDQ $%d, AX" % (unroll * mr * 4))
    w("\tADDQ $%d, BX" % (unroll * nr * 4))
    w("\tDECQ R8")
    w("\tJNZ %s_loop%d" % (name, unroll))
    w("")
    w("%s_tail:" % name)
    w("\tANDQ $%d, CX" % (unroll - 1))
    w("\tJZ %s_done" % name)
    w("")
    w("%s_loop1:" % name)
    step(0, 0)
    w("\tADDQ $%d, AX" % (mr * 4))
    w("\tADDQ $%d, BX" % (nr * 4))
    w("\tDECQ CX")
    w("\tJNZ %s_loop1" % name)
    w("")
    w("%s_done:" % name)
    # alpha
    w("\tVBROADCASTSS alpha+40(FP), %s%d" % (reg, breg[0]))
    for r in range(nacc):
        w("\tVMULPS %s%d, %s%d, %s%d" % (reg, breg[0], reg, r, reg, r))
    w("\tMOVL beta+44(FP), R8")
    w("\tANDL $0x7fffffff, R8")
    w("\tJZ %s_store" % name)
    w("")
    w("\t// C = beta·C + alpha·AB")
    w("\tVBROADCASTSS beta+44(FP), %s%d" % (reg, breg[1]))
    for i in range(mr):
        for v in range(vecs):
            w("\tVFMADD231PS %d(DI), %s%d, %s%d" % (v * vb, reg, breg[1], reg, i * vecs + v))
        for v in range(vecs):
            w("\tVMOVUPS %s%d, %d(DI)" % (reg, i * vecs + v, v * vb))
        if i < mr - 1:
            w("\tADDQ DX, DI")
    w("\tVZEROUPPER")
    w("\tRET")
    w("")
    w("%s_store:" % name)
    w("\t// beta == 0: C = alpha·AB, C is not read")
    for i in range(mr):
        for v in range(vecs):
            w("\tVMOVUPS %s%d, %d(DI)" % (reg, i * vecs + v, v * vb))
        if i < mr - 1:
            w("\tADDQ DX, DI")
    w("\tVZEROUPPER")
    w("\tRET")
    w("")

w("// Gemm micro-kernels; gemm.go describes the packed panels they read and")
w("// gemm_amd64.go their shapes and blocking. The k loop is unrolled four times.")
w("")
w("//go:build amd64 && !noasm")
w("")
w('#include "textflag.h"')
w("")
mr512 = int(sys.argv[1]) if len(sys.argv) > 1 else 12
kernel("gemmKernelAVX512", mr512, 2, 16, "Z", list(range(2*mr512+2, 32)), 4,
"""// func gemmKernelAVX512(k int, a, b, c *float32, ldc int, alpha, beta float32)
//
// The AVX-512 micro-kernel: a %d×32 tile of C in Z0-Z%d (two ZMM per row),
// the packed B row in Z%d-Z%d, A broadcasts rotating through Z26-Z31. Per p it
// reads %d floats of packed A and 32 of packed B. It sets
// C = alpha·A·B + beta·C (C not read when beta == 0); k ≥ 0.""" % (mr512, 2*mr512-1, 2*mr512, 2*mr512+1, mr512))
kernel("gemmKernelAVX2", 6, 2, 8, 'Y', [14, 15], 4,
"""// func gemmKernelAVX2(k int, a, b, c *float32, ldc int, alpha, beta float32)
//
// The AVX2+FMA micro-kernel: a 6×16 tile of C in Y0-Y11 (two YMM per row),
// the packed B row in Y12-Y13, A broadcasts in Y14-Y15. Per p it reads 6
// floats of packed A and 16 of packed B. It sets C = alpha·A·B + beta·C
// (C not read when beta == 0); k ≥ 0.""")
import os
out.append(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "pack_amd64.s.in")).read())
print("\n".join(out))
