package conv

// The direct family's small path: cached (tap, output, input) tables for
// outputs of at most SmallMaxOut positions.

import "sync/atomic"

// SmallMaxOut is the largest number of output positions for which the
// direct kernels take the small path. Planes this small are like
// deepchain's 2×2 images. There the vector kernels would work on rows of a
// few values, and a dense im2col matrix would be mostly padding. So the
// small path walks smallTable, a cached list of the kernel tap, output and
// input triples that exist. It keeps the sums of four output channels in
// registers.
const SmallMaxOut = 16

// small reports whether g takes the small path.
func small(g *Geom) bool { return g.OutVol() <= SmallMaxOut }

// smallTable lists, for a small geometry, every triple r, o, i that the
// convolution multiplies. r = ci·KVol + k is a group's im2col row, o an
// output position and i = ci·InVol + spatial an input offset. Taps in the
// padding are left out. The list is held three times, sorted for each
// kernel. The forward pass reads it by o: oR and oI hold the rows and
// inputs of output o at oStart[o]:oStart[o+1]. The data gradient reads it
// by i, in iR and iO, and the filter gradient by r, in rO and rI. The
// table depends on the geometry only, not on N.
type smallTable struct {
	key            Geom // the geometry with N = 0
	oStart, oR, oI []int32
	iStart, iR, iO []int32
	rStart, rO, rI []int32
	rR             []int32 // the row of each triple in r order
	// live lists the rows that have a triple (the rest read only padding,
	// in every output): smallGemmForward leaves the dead rows out of its
	// GEMM.
	live []int32
}

// byOut returns the triples of output position o: their im2col rows and
// input positions, ii resliced to rr's length so the loops over them need
// no bounds checks.
func (t *smallTable) byOut(o int) (rr, ii []int32) {
	lo, hi := t.oStart[o], t.oStart[o+1]
	rr = t.oR[lo:hi]
	return rr, t.oI[lo:hi][:len(rr)]
}

// byIn returns the triples of input position i: their rows and output
// positions (oo resliced to rr's length).
func (t *smallTable) byIn(i int) (rr, oo []int32) {
	lo, hi := t.iStart[i], t.iStart[i+1]
	rr = t.iR[lo:hi]
	return rr, t.iO[lo:hi][:len(rr)]
}

// byRow returns the triples of im2col row r: their output and input
// positions (ii resliced to oo's length).
func (t *smallTable) byRow(r int) (oo, ii []int32) {
	lo, hi := t.rStart[r], t.rStart[r+1]
	oo = t.rO[lo:hi]
	return oo, t.rI[lo:hi][:len(oo)]
}

// tables caches the tables of the last few small geometries; entries are
// immutable once published, so concurrent kernels share them.
var (
	tables    [32]atomic.Pointer[smallTable]
	tableNext atomic.Uint32
)

// tableFor returns the table of g, building it on first use.
func tableFor(g *Geom) *smallTable {
	key := *g
	key.N = 0
	for i := range tables {
		if t := tables[i].Load(); t != nil && t.key == key {
			return t
		}
	}
	t := buildTable(g)
	t.key = key
	tables[tableNext.Add(1)%uint32(len(tables))].Store(t)
	return t
}

func buildTable(g *Geom) *smallTable {
	iv, ov, kv, cig := g.InVol(), g.OutVol(), g.KVol(), g.CinG()
	ck := cig * kv
	// The triples in (r, o) order, which is the filter kernel's.
	var rs, os, is []int32
	t := &smallTable{rStart: make([]int32, ck+1)}
	for ci := 0; ci < cig; ci++ {
		for k := 0; k < kv; k++ {
			k0, k1, k2 := g.tap(k)
			r := ci*kv + k
			for o := 0; o < ov; o++ {
				o0, o1, o2 := o/(g.Out[1]*g.Out[2]), o/g.Out[2]%g.Out[1], o%g.Out[2]
				i0 := o0*g.Stride[0] - g.PadLo[0] + k0*g.Dil[0]
				i1 := o1*g.Stride[1] - g.PadLo[1] + k1*g.Dil[1]
				i2 := o2*g.Stride[2] - g.PadLo[2] + k2*g.Dil[2]
				if i0 < 0 || i0 >= g.In[0] || i1 < 0 || i1 >= g.In[1] || i2 < 0 || i2 >= g.In[2] {
					continue
				}
				rs = append(rs, int32(r))
				os = append(os, int32(o))
				is = append(is, int32(ci*iv+(i0*g.In[1]+i1)*g.In[2]+i2))
			}
			t.rStart[r+1] = int32(len(rs))
		}
	}
	t.rO, t.rI, t.rR = os, is, rs
	for r := 0; r < ck; r++ {
		if t.rStart[r+1] > t.rStart[r] {
			t.live = append(t.live, int32(r))
		}
	}
	// Counting sorts by o and by i; stable, so each list stays in r order.
	sortBy := func(key []int32, n int, a, b []int32) (start, sa, sb []int32) {
		start = make([]int32, n+1)
		for _, v := range key {
			start[v+1]++
		}
		for j := 0; j < n; j++ {
			start[j+1] += start[j]
		}
		next := append([]int32(nil), start[:n]...)
		sa, sb = make([]int32, len(key)), make([]int32, len(key))
		for e, v := range key {
			sa[next[v]], sb[next[v]] = a[e], b[e]
			next[v]++
		}
		return start, sa, sb
	}
	t.oStart, t.oR, t.oI = sortBy(os, ov, rs, is)
	t.iStart, t.iR, t.iO = sortBy(is, cig*iv, rs, os)
	return t
}

// smallDirect is the direct kernels for small outputs (mode and operands
// as in tapLoop), one (batch item, group) at a time; the filter gradient
// adds into a cleared dw.
func smallDirect(mode int, y, x, w []float32, g *Geom) {
	iv, ov := g.InVol(), g.OutVol()
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	t := tableFor(g)
	for n := 0; n < g.N; n++ {
		for grp := 0; grp < g.Groups; grp++ {
			xg := x[(n*g.Cin+grp*cig)*iv:][:cig*iv]
			yg := y[(n*g.Cout+grp*cog)*ov:][:cog*ov]
			wg := w[grp*cog*ck:][:cog*ck]
			switch mode {
			case modeForward:
				smallForwardGroup(yg, xg, wg, t, cog, ov, ck)
			case modeData:
				smallDataGroup(xg, yg, wg, t, cog, ov, ck)
			default:
				smallFilterGroup(wg, xg, yg, t, cog, ov, ck)
			}
		}
	}
}

// smallForward, smallData and smallFilter are DirectForward, DirectData and
// DirectFilter for small outputs (smallFilter adds into a cleared dw).
func smallForward(y, x, w []float32, g *Geom)  { smallDirect(modeForward, y, x, w, g) }
func smallData(dx, dy, w []float32, g *Geom)   { smallDirect(modeData, dy, dx, w, g) }
func smallFilter(dw, x, dy []float32, g *Geom) { smallDirect(modeFilter, dy, x, dw, g) }

// quad returns the four consecutive n-value blocks of s from off: the
// operands of four channels.
func quad(s []float32, off, n int) (a, b, c, d []float32) {
	return s[off:][:n], s[off+n:][:n], s[off+2*n:][:n], s[off+3*n:][:n]
}

// smallForwardGroup is the forward pass of one (batch item, group) for small
// outputs: for each output position, the sum over its triples, for four
// output channels at a time.
func smallForwardGroup(yg, xg, wg []float32, t *smallTable, cog, ov, ck int) {
	c := 0
	for ; c+4 <= cog; c += 4 {
		w0, w1, w2, w3 := quad(wg, c*ck, ck)
		y0, y1, y2, y3 := quad(yg, c*ov, ov)
		for o := range y0 {
			rr, ii := t.byOut(o)
			var s0, s1, s2, s3 float32
			for e, r := range rr {
				xv := xg[ii[e]]
				s0 += w0[r] * xv
				s1 += w1[r] * xv
				s2 += w2[r] * xv
				s3 += w3[r] * xv
			}
			y0[o], y1[o], y2[o], y3[o] = s0, s1, s2, s3
		}
	}
	for ; c < cog; c++ {
		wc, yc := wg[c*ck:][:ck], yg[c*ov:][:ov]
		for o := range yc {
			rr, ii := t.byOut(o)
			var s float32
			for e, r := range rr {
				s += wc[r] * xg[ii[e]]
			}
			yc[o] = s
		}
	}
}

// smallDataGroup is the data gradient of one (batch item, group) for small
// outputs: for each input position, the sum over its triples and over the
// output channels of the group.
func smallDataGroup(dxg, dyg, wg []float32, t *smallTable, cog, ov, ck int) {
	clear(dxg)
	c := 0
	for ; c+4 <= cog; c += 4 {
		w0, w1, w2, w3 := quad(wg, c*ck, ck)
		d0, d1, d2, d3 := quad(dyg, c*ov, ov)
		for i := range dxg {
			rr, oo := t.byIn(i)
			var s0, s1, s2, s3 float32
			for e, r := range rr {
				o := oo[e]
				s0 += w0[r] * d0[o]
				s1 += w1[r] * d1[o]
				s2 += w2[r] * d2[o]
				s3 += w3[r] * d3[o]
			}
			dxg[i] += (s0 + s1) + (s2 + s3)
		}
	}
	for ; c < cog; c++ {
		wc, dc := wg[c*ck:][:ck], dyg[c*ov:][:ov]
		for i := range dxg {
			rr, oo := t.byIn(i)
			var s float32
			for e, r := range rr {
				s += wc[r] * dc[oo[e]]
			}
			dxg[i] += s
		}
	}
}

// smallFilterGroup is the filter gradient of one (batch item, group) for small
// outputs, added into dwg: for each im2col row, the sum over its triples,
// for four output channels at a time.
func smallFilterGroup(dwg, xg, dyg []float32, t *smallTable, cog, ov, ck int) {
	c := 0
	for ; c+4 <= cog; c += 4 {
		d0, d1, d2, d3 := quad(dyg, c*ov, ov)
		w0, w1, w2, w3 := quad(dwg, c*ck, ck)
		// One pass over the triples in row order, flushing the four sums
		// when the row changes: rows have few triples each (deepchain: 0 to
		// 4), too few for a loop per row.
		rr, oo, ii := t.rR, t.rO[:len(t.rR)], t.rI[:len(t.rR)]
		if len(rr) == 0 {
			continue
		}
		cur := rr[0]
		var s0, s1, s2, s3 float32
		for e, r := range rr {
			if r != cur {
				w0[cur] += s0
				w1[cur] += s1
				w2[cur] += s2
				w3[cur] += s3
				s0, s1, s2, s3 = 0, 0, 0, 0
				cur = r
			}
			o := oo[e]
			xv := xg[ii[e]]
			s0 += d0[o] * xv
			s1 += d1[o] * xv
			s2 += d2[o] * xv
			s3 += d3[o] * xv
		}
		w0[cur] += s0
		w1[cur] += s1
		w2[cur] += s2
		w3[cur] += s3
	}
	for ; c < cog; c++ {
		dc, wc := dyg[c*ov:][:ov], dwg[c*ck:][:ck]
		for r := range wc {
			oo, ii := t.byRow(r)
			var s float32
			for e, o := range oo {
				s += dc[o] * xg[ii[e]]
			}
			wc[r] += s
		}
	}
}
