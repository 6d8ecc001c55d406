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

// elemJob is one elementwise pass: a unary kernel of a, a binary op of a
// and b, or maskPositive of a and b.
type elemJob struct {
	kind  int
	unary func(out, x []float32)
	op    binop
	out   []float32
	a, b  []float32
}

var elemJobs freelist.Jobs[elemJob, *elemJob]

// parallelFor runs a pooled copy of j (its Part method, bound once) over
// [0, n) by flat.ParallelFor(n, minChunk, …).
func parallelFor[J any, P interface {
	*J
	Part(lo, hi int)
}](l *freelist.Jobs[J, P], j J, n, minChunk int) {
	b := l.Get()
	b.Job = j
	flat.ParallelFor(n, minChunk, b.Run)
	l.Put(b)
}

// Part computes the elements [lo, hi).
func (j *elemJob) Part(lo, hi int) {
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
		j.Part(0, n)
		return
	}
	parallelFor(&elemJobs, j, n, 0)
}
