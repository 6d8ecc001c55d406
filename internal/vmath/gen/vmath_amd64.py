# Generates internal/vmath/vmath_amd64.s from vmath_amd64.s.in: the table
# of constants (eight copies of each, one YMM register) and the kernels'
# loops; the formulas (the TANH…/SIGMOID… macros) are hand-written in the
# template. Run from internal/vmath:
#
#     go generate  (python3 gen/vmath_amd64.py > vmath_amd64.s)
import os
import sys

sys.dont_write_bytecode = True
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, '..', '..', 'asmgen'))
from asm import align, avx2, avx512, ins  # noqa: E402

# (define, comment, bits): float32(c) for the constants c of vmath.go.
CONSTS = [
    ('C_NCLAMP', '−tanhClamp', 0xc0fcf84f),
    ('C_CLAMP', 'tanhClamp', 0x40fcf84f),
    ('C_ABSMASK', 'clears the sign bit', 0x7fffffff),
    ('C_SMALL', 'tanhSmall', 0x39d1b717),
    ('C_A13', 'tanhA13', 0xa59f25c0),
    ('C_A11', 'tanhA11', 0x2a61337e),
    ('C_A9', 'tanhA9', 0xaebd37ff),
    ('C_A7', 'tanhA7', 0x335c0041),
    ('C_A5', 'tanhA5', 0x3779434a),
    ('C_A3', 'tanhA3', 0x3a270ded),
    ('C_A1', 'tanhA1', 0x3ba059dc),
    ('C_B6', 'tanhB6', 0x35a0d3d8),
    ('C_B4', 'tanhB4', 0x38f895d6),
    ('C_B2', 'tanhB2', 0x3b14aa05),
    ('C_B0', 'tanhB0', 0x3ba059dd),
    ('C_SIGN', 'the sign bit', 0x80000000),
    ('C_EXPLOW', 'expLow', 0xc2d00000),
    ('C_LOG2E', 'expLog2e', 0x3fb8aa3b),
    ('C_C1', 'expC1', 0x3f318000),
    ('C_C2', 'expC2', 0xb95e8083),
    ('C_P0', 'expP0', 0x39506967),
    ('C_P1', 'expP1', 0x3ab743ce),
    ('C_P2', 'expP2', 0x3c088908),
    ('C_P3', 'expP3', 0x3d2aa9c1),
    ('C_P4', 'expP4', 0x3e2aaaaa),
    ('C_P5', 'expP5 (0.5)', 0x3f000000),
    ('C_ONE', '1', 0x3f800000),
    ('C_TWOM64', '2⁻⁶⁴', 0x1f800000),
    ('C_BIAS', 'the int32 127 + 64', 0x000000bf),
]


def consts():
    d, t = [], []
    for i, (name, comment, bits) in enumerate(CONSTS):
        d.append('#define %s %d' % (name, 32 * i))
        t.append('// ' + comment)
        t += ['DATA consts<>+%d(SB)/4, $0x%08x' % (32 * i + 4 * j, bits) for j in range(8)]
    t.append('GLOBL consts<>(SB), RODATA|NOPTR, $%d' % (32 * len(CONSTS)))
    return '\n'.join(d), '\n'.join(t)


ARGS = ['MOVQ dst_base+0(FP), DI', 'MOVQ src_base+24(FP), SI', 'MOVQ src_len+32(FP), CX']


def kernel512(name, load, macro, regs, out):
    """regs: the register sets of the two unrolled bodies (first is the
    one-register and tail body), as macro arguments; out: the index in a
    set of the result register."""
    body = lambda i: '%s(%s)' % (macro, ', '.join(regs[i]))
    return avx512(name, '(dst, src []float32)', 48, ARGS + [load], [
        lambda i, o: ['VMOVUPS %s(SI), %s' % (o, regs[i][0])],
        lambda i, o: [body(i)],
        lambda i, o: ['VMOVUPS %s, %s(DI)' % (regs[i][out], o)],
    ], ['SI', 'DI'], ins('TAILMASK', 'VMOVUPS.Z (SI), K1, Z0', body(0), 'VMOVUPS %s, K1, (DI)' % regs[0][out]),
        unroll=2, loop_one=False)


def kernel2(name, load, macro, regs, out):
    return avx2(name, '(dst, src []float32)', 48, ARGS + [load],
                ['VMOVUPS (SI), Y0', '%s(%s)' % (macro, ', '.join(regs)), 'VMOVUPS %s, (DI)' % regs[out]],
                ['SI', 'DI'])


def main():
    defines, data = consts()
    tanhZ = [['Z0', 'Z1', 'Z2', 'Z3', 'Z4', 'Z5', 'K2'], ['Z8', 'Z9', 'Z10', 'Z11', 'Z12', 'Z13', 'K3']]
    sigZ = [['Z0', 'Z1', 'Z2', 'Z3', 'Z4', 'Z5', 'Z6', 'Z7', 'Z8', 'K2'],
            ['Z10', 'Z11', 'Z12', 'Z13', 'Z14', 'Z15', 'Z29', 'Z30', 'Z31', 'K3']]
    z = kernel512('tanhAVX512', 'LOADTANHZ', 'TANHZ', tanhZ, 5) + [''] + \
        kernel512('sigmoidAVX512', 'LOADSIGMOIDZ', 'SIGMOIDZ', sigZ, 8)
    y = kernel2('tanhAVX2', 'LOADTANHY', 'TANHY', ['Y0', 'Y1', 'Y2', 'Y3', 'Y4', 'Y5', 'Y6'], 5) + [''] + \
        kernel2('sigmoidAVX2', 'LOADSIGMOIDY', 'SIGMOIDY', ['Y0', 'Y1', 'Y2', 'Y3', 'Y4', 'Y5', 'Y6', 'Y7', 'Y8'], 8)
    t = open(os.path.join(here, 'vmath_amd64.s.in')).read()
    t = t[t.index('//go:build'):]
    t = t.replace('{{DEFINES}}', defines).replace('{{DATA}}', data)
    t = t.replace('{{AVX512}}', '\n'.join(z)).replace('{{AVX2}}', '\n'.join(y))
    sys.stdout.write(align(t.rstrip('\n')) + '\n')


main()
