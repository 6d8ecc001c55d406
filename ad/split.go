package ad

import (
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/freelist"
	"github.com/flatkit/flatkit/internal/vmath"
)

// Elementwise passes over large tensors split over goroutines. Each element
// is computed by the same kernel whichever chunk holds it (the kernels are
// elementwise and give the same bits at any offset and length), so the
// result does not depend on the number of goroutines. Small passes run on
// the caller: flat.ParallelFor cuts nothing below two of its chunks.

const (
	elemUnary = iota
	elemBinary
	elemMask
)

// elemJob is one elementwise pass: out = kernel(a) or a op b, or
// MaskPositive(a, b).
type elemJob struct {
	run   func(lo, hi int) // j.chunk, bound once per job
	kind  int
	unary func(out, x []float32)
	op    binop
	out   []float32
	a, b  []float32
}

var elemJobs freelist.List[elemJob]

func (j *elemJob) chunk(lo, hi int) {
	switch j.kind {
	case elemUnary:
		j.unary(j.out[lo:hi], j.a[lo:hi])
	case elemBinary:
		binaryRow(j.op, j.out[lo:hi], j.a[lo:hi], j.b[lo:hi], 1, 1)
	case elemMask:
		vmath.MaskPositive(j.out[lo:hi], j.a[lo:hi], j.b[lo:hi])
	}
}

// splitElems runs j over all of j.out, split over goroutines if it is
// long enough.
func splitElems(j elemJob) {
	n := len(j.out)
	if n < 2*flat.DefaultMinChunk || flat.MaxThreads() < 2 {
		j.chunk(0, n)
		return
	}
	jp := elemJobs.Get()
	if jp.run == nil {
		jp.run = jp.chunk // bound once: a method value made per call would allocate
	}
	run := jp.run
	*jp = j
	jp.run = run
	flat.ParallelFor(n, 0, jp.run)
	*jp = elemJob{run: run}
	elemJobs.Put(jp)
}
