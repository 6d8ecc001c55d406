package conv

// im2col and col2im for the GEMM family's strided path.

// colRow holds, per spatial axis, the outputs [lo, hi) whose input for
// one kernel tap lies inside the input, and that input position at lo.
type colRow struct {
	lo0, hi0, i0, lo1, hi1, i1, lo2, hi2, i2 int
}

// tapRanges returns the colRow of tap k.
func tapRanges(g *Geom, k int) colRow {
	var r colRow
	k0, k1, k2 := g.tap(k)
	r.lo0, r.hi0, r.i0 = axisRange(g, 0, k0)
	r.lo1, r.hi1, r.i1 = axisRange(g, 1, k1)
	r.lo2, r.hi2, r.i2 = axisRange(g, 2, k2)
	return r
}

// empty reports whether the tap reads only padding.
func (r *colRow) empty() bool { return r.lo2 >= r.hi2 || r.lo1 >= r.hi1 || r.lo0 >= r.hi0 }

// im2col fills cols (CinG·KVol × OutVol, row-major) from the CinG channels
// of xg, with zeros where a tap falls in the padding: one copy (or strided
// gather) per (channel, tap, output row). The valid ranges of a tap are
// computed once for all channels.
func im2col(cols, xg []float32, g *Geom) {
	iv, ov, kv, cig := g.InVol(), g.OutVol(), g.KVol(), g.CinG()
	s0, s1, s2 := g.Stride[0], g.Stride[1], g.Stride[2]
	out1, out2, in1, in2 := g.Out[1], g.Out[2], g.In[1], g.In[2]
	for k := range kv {
		r := tapRanges(g, k)
		empty := r.empty()
		n := r.hi2 - r.lo2
		for ci := 0; ci < cig; ci++ {
			row := cols[(ci*kv+k)*ov:][:ov]
			if empty {
				clear(row)
				continue
			}
			xc := xg[ci*iv:][:iv]
			o := 0
			for o0 := 0; o0 < g.Out[0]; o0++ {
				if o0 < r.lo0 || o0 >= r.hi0 {
					clear(row[o : o+out1*out2])
					o += out1 * out2
					continue
				}
				x0 := r.i0 + (o0-r.lo0)*s0
				for o1 := 0; o1 < out1; o1++ {
					rr := row[o : o+out2]
					o += out2
					if o1 < r.lo1 || o1 >= r.hi1 {
						clear(rr)
						continue
					}
					x1 := r.i1 + (o1-r.lo1)*s1
					clear(rr[:r.lo2])
					clear(rr[r.hi2:])
					xb := (x0*in1+x1)*in2 + r.i2
					dst := rr[r.lo2:r.hi2]
					switch {
					case s2 == 1 && n >= 8:
						copy(dst, xc[xb:xb+n])
					case s2 == 1:
						src := xc[xb : xb+n]
						for j := range dst {
							dst[j] = src[j]
						}
					default:
						src := xc[xb : xb+(n-1)*s2+1]
						for j := range dst {
							dst[j] = src[j*s2]
						}
					}
				}
			}
		}
	}
}

// col2im adds cols back into the CinG channels of dxg: the adjoint of
// im2col.
func col2im(dxg, cols []float32, g *Geom) {
	iv, ov, kv, cig := g.InVol(), g.OutVol(), g.KVol(), g.CinG()
	s0, s1, s2 := g.Stride[0], g.Stride[1], g.Stride[2]
	out1, out2, in1, in2 := g.Out[1], g.Out[2], g.In[1], g.In[2]
	for k := range kv {
		r := tapRanges(g, k)
		if r.empty() {
			continue
		}
		n := r.hi2 - r.lo2
		for ci := 0; ci < cig; ci++ {
			dc := dxg[ci*iv:][:iv]
			row := cols[(ci*kv+k)*ov:][:ov]
			for o0 := r.lo0; o0 < r.hi0; o0++ {
				x0 := r.i0 + (o0-r.lo0)*s0
				for o1 := r.lo1; o1 < r.hi1; o1++ {
					x1 := r.i1 + (o1-r.lo1)*s1
					src := row[(o0*out1+o1)*out2+r.lo2:][:n]
					xb := (x0*in1+x1)*in2 + r.i2
					if s2 == 1 {
						axpy(1, src, dc[xb:xb+n])
					} else {
						dst := dc[xb : xb+(n-1)*s2+1]
						for j, v := range src {
							dst[j*s2] += v
						}
					}
				}
			}
		}
	}
}
