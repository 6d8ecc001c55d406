# Generates block_amd64.s (acc8AVX512, acc8cAVX512): go generate in
# internal/conv, or python3 gen/block_amd64.py > block_amd64.s there.
L = []


def e(s=""):
    L.append(s)


def gen(fn, compact):
    e()
    if compact:
        e("// func %s(acc *float32, ld, n int, src *float32, offs *int, nt int, w *float32, ws, wt, pf int, tbl *int, bias *float32, relu int)" % fn)
        e("//")
        e("// acc8AVX512, storing each vector v of 16 sums (columns 16v…16v+15) as")
        e("// two masked stores: the lanes of mask tbl[4v+1] at column tbl[4v] of")
        e("// each acc row, those of mask tbl[4v+3] at column tbl[4v+2].")
        e("TEXT ·%s(SB), NOSPLIT, $0-104" % fn)
    else:
        e("// func %s(acc *float32, ld, n int, src *float32, offs *int, nt int, w *float32, ws, wt, pf int, bias *float32, relu int)" % fn)
        e("//")
        e("// For r < 8 and j < n: acc[r*ld+j] = bias[r] + Σ_{t<nt} w[r*ws+t*wt]·src[offs[t]+j]")
        e("// (no bias term when bias is nil), then max(·, 0) when relu ≠ 0. Chunks")
        e("// of 48 columns keep 8×3 sums in Z0-Z23, then chunks of 16 (Z0-Z7), then a")
        e("// masked tail; each tap loads the chunk of src once (Z24-Z26) and")
        e("// broadcasts the eight weights of the tap in turn (Z27), and prefetches")
        e("// the chunk of src pf values further on. The weights are read where")
        e("// they lie: rows 0, 1, 2, 4 from BX (row 0, advanced by wt per tap) with")
        e("// the row stride R14 scaled, rows 3, 5 from R8 = BX + 3·ws, rows 6, 7")
        e("// from R10 = BX + 6·ws; R11 walks offs up to R9, R15 holds wt in bytes.")
        e("TEXT ·%s(SB), NOSPLIT, $0-96" % fn)
    e("\tMOVQ acc+0(FP), DI")
    e("\tMOVQ n+16(FP), CX")
    e("\tMOVQ src+24(FP), SI")
    e("\tMOVQ ws+56(FP), R14")
    e("\tSHLQ $2, R14")
    e("\tMOVQ pf+72(FP), DX")
    e("\tSHLQ $2, DX")
    if compact:
        e("\tMOVQ tbl+80(FP), AX")
    p = fn + "_"
    boff = 88 if compact else 80

    def init(name, V):
        # Sums start at the bias (a broadcast per row) or at zero.
        e("\tMOVQ bias+%d(FP), R12" % boff)
        e("\tTESTQ R12, R12")
        e("\tJE " + p + name + "zero")
        for r in range(8):
            for v in range(V):
                e("\tVBROADCASTSS %d(R12), Z%d" % (4 * r, r * V + v))
        e("\tJMP " + p + name + "go")
        e(p + name + "zero:")
        for z in range(8 * V):
            e("\tVXORPS Z%d, Z%d, Z%d" % (z, z, z))
        e(p + name + "go:")

    def relu(name, V):
        # ReLU as max(x, 0): NaN and −0 give +0, as ad.Relu (x > 0 ? x : 0).
        e("\tCMPQ relu+%d(FP), $0" % (boff + 8))
        e("\tJE " + p + name + "store")
        e("\tVXORPS Z28, Z28, Z28")
        for z in range(8 * V):
            e("\tVMAXPS Z28, Z%d, Z%d" % (z, z))
        e(p + name + "store:")

    def chunk(name, V, nxt, masked=False):
        e()
        e(p + name + ":")
        if masked:
            e("\tTESTQ CX, CX")
            e("\tJE " + p + "done")
            e("\tMOVL $1, R11")
            e("\tSHLXL CX, R11, R11")
            e("\tDECL R11")
            e("\tKMOVW R11, K3")
        else:
            e("\tCMPQ CX, $%d" % (16 * V))
            e("\tJB " + p + nxt)
        init(name, V)
        e("\tMOVQ offs+32(FP), R11")
        e("\tMOVQ nt+40(FP), R9")
        e("\tLEAQ (R11)(R9*8), R9")
        e("\tMOVQ w+48(FP), BX")
        e("\tLEAQ (BX)(R14*2), R8")
        e("\tADDQ R14, R8")
        e("\tLEAQ (R8)(R14*2), R10")
        e("\tADDQ R14, R10")
        e("\tMOVQ wt+64(FP), R15")
        e("\tSHLQ $2, R15")
        e()
        e(p + name + "tap:")
        e("\tMOVQ (R11), R12")
        e("\tLEAQ (SI)(R12*4), R13")
        if not masked:
            for v in range(V + 1):
                e("\tPREFETCHT0 %d(R13)(DX*1)" % (64 * v))
        for v in range(V):
            if masked:
                e("\tVMOVUPS.Z (R13), K3, Z%d" % (24 + v))
            else:
                e("\tVMOVUPS %d(R13), Z%d" % (64 * v, 24 + v))
        rows = ["(BX)", "(BX)(R14*1)", "(BX)(R14*2)", "(R8)", "(BX)(R14*4)", "(R8)(R14*2)", "(R10)", "(R10)(R14*1)"]
        for r in range(8):
            e("\tVBROADCASTSS %s, Z27" % rows[r])
            for v in range(V):
                e("\tVFMADD231PS Z%d, Z27, Z%d" % (24 + v, r * V + v))
        e("\tADDQ R15, BX")
        e("\tADDQ R15, R8")
        e("\tADDQ R15, R10")
        e("\tADDQ $8, R11")
        e("\tCMPQ R11, R9")
        e("\tJB " + p + name + "tap")
        e("\tMOVQ ld+8(FP), R9")
        e("\tSHLQ $2, R9")
        relu(name, V)
        if compact:
            for v in range(V):
                e("\tMOVQ 0(AX), R12")
                e("\tKMOVW 8(AX), K1")
                e("\tMOVQ 16(AX), R13")
                e("\tKMOVW 24(AX), K2")
                e("\tMOVQ DI, R15")
                for r in range(8):
                    e("\tVMOVUPS Z%d, K1, (R15)(R12*4)" % (r * V + v))
                    e("\tVMOVUPS Z%d, K2, (R15)(R13*4)" % (r * V + v))
                    if r < 7:
                        e("\tADDQ R9, R15")
                e("\tADDQ $32, AX")
        else:
            e("\tMOVQ DI, R15")
            for r in range(8):
                for v in range(V):
                    if masked:
                        e("\tVMOVUPS Z%d, K3, (R15)" % (r * V + v))
                    else:
                        e("\tVMOVUPS Z%d, %d(R15)" % (r * V + v, 64 * v))
                if r < 7:
                    e("\tADDQ R9, R15")
        if masked:
            e("\tJMP " + p + "done")
        else:
            if not compact:
                e("\tADDQ $%d, DI" % (64 * V))
            e("\tADDQ $%d, SI" % (64 * V))
            e("\tSUBQ $%d, CX" % (16 * V))
            e("\tJMP " + p + name)

    chunk("chunk48", 3, "chunk32")
    chunk("chunk32", 2, "chunk16")
    chunk("chunk16", 1, "tail")
    chunk("tail", 1, None, masked=True)
    e()
    e(p + "done:")
    e("\tVZEROUPPER")
    e("\tRET")


e("//go:build !noasm")
e()
e("// Code generated by gen/block_amd64.py. DO NOT EDIT.")
e()
e('#include "textflag.h"')
gen("acc8AVX512", False)
gen("acc8cAVX512", True)
print("\n".join(L))
