# Shared by the assembly generators (internal/vmath/gen, flat/gen): the
# loop skeleton the AVX-512 and AVX2 vector kernels share, and the operand
# alignment (asmfmt's: in each run of instruction lines, operands start one
# column after the longest mnemonic that has operands). Not a Go package.
import re


def align(text):
    lines = text.split('\n')
    out, block = [], []

    def flush():
        if not block:
            return
        w = max((len(m) for m, o in block if o), default=0)
        for m, o in block:
            out.append('\t' + (m.ljust(w) + ' ' + o if o else m))
        block.clear()

    indef = False
    for l in lines:
        if indef or l.startswith('#define'):
            flush()
            out.append(l)
            indef = l.endswith('\\')
            continue
        if re.match(r'^\t[A-Z0-9_]+\(', l):  # a macro call: no column of its own
            block.append((l[1:], None))
            continue
        m = re.match(r'^\t(\S+)(?:\s+(.*))?$', l)
        if m and not l.startswith('\t//'):
            block.append((m.group(1), (m.group(2) or '').strip()))
        else:
            flush()
            out.append(l)
    flush()
    return '\n'.join(out)


def ins(*lines):
    return ['\t' + l for l in lines]


def kernel(name, sig, frame, prologue, phases, ptrs, tail, unroll=4, width=64, loop_one=True,
           tail_label='tail:', end='done', end_body=('VZEROUPPER', 'RET'), doc=()):
    """A vector kernel: unroll registers per iteration, each reading width
    bytes of input, then one register at a time (looping if loop_one, else
    once), then the tail. phases are functions (i, offset) -> lines, run for
    each register of an iteration in turn; ptrs are the pointer registers to
    advance; tail is the lines after the tail label; end labels end_body;
    doc is more comment lines after the signature's."""
    n, step, one = unroll * width // 4, unroll * width, width // 4
    L = ['// func %s%s' % (name, sig)] + list(doc) + ['TEXT ·%s(SB), NOSPLIT, $0-%d' % (name, frame)]
    L += ins(*prologue)
    L += ins('CMPQ CX, $%d' % n, 'JB one')
    L += ['', 'loop:']
    for ph in phases:
        for i in range(unroll):
            L += ins(*ph(i, off(width * i)))
    L += ins(*['ADDQ $%d, %s' % (step, p) for p in ptrs])
    L += ins('SUBQ $%d, CX' % n, 'CMPQ CX, $%d' % n, 'JAE loop')
    L += ['', 'one:']
    L += ins('CMPQ CX, $%d' % one, 'JB tail')
    for ph in phases:
        L += ins(*ph(0, ''))
    L += ins(*['ADDQ $%d, %s' % (width, p) for p in ptrs])
    L += ins('SUBQ $%d, CX' % one)
    if loop_one:
        L += ins('JMP one')
    L += ['', tail_label] + tail
    L += ['', end + ':'] + ins(*end_body)
    return L


def avx512(name, sig, frame, prologue, phases, ptrs, tail, unroll=4, loop_one=True):
    """An AVX-512 kernel with a masked tail: tail is the lines after the
    mask is set."""
    return kernel(name, sig, frame, prologue, phases, ptrs, ins('TESTQ CX, CX', 'JE done') + tail,
                  unroll=unroll, loop_one=loop_one)


def avx2(name, sig, frame, prologue, body, ptrs):
    """An AVX2 kernel over a multiple of 8 elements, one YMM register per
    iteration."""
    L = ['// func %s%s' % (name, sig), 'TEXT ·%s(SB), NOSPLIT, $0-%d' % (name, frame)]
    L += ins(*prologue)
    L += ins('SHRQ $3, CX', 'JZ done')
    L += ['', 'loop:']
    L += ins(*body)
    L += ins(*['ADDQ $32, %s' % p for p in ptrs])
    L += ins('DECQ CX', 'JNZ loop')
    L += ['', 'done:'] + ins('VZEROUPPER', 'RET')
    return L


def off(o):
    return '%d' % o if o else ''
