package ad

import (
	"slices"

	"github.com/flatkit/flatkit/flat"
)

// piece is the cotangent of a View of a node we differentiate with respect
// to. It is kept as a range instead of being embedded into a full-size
// zero vector. So the gradient of a flat parameter vector viewed by many
// layers costs time linear in the length of θ to assemble, not that
// length times the number of views.
type piece struct {
	wrt      int // index into the sweep's wrt list
	off, len int
	cot      int32
}

// rule returns the Rule used for rule calls at the current sweep depth.
func (t *Tape) rule() *Rule {
	for len(t.rules) <= t.sweeps {
		t.rules = append(t.rules, &Rule{t: t})
	}
	return t.rules[t.sweeps]
}

// setup fills r for the op node id.
func (r *Rule) setup(id int32) *node {
	t := r.t
	nd := &t.nodes[id]
	r.prim, r.order = nd.prim, int(nd.order)
	r.In = r.In[:0]
	for _, in := range nd.in {
		r.In = append(r.In, Var{t: t, id: in, gen: t.gen})
	}
	r.Out = Var{t: t, id: id, gen: t.gen}
	r.Attrs, r.Saved = nd.attrs, nd.saved
	r.inIDs = nd.in
	return nd
}

func missingRule(nd *node, mode string) error {
	return errorf("%s has no %s rule (needed for a derivative of order %d)", nd.prim.Name(), mode, nd.order+1)
}

// reverse propagates the cotangent seed of out back over the nodes
// [lo, out], towards the nodes in wrt, which must lie in that range. With
// raw != nil it adds each wrt node's cotangent into raw[k] and returns nil,
// or, with overwrite, sets raw[k] to it (raw[k]'s contents are then not
// read, and a wrt node outside the range gets zeros); otherwise it returns
// each cotangent as a Var (the zero Var if it is zero), assembled with ops
// so that it can be differentiated again.
//
// A float64 wrt node's cotangent goes into raw64[k] instead (raw[k] is
// then not read); raw64 may be nil when every wrt node is float32.
func (t *Tape) reverse(lo int32, out, seed Var, wrt []int32, raw [][]float32, raw64 [][]float64, overwrite bool) []Var {
	if t.err != nil {
		return nil
	}
	hi := out.id
	n := int(hi-lo) + 1
	cot := t.ids.alloc(n)
	wrtOf := t.ids.alloc(n)
	live := t.ids.alloc(n)
	for i := range cot {
		cot[i], wrtOf[i], live[i] = -1, -1, 0
	}
	for k, w := range wrt {
		if w >= lo && w <= hi {
			wrtOf[w-lo] = int32(k)
		}
	}
	// A node is live if its value depends on a wrt node; only live nodes'
	// rules run, and only for live inputs.
	for i := lo; i <= hi; i++ {
		if wrtOf[i-lo] >= 0 {
			live[i-lo] = 1
			continue
		}
		for _, in := range t.nodes[i].in {
			if in >= lo && live[in-lo] != 0 {
				live[i-lo] = 1
				break
			}
		}
	}
	cot[hi-lo] = seed.id
	t.pieces = t.pieces[:0]
	t.sweeps++
	defer func() { t.sweeps-- }()
	r := t.rule()
	r.cot, r.lo = cot, lo
	if raw != nil && overwrite {
		r.raw = raw
		r.direct = r.directViews(lo, hi, wrtOf, len(wrt))
		defer func() { r.raw, r.direct = nil, nil }()
	}
	saveOrder := t.order
	defer func() { t.order = saveOrder }()
	for i := hi; i >= lo; i-- {
		c := cot[i-lo]
		if c < 0 || live[i-lo] == 0 || wrtOf[i-lo] >= 0 {
			continue
		}
		nd := &t.nodes[i]
		if nd.kind != kindOp {
			continue
		}
		if nd.prim == viewOp {
			if in := nd.in[0]; in >= lo && wrtOf[in-lo] >= 0 {
				t.pieces = append(t.pieces, piece{wrt: int(wrtOf[in-lo]), off: nd.attrs.Ints[0], len: nd.size(), cot: c})
				continue
			}
		}
		vjp, ok := asRule[VJPRule](nd.prim)
		if !ok {
			t.fail(missingRule(nd, "VJP"))
			return nil
		}
		nd = r.setup(i)
		r.need = r.need[:0]
		for _, in := range nd.in {
			r.need = append(r.need, in >= lo && live[in-lo] != 0)
		}
		t.order = int(nd.order) + 1
		vjp.VJP(r, Var{t: t, id: c, gen: t.gen})
		if t.err != nil {
			return nil
		}
	}
	if raw != nil {
		for k, w := range wrt {
			f64 := raw64 != nil && raw64[k] != nil
			switch {
			case (w < lo || w > hi) && overwrite && f64:
				clear(raw64[k])
			case w < lo || w > hi:
				if overwrite {
					clear(raw[k])
				}
			case f64:
				settle(t, k, raw64[k], cot[w-lo], overwrite)
			default:
				settle(t, k, raw[k], cot[w-lo], overwrite)
			}
		}
		return nil
	}
	res := t.resBuf[:0]
	for range wrt {
		res = append(res, Var{})
	}
	t.resBuf = res
	for k, w := range wrt {
		if w >= lo && w <= hi {
			res[k] = t.assemble(k, w, cot[w-lo])
		}
	}
	return res
}

// addInto adds src into dst, for float32 with flat's SIMD Axpy: dst +
// 1·src rounds exactly like dst + src, so the bits are those of the plain
// loop.
func addInto[T flat.Float](dst, src []T) {
	if d, ok := any(dst).([]float32); ok {
		flat.Axpy(1, any(src).([]float32), d[:len(src)])
		return
	}
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] += v
	}
}

// directViews fills r.dests with the Views of wrt nodes among the nodes
// [lo, hi] and returns, for each node of that range, its entry in r.dests
// if the View's cotangent may be written straight into the raw buffer
// (gradDest), or -1. That needs the View to be used exactly once in the
// range (so its cotangent is one AddGrad, not a sum) and the wrt node to be
// used by Views only, none overlapping another (so the range receives
// nothing else, and settle copies instead of adding). Views nothing uses
// receive no cotangent and do not count: a model's subtree views (a
// layer's block of the parameters, which its own views of weights
// collapse past, see View) would otherwise overlap every weight's view.
func (r *Rule) directViews(lo, hi int32, wrtOf []int32, nwrt int) []int32 {
	t := r.t
	n := int(hi-lo) + 1
	uses := t.ids.alloc(n)
	clear(uses)
	clean := t.ids.alloc(nwrt)
	for k := range clean {
		clean[k] = 1
	}
	for i := lo; i <= hi; i++ {
		for _, in := range t.nodes[i].in {
			if in >= lo {
				uses[in-lo]++
			}
		}
	}
	ds := r.dests[:0]
	for i := lo; i <= hi; i++ {
		nd := &t.nodes[i]
		dead := uses[i-lo] == 0 && i != hi
		for _, in := range nd.in {
			if in < lo {
				continue
			}
			if k := wrtOf[in-lo]; k >= 0 {
				if nd.prim != viewOp {
					clean[k] = 0
					continue
				}
				if t.nodes[in].f64 {
					clean[k] = 0 // no direct writes into float64 gradients
					continue
				}
				if !dead {
					ds = append(ds, gradDest{wrt: int(k), off: nd.attrs.Ints[0], len: len(nd.data), node: i})
				}
			}
		}
	}
	sortSmall(ds, func(a, b gradDest) int {
		if a.wrt != b.wrt {
			return a.wrt - b.wrt
		}
		return a.off - b.off
	})
	end, cur := 0, -1
	for _, d := range ds {
		if d.wrt != cur {
			cur, end = d.wrt, 0
		}
		if d.len == 0 {
			continue
		}
		if d.off < end {
			clean[d.wrt] = 0
		}
		end = max(end, d.off+d.len)
	}
	for j := range ds {
		ds[j].ok = clean[ds[j].wrt] != 0 && uses[ds[j].node-lo] == 1 && ds[j].len > 0
	}
	r.dests = ds
	direct := uses // reused: the counts are read above
	for i := range direct {
		direct[i] = -1
	}
	for j, d := range ds {
		if d.ok {
			direct[d.node-lo] = int32(j)
		}
	}
	return direct
}

// settle writes the cotangent of the k-th wrt node into dst: its direct
// cotangent full (a node id, or -1) and the pieces of its Views, in the
// sweep's order. Adding, it adds them to dst; overwriting, it sets dst to
// their sum, and when the pieces are all there is and do not overlap, it
// copies each into its range (skipping one a rule already computed there,
// see Rule.gradDest) and zeroes the rest, without a pass of additions.
func settle[T flat.Float](t *Tape, k int, dst []T, full int32, overwrite bool) {
	ps := t.piecesOf[:0]
	for _, p := range t.pieces {
		if p.wrt == k {
			ps = append(ps, p)
		}
	}
	t.piecesOf = ps
	if overwrite && full < 0 {
		sorted := append(t.piecesSorted[:0], ps...)
		t.piecesSorted = sorted
		sortSmall(sorted, func(a, b piece) int { return a.off - b.off })
		end, disjoint := 0, true
		for _, p := range sorted {
			if p.len > 0 && p.off < end {
				disjoint = false
				break
			}
			end = max(end, p.off+p.len)
		}
		if disjoint {
			end = 0
			for _, p := range sorted {
				if p.len == 0 {
					continue
				}
				clear(dst[end:p.off])
				src, d := dataOf[T](&t.nodes[p.cot]), dst[p.off:p.off+p.len]
				if &src[0] != &d[0] {
					copy(d, src)
				}
				end = p.off + p.len
			}
			clear(dst[end:])
			return
		}
	}
	if overwrite {
		clear(dst)
	}
	if full >= 0 {
		addInto(dst, dataOf[T](&t.nodes[full]))
	}
	for _, p := range ps {
		addInto(dst[p.off:p.off+p.len], dataOf[T](&t.nodes[p.cot]))
	}
}

// assemble builds the cotangent of wrt node w (the k-th) as one Var from
// its direct cotangent full (or -1) and the pieces of its views.
func (t *Tape) assemble(k int, w int32, full int32) Var {
	wv := Var{t: t, id: w, gen: t.gen}
	shape := t.nodes[w].shape
	size := t.nodes[w].size()
	ps := t.piecesOf[:0]
	for _, p := range t.pieces {
		if p.wrt == k {
			ps = append(ps, p)
		}
	}
	t.piecesOf = ps
	var sum Var
	if full >= 0 {
		sum = Var{t: t, id: full, gen: t.gen}
	}
	if len(ps) == 0 {
		return sum
	}
	// Sort by offset (few pieces: insertion sort), then add pieces over the
	// same range; disjoint ranges are concatenated with zero gaps.
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && (ps[j].off < ps[j-1].off || ps[j].off == ps[j-1].off && ps[j].len < ps[j-1].len); j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
	parts := t.parts[:0]
	defer func() { t.parts = parts[:0] }()
	end := 0
	overlap := false
	for i := 0; i < len(ps); {
		p := ps[i]
		v := Reshape(Var{t: t, id: p.cot, gen: t.gen}, p.len)
		j := i + 1
		for ; j < len(ps) && ps[j].off == p.off && ps[j].len == p.len; j++ {
			v = Add(v, Reshape(Var{t: t, id: ps[j].cot, gen: t.gen}, p.len))
		}
		if p.off < end {
			overlap = true
			break
		}
		if p.off > end {
			parts = append(parts, t.fullOf(w, 0, p.off-end))
		}
		parts = append(parts, v)
		end = p.off + p.len
		i = j
	}
	var flatCot Var
	if overlap {
		// Views overlapping without coinciding: embed each into full size.
		for _, p := range ps {
			e := Apply(embedOp, Attrs{Ints: []int{p.off, size}}, Reshape(Var{t: t, id: p.cot, gen: t.gen}, p.len))
			if flatCot.IsZero() {
				flatCot = e
			} else {
				flatCot = Add(flatCot, e)
			}
		}
	} else {
		if end < size {
			parts = append(parts, t.fullOf(w, 0, size-end))
		}
		flatCot = parts[0]
		if len(parts) > 1 {
			flatCot = Apply(concatOp, Attrs{}, parts...)
		}
	}
	g := Reshape(flatCot, shape...)
	if !sum.IsZero() {
		g = Add(sum, g)
	}
	_ = wv
	return g
}

// forwardSweep propagates k tangents per node over the nodes [lo, hi) from
// the seeds: seedTan[s*k+j] is the j-th tangent of node seeds[s] (the zero
// Var for none). It returns the tangent slots, (i-lo)*k+j → Var id or -1.
func (t *Tape) forwardSweep(lo, hi int32, k int, seeds []int32, seedTan []Var) []int32 {
	if t.err != nil {
		return nil
	}
	n := int(hi - lo)
	slots := t.ids.alloc(n * k)
	isSeed := t.ids.alloc(n)
	for i := range slots {
		slots[i] = -1
	}
	clear(isSeed)
	for s, id := range seeds {
		isSeed[id-lo] = 1
		for j := 0; j < k; j++ {
			if v := seedTan[s*k+j]; !v.IsZero() {
				slots[int(id-lo)*k+j] = v.id
			}
		}
	}
	t.sweeps++
	defer func() { t.sweeps-- }()
	r := t.rule()
	saveOrder := t.order
	defer func() { t.order = saveOrder }()
	for i := lo; i < hi; i++ {
		nd := &t.nodes[i]
		if nd.kind != kindOp || isSeed[i-lo] != 0 {
			continue
		}
		any := false
		for _, in := range nd.in {
			if in >= lo {
				for j := 0; j < k; j++ {
					if slots[int(in-lo)*k+j] >= 0 {
						any = true
					}
				}
			}
		}
		if !any {
			continue
		}
		jvp, ok := asRule[JVPRule](nd.prim)
		if !ok {
			t.fail(missingRule(nd, "JVP"))
			return nil
		}
		nd = r.setup(i)
		t.order = int(nd.order) + 1
		for j := 0; j < k; j++ {
			r.tangents = r.tangents[:0]
			some := false
			for _, in := range nd.in {
				v := Var{}
				if in >= lo {
					if s := slots[int(in-lo)*k+j]; s >= 0 {
						v = Var{t: t, id: s, gen: t.gen}
						some = true
					}
				}
				r.tangents = append(r.tangents, v)
			}
			if !some {
				continue
			}
			tv := jvp.JVP(r)
			if t.err != nil {
				return nil
			}
			if tv.IsZero() {
				continue
			}
			if !t.live(tv) && !t.check(nd.prim.Name()+" JVP", tv) {
				return nil
			}
			if got := t.nodes[tv.id].shape; !slices.Equal(got, nd.shape) {
				t.fail(errorf("the JVP rule of %s returned shape %v, want %v", nd.prim.Name(), got, nd.shape))
				return nil
			}
			slots[int(i-lo)*k+j] = tv.id
		}
	}
	return slots
}

// sortSmall sorts s by cmp: by insertion for the few elements a sweep
// usually has (a View or two per layer), else with slices.SortFunc.
func sortSmall[T any](s []T, cmp func(a, b T) int) {
	if len(s) > 12 {
		slices.SortFunc(s, cmp)
		return
	}
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && cmp(s[j], s[j-1]) < 0; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
