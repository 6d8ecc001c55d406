package ad

import (
	"fmt"
	"slices"
)

// Sparsity detection. JacobianPattern propagates, over the recording, the
// set of elements of x that each element of each value depends on. Each
// op has a structural rule: which elements of its inputs an element of its
// output is computed from. The rule does not look at values, so a product
// whose factor happens to be zero, or a branch of Where, Relu, Clamp or
// Max not taken at the recorded point, still counts: the pattern holds at
// every value of the inputs, which is what a solver that keeps it for many
// steps needs. Where the derivative is zero by construction (Sign,
// Indicator, StopGradient, the condition of Where and the mask of
// maskPositive) there is no dependency, as there is none in ad's rules.

// ErrNoSparsityRule is wrapped by the error of JacobianPattern for a
// recording with an op that has no structural rule.
var ErrNoSparsityRule = errorf("no sparsity rule")

// JacobianPattern returns the structural sparsity pattern of the Jacobian
// ∂y/∂x in compressed sparse row form: row i, for element i of y counted
// flat, has the columns colIdx[rowPtr[i]:rowPtr[i+1]], strictly ascending,
// of the elements of x that it depends on. x is any value recorded before
// y, usually the Param of a function's input.
//
// The pattern is structural, not numerical: it is found from the ops of
// the recording and their inputs, never from values, so it holds for
// every value of x that records the same ops. A dependency whose
// derivative is zero at the recorded point (x·z with z = 0, the branch of
// Where, Clamp or Max not taken) is in it. A dependency whose derivative
// is zero by construction (through Sign, Indicator, StopGradient or the
// condition of Where) is not, just as ad's derivatives carry none.
//
// The ops with a rule: Add, Sub, Mul, Div, Neg, Scale and the elementwise
// functions and activations; Clamp, Where and the masks; Sum, Mean, Max,
// Min, SumTo, BroadcastTo and LogSumExp (so Softmax and LogSoftmax);
// MatMul and MatMulT; View, Slice, Reshape, Transpose, Concat, Stack,
// SliceAxis, PadAxis, Pad and Crop; Gather and ScatterAdd. An op on the
// path from x to y without one (the convolutions, pooling, batch
// normalisation, a user's Primitive) is an error that names it and wraps
// ErrNoSparsityRule. Ops that do not depend on x need no rule.
func (t *Tape) JacobianPattern(y, x Var) (rowPtr, colIdx []int, err error) {
	if t.err != nil {
		return nil, nil, t.err
	}
	if !t.check("JacobianPattern", y) || !t.check("JacobianPattern", x) {
		return nil, nil, t.err
	}
	if x.id > y.id {
		return make([]int, t.nodes[y.id].size()+1), nil, nil
	}
	s := &sparsitySweep{t: t, lo: x.id, nx: t.nodes[x.id].size()}
	s.sets = make([]depSet, y.id-x.id+1)
	s.stamp = make([]int, s.nx)
	s.tick = 1 // a stamp of 0 is no element
	ptr := make([]int32, s.nx+1)
	idx := make([]int32, s.nx)
	for j := range idx {
		ptr[j+1], idx[j] = int32(j+1), int32(j)
	}
	s.sets[0] = depSet{ptr: ptr, idx: idx}
	for id := x.id + 1; id <= y.id; id++ {
		if err := s.node(id); err != nil {
			return nil, nil, err
		}
	}
	ys := s.sets[y.id-x.id]
	ny := t.nodes[y.id].size()
	rowPtr = make([]int, ny+1)
	if ys.ptr == nil {
		return rowPtr, nil, nil
	}
	colIdx = make([]int, 0, ys.ptr[ny]-ys.ptr[0])
	for i := range ny {
		for _, c := range ys.idx[ys.ptr[i]:ys.ptr[i+1]] {
			colIdx = append(colIdx, int(c))
		}
		rowPtr[i+1] = len(colIdx)
	}
	return rowPtr, colIdx, nil
}

// depSet is the dependency set of each element of one value: element e
// depends on the elements idx[ptr[e]:ptr[e+1]] of x. The offsets need not
// start at 0, so that a view shares its input's arrays. A nil ptr is a
// value that depends on no element of x.
type depSet struct{ ptr, idx []int32 }

type sparsitySweep struct {
	t     *Tape
	lo    int32 // x's id: sets[i] is the set of node lo+i
	nx    int
	sets  []depSet
	in    []*depSet // the current node's inputs' sets (nil: no dependency)
	cur   []int32   // the current element's dependencies, unsorted
	stamp []int     // stamp[c] == tick: c is in cur
	tick  int
	ptr   []int32 // the current node's set being built
	idx   []int32
	buf   []int // scratch index maps
	buf2  []int
}

// node computes the set of node id.
func (s *sparsitySweep) node(id int32) error {
	nd := &s.t.nodes[id]
	if nd.kind != kindOp {
		return nil
	}
	s.in = s.in[:0]
	depends := false
	for _, in := range nd.in {
		var d *depSet
		if in >= s.lo && s.sets[in-s.lo].ptr != nil {
			d = &s.sets[in-s.lo]
			depends = true
		}
		s.in = append(s.in, d)
	}
	if !depends {
		return nil
	}
	size := nd.size()
	s.ptr = make([]int32, 1, size+1)
	s.idx = make([]int32, 0, size)
	shared, err := s.rule(nd)
	if err != nil {
		return err
	}
	if shared.ptr != nil {
		s.sets[id-s.lo] = shared
		return nil
	}
	if len(s.ptr) != size+1 {
		// A rule that closes the wrong number of elements is a bug here.
		panic(fmt.Sprintf("ad: the sparsity rule of %s made %d elements, want %d", nd.prim.Name(), len(s.ptr)-1, size))
	}
	s.sets[id-s.lo] = depSet{ptr: s.ptr, idx: slices.Clip(s.idx)}
	return nil
}

// from adds the dependencies of element j of input k to the current
// element.
func (s *sparsitySweep) from(k, j int) {
	d := s.in[k]
	if d == nil {
		return
	}
	for _, c := range d.idx[d.ptr[j]:d.ptr[j+1]] {
		if s.stamp[c] != s.tick {
			s.stamp[c] = s.tick
			s.cur = append(s.cur, c)
		}
	}
}

// end closes the current element.
func (s *sparsitySweep) end() {
	slices.Sort(s.cur)
	s.idx = append(s.idx, s.cur...)
	s.ptr = append(s.ptr, int32(len(s.idx)))
	s.cur = s.cur[:0]
	s.tick++
	if s.tick == 0 { // wrapped: stamps of 0 would read as current
		clear(s.stamp)
		s.tick = 1
	}
}

// rule runs the structural rule of nd's op. It returns a set to share when
// the output's set is an input's (views and reshapes), or builds it with
// from and end.
func (s *sparsitySweep) rule(nd *node) (depSet, error) {
	t := s.t
	shape := func(k int) []int { return t.nodes[nd.in[k]].shape }
	size := nd.size()
	switch p := nd.prim.(type) {
	case *reshapePrim, *identityPrim:
		return *s.in[0], nil
	case *viewPrim:
		off := nd.attrs.Ints[0]
		d := s.in[0]
		return depSet{ptr: d.ptr[off : off+size+1 : off+size+1], idx: d.idx}, nil
	case *stopGradientPrim:
		s.none(size)
	case *unaryAttrPrim:
		if p.deriv == nil { // Sign, Indicator: derivative zero by construction
			s.none(size)
			break
		}
		s.elementwise(nd.shape, []int{0}, shape)
	case *unaryPrim, *negPrim:
		s.elementwise(nd.shape, []int{0}, shape)
	case *maskPositivePrim:
		s.elementwise(nd.shape, []int{0}, shape) // nothing flows to the mask
	case *binaryPrim:
		s.elementwise(nd.shape, []int{0, 1}, shape)
	case *wherePrim:
		s.elementwise(nd.shape, []int{1, 2}, shape) // nothing flows to cond
	case *broadcastToPrim:
		s.elementwise(nd.shape, []int{0}, shape)
	case *sumToPrim:
		s.push(0, s.strided(shape(0), bstrides(nd.shape, shape(0)), 0), size)
	case *embedPrim:
		off, n := nd.attrs.Ints[0], sizeOf(shape(0))
		for e := range size {
			if e >= off && e < off+n {
				s.from(0, e-off)
			}
			s.end()
		}
	case *gatherPrim:
		_, idx, _ := indexAttrs(nd.attrs)
		for e := range size {
			s.from(0, idx[e])
			s.end()
		}
	case *scatterAddPrim:
		_, idx, _ := indexAttrs(nd.attrs)
		s.push(0, idx, size)
	case *concatPrim:
		for k := range nd.in {
			for j := range sizeOf(shape(k)) {
				s.from(k, j)
				s.end()
			}
		}
	case *concatAxisPrim:
		ax := mustAxis(nd.attrs.Ints[0], len(nd.shape))
		outer, _, inner := axisSplit(nd.shape, ax)
		for o := range outer {
			for k := range nd.in {
				blk := shape(k)[ax] * inner
				for b := range blk {
					s.from(k, o*blk+b)
					s.end()
				}
			}
		}
	case *padPrim:
		s.push(0, s.window(shape(0), nd.shape, nd.attrs.Ints), size)
	case *cropPrim:
		s.gather(0, s.window(nd.shape, shape(0), nd.attrs.Ints))
	case *transposePrim:
		s.gather(0, s.transposed(shape(0), nd.shape, nd.attrs.Ints))
	case *extremumPrim, *logSumExpPrim:
		x := shape(0)
		ax := mustAxis(nd.attrs.Ints[0], len(x))
		outer, n, inner := axisSplit(x, ax)
		for o := range outer {
			for i := range inner {
				for a := range n {
					s.from(0, (o*n+a)*inner+i)
				}
				s.end()
			}
		}
	case *matmulPrim:
		s.matmul(nd, shape(0), shape(1))
	default:
		return depSet{}, errorf("JacobianPattern: %w for %s, an op on the path from x to y; want arithmetic, elementwise, selection, reduction, shape, index or matrix-product ops", ErrNoSparsityRule, nd.prim.Name())
	}
	return depSet{}, nil
}

// none closes size elements without dependencies.
func (s *sparsitySweep) none(size int) {
	for range size {
		s.end()
	}
}

// elementwise is the rule of a broadcasting elementwise op: element e of
// the output depends on the element of each input ks that broadcasts to it.
func (s *sparsitySweep) elementwise(out []int, ks []int, shape func(int) []int) {
	var maps [3][]int
	for n, k := range ks {
		if s.in[k] != nil {
			maps[n] = s.strided(out, bstrides(shape(k), out), 0)
			s.buf, s.buf2 = s.buf2, s.buf // keep this map while making the next
		}
	}
	for e := range sizeOf(out) {
		for n, k := range ks {
			if m := maps[n]; m != nil {
				s.from(k, m[e])
			}
		}
		s.end()
	}
}

// strided returns, in a scratch slice, base + Σ idx[a]·st[a] for each
// multi-index idx of shape, in row-major order.
func (s *sparsitySweep) strided(shape []int, st [maxRank]int, base int) []int {
	n := sizeOf(shape)
	m := s.buf[:0]
	var idx [maxRank]int
	j := base
	for range n {
		m = append(m, j)
		for ax := len(shape) - 1; ax >= 0; ax-- {
			idx[ax]++
			j += st[ax]
			if idx[ax] < shape[ax] {
				break
			}
			j -= st[ax] * shape[ax]
			idx[ax] = 0
		}
	}
	s.buf = m
	return m
}

// window returns, for each element of small, its flat index in big, which
// is small padded by the (before, after) pairs.
func (s *sparsitySweep) window(small, big, pairs []int) []int {
	st, base := rowMajor(big, pairs)
	return s.strided(small, st, base)
}

// transposed returns, for each element of the output of shape out, its
// flat index in the input of shape x that perm permutes.
func (s *sparsitySweep) transposed(x, out, perm []int) []int {
	var xs, st [maxRank]int
	stride := 1
	for i := len(x) - 1; i >= 0; i-- {
		xs[i] = stride
		stride *= x[i]
	}
	for i, p := range perm {
		st[i] = xs[p]
	}
	return s.strided(out, st, 0)
}

// gather is the rule of an op whose output element e is input k's element
// m[e].
func (s *sparsitySweep) gather(k int, m []int) {
	for _, j := range m {
		s.from(k, j)
		s.end()
	}
}

// push is the rule of an op that adds input k's element j into output
// element dst[j], for an output of size elements.
func (s *sparsitySweep) push(k int, dst []int, size int) {
	start := make([]int, size+1)
	for _, e := range dst {
		start[e+1]++
	}
	for e := range size {
		start[e+1] += start[e]
	}
	src := make([]int, len(dst))
	next := slices.Clone(start[:size])
	for j, e := range dst {
		src[next[e]] = j
		next[e]++
	}
	for e := range size {
		for _, j := range src[start[e]:start[e+1]] {
			s.from(k, j)
		}
		s.end()
	}
}

// matmul is MatMul's rule: element (b, i, j) of op(A)·op(B) depends on row
// i of op(A) and column j of op(B) in their batches.
func (s *sparsitySweep) matmul(nd *node, sa, sb []int) {
	ta, tb := nd.attrs.Ints[0] == 1, nd.attrs.Ints[1] == 1
	ba, m, k, _ := mmDims(sa, ta)
	bb, _, n, _ := mmDims(sb, tb)
	batch := max(ba, bb)
	for b := range batch {
		oa, ob := 0, 0
		if ba > 1 {
			oa = b * m * k
		}
		if bb > 1 {
			ob = b * k * n
		}
		for i := range m {
			for j := range n {
				for l := range k {
					if ta {
						s.from(0, oa+l*m+i)
					} else {
						s.from(0, oa+i*k+l)
					}
					if tb {
						s.from(1, ob+j*k+l)
					} else {
						s.from(1, ob+l*n+j)
					}
				}
				s.end()
			}
		}
	}
}
