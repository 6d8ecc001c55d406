package conv

// The direct family's general path: per-row tap loops (tapLoop) for any
// stride, and the dispatch between the small, wide and row paths.

// Modes of tapLoop: which of the three operands is accumulated.
const (
	modeForward = iota // yc += wc ⋆ xc
	modeData           // xc += wc ⋆ᵀ yc
	modeFilter         // wc += xc ⋆ yc
)

// axisRange returns the outputs [lo, hi) along axis a whose input position
// for tap k lies inside the input, and that input position at lo.
func axisRange(g *Geom, a, k int) (lo, hi, i int) {
	off := k*g.Dil[a] - g.PadLo[a] // input position of output 0
	s := g.Stride[a]
	if s == 1 {
		lo, hi = max(-off, 0), min(g.In[a]-off, g.Out[a])
		hi = max(hi, lo)
		return lo, hi, lo + off
	}
	if off < 0 {
		lo = (-off + s - 1) / s
	}
	if last := g.In[a] - 1 - off; last >= 0 {
		hi = min(last/s+1, g.Out[a])
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi, lo*s + off
}

// tapLoop runs one (input channel, output channel) pair of the direct
// kernels: for each kernel tap it walks the rows of valid output positions,
// so the innermost loop is a strided axpy (or dot) with no bounds tests.
func tapLoop(g *Geom, mode int, yc, xc, wc []float32) {
	s0, s1, s2 := g.Stride[0], g.Stride[1], g.Stride[2]
	in1, in2, out1, out2 := g.In[1], g.In[2], g.Out[1], g.Out[2]
	k := 0
	for k0 := 0; k0 < g.K[0]; k0++ {
		lo0, hi0, i0 := axisRange(g, 0, k0)
		for k1 := 0; k1 < g.K[1]; k1++ {
			lo1, hi1, i1 := axisRange(g, 1, k1)
			for k2 := 0; k2 < g.K[2]; k2++ {
				lo2, hi2, i2 := axisRange(g, 2, k2)
				n := hi2 - lo2
				if n <= 0 || hi1 <= lo1 || hi0 <= lo0 {
					k++
					continue
				}
				var acc float32
				wv := wc[k]
				for o0, x0 := lo0, i0; o0 < hi0; o0, x0 = o0+1, x0+s0 {
					for o1, x1 := lo1, i1; o1 < hi1; o1, x1 = o1+1, x1+s1 {
						yr := yc[(o0*out1+o1)*out2+lo2:][:n]
						xb := (x0*in1+x1)*in2 + i2
						xr := xc[xb : xb+(n-1)*s2+1]
						switch {
						case mode == modeForward && s2 == 1:
							xr = xr[:len(yr)]
							for j := range yr {
								yr[j] += wv * xr[j]
							}
						case mode == modeForward:
							for j := range yr {
								yr[j] += wv * xr[j*s2]
							}
						case mode == modeData && s2 == 1:
							xr = xr[:len(yr)]
							for j := range yr {
								xr[j] += wv * yr[j]
							}
						case mode == modeData:
							for j := range yr {
								xr[j*s2] += wv * yr[j]
							}
						case s2 == 1:
							xr = xr[:len(yr)]
							for j := range yr {
								acc += xr[j] * yr[j]
							}
						default:
							for j := range yr {
								acc += xr[j*s2] * yr[j]
							}
						}
					}
				}
				if mode == modeFilter {
					wc[k] += acc
				}
				k++
			}
		}
	}
}

// direct runs tapLoop over every batch item and channel pair.
func direct(mode int, y, x, w []float32, g *Geom) {
	iv, ov, kv := g.InVol(), g.OutVol(), g.KVol()
	cig, cog := g.CinG(), g.CoutG()
	for n := 0; n < g.N; n++ {
		for co := 0; co < g.Cout; co++ {
			grp := co / cog
			yc := y[(n*g.Cout+co)*ov:][:ov]
			for ci := 0; ci < cig; ci++ {
				xc := x[(n*g.Cin+grp*cig+ci)*iv:][:iv]
				wc := w[(co*cig+ci)*kv:][:kv]
				tapLoop(g, mode, yc, xc, wc)
			}
		}
	}
}

// DirectForward is Forward by direct loops.
func DirectForward(y, x, w []float32, g *Geom) {
	directPaths(modeForward, y[:g.N*g.Cout*g.OutVol()], x, w, g)
}

// DirectData is Data by direct loops.
func DirectData(dx, dy, w []float32, g *Geom) {
	directPaths(modeData, dy, dx[:g.N*g.Cin*g.InVol()], w, g)
}

// DirectFilter is Filter by direct loops.
func DirectFilter(dw, x, dy []float32, g *Geom) {
	directPaths(modeFilter, dy, x, dw[:g.Cout*g.CinG()*g.KVol()], g)
}

// directPaths runs mode (the operands in tapLoop's order) by the small
// path, the wide path for stride 1, or the row path. The filter gradient's
// paths add into dw, cleared first; in the other modes the small and wide
// paths write their whole output and only the row path adds into it.
func directPaths(mode int, y, x, w []float32, g *Geom) {
	if mode == modeFilter {
		clear(w)
	}
	if small(g) {
		smallDirect(mode, y, x, w, g)
		return
	}
	if wd, ok := wideOf(g); ok {
		switch mode {
		case modeForward:
			wideForward(y, x, w, g, &wd)
		case modeData:
			wideData(x, y, w, g, &wd)
		default:
			wideFilter(w, x, y, g, &wd)
		}
		return
	}
	switch mode {
	case modeForward:
		clear(y)
	case modeData:
		clear(x)
	}
	direct(mode, y, x, w, g)
}
