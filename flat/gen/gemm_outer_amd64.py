# Generates flat/gemm_outer_amd64.s: the micro-kernels' outer-product loops
# gemmOuterAVX512 and gemmOuterAVX2, one row loop instantiated for ZMM and
# YMM registers, with the AVX-512 one's 256-column blocks before it. Run
# from flat/:
#
#     go generate  (python3 gen/gemm_outer_amd64.py > gemm_outer_amd64.s)
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'internal', 'asmgen'))
from asm import align, ins, off  # noqa: E402

DOC = """
The micro-kernels' outer-product loops (gemm_amd64.go: gemmOuter512,
gemmOuter256). Each sets c[i*ldc+j] = alpha·fma(x[i*incx], y[j], +0) for
i < m, j < n, m, n ≥ 1: what the micro-kernels compute at k = 1 and
beta = 0 (accumulators cleared, one fused multiply-add, a product with
alpha), so the bits are theirs, including the sign of a zero. C is stored
without being read.
"""

DOC512 = """
Columns in blocks of 256 run with that block of y held in Z0-Z15 while
every row of the block is written, so the loop is stores only; the last
n mod 256 columns run row by row, reading y.
"""

SIG = '(m, n int, alpha float32, x *float32, incx int, y, c *float32, ldc int)'


def comment(text):
    return ['// ' + l if l else '//' for l in text.strip('\n').split('\n')]


def outer(zero, srcs, accs, xi, alpha, offs):
    """C's vectors at offs(R13) = alpha·fma(srcs, xi, +0), accumulated in
    accs, cleared by zero."""
    L = ['%s %s, %s, %s' % (zero, a, a, a) for a in accs]
    L += ['VFMADD231PS %s, %s, %s' % (s, xi, a) for s, a in zip(srcs, accs)]
    L += ['VMULPS %s, %s, %s' % (alpha, a, a) for a in accs]
    L += ['VMOVUPS %s, %s(R13)' % (a, off(o)) for a, o in zip(accs, offs)]
    return ins(*L)


def prologue(alpha):
    return ins('MOVQ m+0(FP), R8', 'MOVQ n+8(FP), R9', 'VBROADCASTSS alpha+16(FP), %s' % alpha,
               'MOVQ x+24(FP), SI', 'MOVQ incx+32(FP), R10', 'SHLQ $2, R10', 'MOVQ y+40(FP), BX',
               'MOVQ c+48(FP), DI', 'MOVQ ldc+56(FP), R11', 'SHLQ $2, R11')


def rows(reg, zero, vb, tail):
    """Row by row over n columns from BX: four vectors of vb bytes at a
    time, then one, then tail (which ends by jumping to next). alpha is
    in Z30 (Y14), x[i] in Z31 (Y15)."""
    alpha, xi = ('Z30', 'Z31') if reg == 'Z' else ('Y14', 'Y15')
    vl = vb // 4
    acc = ['%s%d' % (reg, i) for i in range(4)]
    L = ['', 'row:'] + ins('VBROADCASTSS (SI), %s' % xi, 'MOVQ BX, R12', 'MOVQ DI, R13', 'MOVQ R9, CX',
                           'CMPQ CX, $%d' % (4 * vl), 'JB one')
    L += ['', 'four:'] + outer(zero, ['%s(R12)' % off(i * vb) for i in range(4)], acc, xi, alpha,
                               [i * vb for i in range(4)])
    L += ins('ADDQ $%d, R12' % (4 * vb), 'ADDQ $%d, R13' % (4 * vb), 'SUBQ $%d, CX' % (4 * vl),
             'CMPQ CX, $%d' % (4 * vl), 'JAE four')
    L += ['', 'one:'] + ins('CMPQ CX, $%d' % vl, 'JB tail')
    L += outer(zero, ['(R12)'], acc[:1], xi, alpha, [0])
    L += ins('ADDQ $%d, R12' % vb, 'ADDQ $%d, R13' % vb, 'SUBQ $%d, CX' % vl, 'JMP one')
    L += ['', 'tail:'] + ins('TESTQ CX, CX', 'JE next', *tail)
    L += ['', 'next:'] + ins('ADDQ R10, SI', 'ADDQ R11, DI', 'DECQ R8', 'JNZ row')
    return L


def avx512():
    name = 'gemmOuterAVX512'
    L = ['', '// func %s%s' % (name, SIG), '//'] + comment(DOC512)
    L += ['TEXT ·%s(SB), NOSPLIT, $0-64' % name] + prologue('Z30')
    L += ['', 'block:'] + ins('CMPQ R9, $256', 'JB rest')
    L += ins(*['VMOVUPS %s(BX), Z%d' % (off(64 * i), i) for i in range(16)])
    L += ins('MOVQ SI, R12 // x[i]', 'MOVQ DI, R13 // row i of the block', 'MOVQ R8, CX')
    L += ['', 'brow:'] + ins('VBROADCASTSS (R12), Z31')
    for g in range(4):
        accs = ['Z%d' % (16 + 4 * (g % 2) + i) for i in range(4)]
        L += outer('VPXORD', ['Z%d' % (4 * g + i) for i in range(4)], accs, 'Z31', 'Z30',
                   [256 * g + 64 * i for i in range(4)])
    L += ins('ADDQ R10, R12', 'ADDQ R11, R13', 'DECQ CX', 'JNZ brow') + ['']
    L += ins('ADDQ $1024, BX', 'ADDQ $1024, DI', 'SUBQ $256, R9', 'JMP block')
    L += ['', 'rest:'] + ins('TESTQ R9, R9', 'JE done') + ['', '\t// K1 masks the last n mod 16 columns.']
    L += ins('MOVQ R9, CX', 'ANDQ $15, CX', 'MOVL $1, AX', 'SHLL CX, AX', 'DECL AX', 'KMOVW AX, K1')
    L += rows('Z', 'VPXORD', 64, ['VMOVUPS.Z (R12), K1, Z1', 'VPXORD Z0, Z0, Z0', 'VFMADD231PS Z1, Z31, Z0',
                                  'VMULPS Z30, Z0, Z0', 'VMOVUPS Z0, K1, (R13)'])
    L += ['', 'done:'] + ins('VZEROUPPER', 'RET')
    return L


def avx2():
    name = 'gemmOuterAVX2'
    L = ['', '// func %s%s' % (name, SIG), 'TEXT ·%s(SB), NOSPLIT, $0-64' % name] + prologue('Y14')
    L += rows('Y', 'VXORPS', 32, ['VMOVSS (R12), X1', 'VXORPS X0, X0, X0', 'VFMADD231SS X1, X15, X0',
                                  'VMULSS X14, X0, X0', 'VMOVSS X0, (R13)', 'ADDQ $4, R12', 'ADDQ $4, R13',
                                  'DECQ CX', 'JMP tail'])
    L += [''] + ins('VZEROUPPER', 'RET')
    return L


def main():
    L = ['//go:build amd64 && !noasm', '', '// Code generated by gen/gemm_outer_amd64.py. DO NOT EDIT.', '',
         '#include "textflag.h"', ''] + comment(DOC)
    L += avx512() + avx2()
    sys.stdout.write(align('\n'.join(L)) + '\n')


main()
