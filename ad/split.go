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
	kind  int
	unary func(out, x []float32)
	op    binop
	out   []float32
	a, b  []float32
}

var elemJobs jobList[elemJob]

// jobList keeps jobs of one kind for the goroutines of flat.ParallelFor.
type jobList[J any] struct{ l freelist.List[pooledJob[J]] }

// pooledJob is a job with the method value that runs it, bound once per
// pooled job: a method value made per call would allocate.
type pooledJob[J any] struct {
	job J
	do  func(j *J, lo, hi int)
	run func(lo, hi int) // p.call
}

func (p *pooledJob[J]) call(lo, hi int) { p.do(&p.job, lo, hi) }

// parallelFor runs do on a pooled copy of j over [0, n) by
// flat.ParallelFor(n, minChunk, …).
func (l *jobList[J]) parallelFor(j J, do func(j *J, lo, hi int), n, minChunk int) {
	p := l.l.Get()
	if p.run == nil {
		p.run = p.call
	}
	p.job, p.do = j, do
	flat.ParallelFor(n, minChunk, p.run)
	*p = pooledJob[J]{run: p.run}
	l.l.Put(p)
}

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
	elemJobs.parallelFor(j, (*elemJob).chunk, n, 0)
}
