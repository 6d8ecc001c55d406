package conv

// The direct family's wide path: whole-plane tap kernels over the padded
// wide layout, for stride 1.

import "github.com/flatkit/flatkit/flat"

// The wide-plane layout of the direct kernels, for stride 1 on every axis,
// with any padding and dilation. Each channel's input is laid out in a
// plane of the padded extent e = In + PadLo + PadHi on every axis. That is
// the input itself when there is no padding, and a zero-padded copy
// otherwise. Output position o0, o1, o2 is given the wide index o0·p0 +
// o1·p1 + o2, with the plane's pitches p1 = e2 and p0 = e1·e2.
//
// Then the input value that tap k multiplies into the output at wide index
// j is at j + shift(k) of the plane, for every j. So one kernel tap over a
// whole channel is one axpy or dot between the output and the input plane
// shifted by shift(k). Its length l is the wide index of the last output
// plus 1. The wide indices between rows are outputs that do not exist:
// o2 ≥ Out2, and in 3-D also rows o1 ≥ Out1. Forward computes them into a
// scratch plane and drops them by compactPlane. The adjoints read them as
// zeros, by expandPlanes.
type wideGeom struct {
	e             [3]int    // padded extent per axis (per phase: see phasedOf)
	p0, p1, plane int       // pitches of axes 0 and 1; e0·e1·e2
	l             int       // (Out0−1)·p0 + (Out1−1)·p1 + Out2
	padded        bool      // the input needs a zero-padded copy
	sparse        bool      // wide indices differ from dense ones: l ≠ OutVol
	s             [3]int    // stride per axis
	phases        int       // planes per channel: s0·s1·s2
	cp            int       // channel pitch of the padded input: phases·plane
	used          [3]uint64 // per axis, bit r set if a tap reads phase r (all, for strides above 64)
}

// wideOf returns the wide layout of g, or false if a stride is not 1.
func wideOf(g *Geom) (wd wideGeom, ok bool) {
	for a := 0; a < 3; a++ {
		if g.Stride[a] != 1 {
			return wd, false
		}
	}
	return phasedOf(g), true
}

// phasedOf returns the wide layout of g for any strides. A stride-s axis
// splits each channel's padded input into s phase planes: padded position
// u = i + PadLo goes to phase u mod s at position u div s. The input that
// tap k multiplies into output o is at padded position s·o + d·k, so in
// phase (d·k) mod s at o + (d·k) div s: within one phase plane a tap is
// again a shift of the output grid, and the stride-1 kernels' one
// contiguous read per (channel, tap) carries over, with offset
// phase·plane + shift (see shift). A phase plane's extent is
// Out + (d·(K−1)) div s; positions past it reach no output. With every
// stride 1 there is one phase and this is the stride-1 wide layout.
func phasedOf(g *Geom) wideGeom {
	var wd wideGeom
	wd.phases = 1
	for a := 0; a < 3; a++ {
		s := g.Stride[a]
		wd.s[a] = s
		wd.phases *= s
		wd.e[a] = g.Out[a] + g.Dil[a]*(g.K[a]-1)/s
		wd.used[a] = ^uint64(0)
		if s <= 64 {
			wd.used[a] = 0
			for k := 0; k < g.K[a]; k++ {
				wd.used[a] |= 1 << (k * g.Dil[a] % s)
			}
		}
		if s != 1 || g.PadLo[a] != 0 || wd.e[a] != g.In[a] {
			wd.padded = true
		}
	}
	wd.p1 = wd.e[2]
	wd.p0 = wd.e[1] * wd.e[2]
	wd.plane = wd.e[0] * wd.p0
	wd.cp = wd.phases * wd.plane
	wd.l = (g.Out[0]-1)*wd.p0 + (g.Out[1]-1)*wd.p1 + g.Out[2]
	wd.sparse = wd.l != g.OutVol()
	return wd
}

// shift returns the offset in a channel's padded input of the value
// tap (k0, k1, k2) multiplies into wide output 0: phase·plane plus the
// tap's shift within its phase plane (for stride 1, the plane offset
// k·d along each axis).
func (wd *wideGeom) shift(g *Geom, k0, k1, k2 int) int {
	u0, u1, u2 := k0*g.Dil[0], k1*g.Dil[1], k2*g.Dil[2]
	s0, s1, s2 := wd.s[0], wd.s[1], wd.s[2]
	if wd.phases == 1 {
		return u0*wd.p0 + u1*wd.p1 + u2
	}
	ph := ((u0%s0)*s1+u1%s1)*s2 + u2%s2
	return ph*wd.plane + u0/s0*wd.p0 + u1/s1*wd.p1 + u2/s2
}

// vecMin is the length from which a call into flat's assembly kernels beats
// a Go loop.
const vecMin = 24

// axpy is y += a·x for len(x) ≤ len(y).
func axpy(a float32, x, y []float32) {
	if len(x) >= vecMin {
		flat.Axpy(a, x, y[:len(x)])
		return
	}
	y = y[:len(x)]
	for j, v := range x {
		y[j] += a * v
	}
}

// pitch returns the distance between the input planes the wide kernels
// read: the padded plane's, or the input's own.
func (wd *wideGeom) pitch(g *Geom) int {
	if wd.padded {
		return wd.cp
	}
	return g.InVol()
}

// scratchSizes returns the scratch floats the wide kernels need for c
// padded input planes (c·cp where the input needs padding, else 0) and for
// wide planes of n floats in all (n where wide indices are sparse, else 0).
func (wd *wideGeom) scratchSizes(c, n int) (padded, wide int) {
	if wd.padded {
		padded = c * wd.cp
	}
	if wd.sparse {
		wide = n
	}
	return padded, wide
}

// inputPlanes returns batch item n's input planes in the wide layout: x's
// own, or copied with their padding into xp.
func (wd *wideGeom) inputPlanes(xp, x []float32, g *Geom, n int) []float32 {
	xs := x[n*g.Cin*g.InVol():][:g.Cin*g.InVol()]
	if wd.padded {
		padPlanes(xp, xs, g, wd, g.Cin)
		return xp
	}
	return xs
}

// padPlanes copies c input channels (In each) into zero-padded planes
// (cp values a channel; the phase planes of phasedOf for strides above 1).
func padPlanes(xp, x []float32, g *Geom, wd *wideGeom, c int) {
	if wd.phases > 1 {
		phasePlanes(xp, x, g, wd, c, false)
		return
	}
	iv := g.InVol()
	n0, n1, n2 := min(g.In[0], wd.e[0]-g.PadLo[0]), min(g.In[1], wd.e[1]-g.PadLo[1]), min(g.In[2], wd.e[2]-g.PadLo[2])
	for ch := 0; ch < c; ch++ {
		dst := xp[ch*wd.plane:][:wd.plane]
		src := x[ch*iv:][:iv]
		clear(dst)
		for i0 := 0; i0 < n0; i0++ {
			for i1 := 0; i1 < n1; i1++ {
				d := (i0+g.PadLo[0])*wd.p0 + (i1+g.PadLo[1])*wd.p1 + g.PadLo[2]
				copy(dst[d:d+n2], src[(i0*g.In[1]+i1)*g.In[2]:])
			}
		}
	}
}

// cropPlane is the adjoint of padPlanes for one channel: dx (In) takes the
// values of the padded plane dxp (cp values) at its positions.
func cropPlane(dx, dxp []float32, g *Geom, wd *wideGeom) {
	if wd.phases > 1 {
		phasePlanes(dxp, dx, g, wd, 1, true)
		return
	}
	n0, n1, n2 := min(g.In[0], wd.e[0]-g.PadLo[0]), min(g.In[1], wd.e[1]-g.PadLo[1]), min(g.In[2], wd.e[2]-g.PadLo[2])
	if n0 < g.In[0] || n1 < g.In[1] || n2 < g.In[2] {
		clear(dx) // inputs that reach no output
	}
	for i0 := 0; i0 < n0; i0++ {
		for i1 := 0; i1 < n1; i1++ {
			d := (i0+g.PadLo[0])*wd.p0 + (i1+g.PadLo[1])*wd.p1 + g.PadLo[2]
			copy(dx[(i0*g.In[1]+i1)*g.In[2]:][:n2], dxp[d:d+n2])
		}
	}
}

// unused reports whether no tap reads phase r along axis a.
func (wd *wideGeom) unused(a, r int) bool { return r < 64 && wd.used[a]&(1<<r) == 0 }

// inEnd returns how many inputs along axis a (spatial axis 0 or 1) fall
// inside the phase planes: input i lands in phase plane row
// (i + PadLo)/s, which must be below e.
func (wd *wideGeom) inEnd(g *Geom, a int) int {
	return min(g.In[a], wd.e[a]*wd.s[a]-g.PadLo[a])
}

// phasePlanes copies c channels of x (In each) into their phase planes in
// xp (cp each, zero where nothing lands), or, if back, the other way:
// every input position takes its value in the phase planes, zero if it
// reaches no output. Phases that no tap reads (those of a 1×1 kernel's
// skipped positions) are neither written nor read.
func phasePlanes(xp, x []float32, g *Geom, wd *wideGeom, c int, back bool) {
	iv := g.InVol()
	s0, s1, s2 := wd.s[0], wd.s[1], wd.s[2]
	// The runs of axis 2, the same for every row: per used phase r, the
	// first input of the row in it, its place in the phase plane's row and
	// how many there are.
	type run struct{ r, i, q, n int }
	var runs [8]run
	nr := 0
	for r := 0; r < s2 && nr < len(runs); r++ {
		if wd.unused(2, r) {
			continue
		}
		i2 := ((r-g.PadLo[2])%s2 + s2) % s2
		q := (i2 + g.PadLo[2]) / s2
		if n := min((g.In[2]-i2+s2-1)/s2, wd.e[2]-q); n > 0 {
			runs[nr] = run{r, i2, q, n}
			nr++
		}
	}
	generic := s2 > len(runs)
	// Inputs from end0 (end1) on along axis 0 (1) are past the planes.
	end0, end1 := wd.inEnd(g, 0), wd.inEnd(g, 1)
	for ch := 0; ch < c; ch++ {
		planes := xp[ch*wd.cp:][:wd.cp]
		xc := x[ch*iv:][:iv]
		if back {
			clear(xc)
		} else {
			clear(planes)
		}
		for i0 := 0; i0 < end0; i0++ {
			u0 := i0 + g.PadLo[0]
			if wd.unused(0, u0%s0) {
				continue
			}
			for i1 := 0; i1 < end1; i1++ {
				u1 := i1 + g.PadLo[1]
				if wd.unused(1, u1%s1) {
					continue
				}
				row := xc[(i0*g.In[1]+i1)*g.In[2]:][:g.In[2]]
				base := ((u0%s0)*s1+u1%s1)*s2*wd.plane + u0/s0*wd.p0 + u1/s1*wd.p1
				if generic {
					for r := 0; r < s2; r++ {
						i2 := ((r-g.PadLo[2])%s2 + s2) % s2
						q := (i2 + g.PadLo[2]) / s2
						if n := min((g.In[2]-i2+s2-1)/s2, wd.e[2]-q); n > 0 {
							strided(planes[base+r*wd.plane+q:][:n], row[i2:], s2, back)
						}
					}
					continue
				}
				for _, ru := range runs[:nr] {
					strided(planes[base+ru.r*wd.plane+ru.q:][:ru.n], row[ru.i:], s2, back)
				}
			}
		}
	}
}

// strided copies src[j·s] to ph[j] for j < len(ph), or back.
func strided(ph, src []float32, s int, back bool) {
	n := len(ph)
	if s == 1 {
		if back {
			copy(src[:n], ph)
		} else {
			copy(ph, src[:n])
		}
		return
	}
	src = src[:(n-1)*s+1]
	if s == 2 {
		src = src[:2*n-1]
		if back {
			for j, v := range ph {
				src[2*j] = v
			}
			return
		}
		for j := range ph {
			ph[j] = src[2*j]
		}
		return
	}
	if back {
		for j, v := range ph {
			src[j*s] = v
		}
		return
	}
	for j := range ph {
		ph[j] = src[j*s]
	}
}

// outputPlanes returns batch item n's output planes (of dy, the output
// cotangent) in the wide layout and their pitch: dy's own (OutVol apart),
// or expanded into dyw (l apart) where wide indices are sparse.
func (wd *wideGeom) outputPlanes(dyw, dy []float32, g *Geom, n int) ([]float32, int) {
	ov := g.OutVol()
	dys := dy[n*g.Cout*ov:][:g.Cout*ov]
	if wd.sparse {
		expandPlanes(dyw, dys, g, wd, g.Cout)
		return dyw, wd.l
	}
	return dys, ov
}

// expandPlanes copies c output channels (OutVol each) into wide planes of
// length l with zeros at the wide indices that are not outputs.
func expandPlanes(dyw, dy []float32, g *Geom, wd *wideGeom, c int) {
	ov := g.OutVol()
	for ch := 0; ch < c; ch++ {
		dst := dyw[ch*wd.l:][:wd.l]
		src := dy[ch*ov:][:ov]
		clear(dst)
		o := 0
		for o0 := 0; o0 < g.Out[0]; o0++ {
			for o1 := 0; o1 < g.Out[1]; o1++ {
				copy(dst[o0*wd.p0+o1*wd.p1:][:g.Out[2]], src[o:o+g.Out[2]])
				o += g.Out[2]
			}
		}
	}
}

// expandPlanesAt is expandPlanes into planes of the given pitch, each
// plane's wide index 0 at offset base; the caller clears dst.
func expandPlanesAt(dst, dy []float32, g *Geom, wd *wideGeom, c, pitch, base int) {
	ov := g.OutVol()
	for ch := 0; ch < c; ch++ {
		dc := dst[ch*pitch+base:][:wd.l]
		src := dy[ch*ov:][:ov]
		o := 0
		for o0 := 0; o0 < g.Out[0]; o0++ {
			for o1 := 0; o1 < g.Out[1]; o1++ {
				copy(dc[o0*wd.p0+o1*wd.p1:][:g.Out[2]], src[o:o+g.Out[2]])
				o += g.Out[2]
			}
		}
	}
}

// compactPlane is the inverse of expandPlanes for one channel: y (OutVol)
// takes the outputs of the wide plane acc.
func compactPlane(y, acc []float32, g *Geom, wd *wideGeom) {
	o := 0
	for o0 := 0; o0 < g.Out[0]; o0++ {
		for o1 := 0; o1 < g.Out[1]; o1++ {
			copy(y[o:o+g.Out[2]], acc[o0*wd.p0+o1*wd.p1:])
			o += g.Out[2]
		}
	}
}

// The wide kernels make one tap-kernel call per (batch item, channel): see
// accTaps and dotTaps (taps.go).

// inputOffsets takes from ints the plane offsets of every (input channel,
// tap) pair of a group's CinG channels in the wide input planes (tapOffsets
// at their pitch), and returns them with that pitch; put po back when done.
func (wd *wideGeom) inputOffsets(g *Geom) (po *[]int, offs []int, pitch int) {
	cig := g.CinG()
	pitch = wd.pitch(g)
	po = ints.Get(cig * g.KVol())
	offs = *po
	tapOffsets(offs, g, wd, cig, pitch, 0, 1)
	return po, offs, pitch
}

// tapOffsets fills offs[ci·KVol+k] with ci·pitch + base + sign·shift(k),
// the plane offsets of every (channel, tap) pair of c channels.
func tapOffsets(offs []int, g *Geom, wd *wideGeom, c, pitch, base, sign int) {
	t := 0
	for ci := 0; ci < c; ci++ {
		for k0 := 0; k0 < g.K[0]; k0++ {
			for k1 := 0; k1 < g.K[1]; k1++ {
				for k2 := 0; k2 < g.K[2]; k2++ {
					offs[t] = ci*pitch + base + sign*wd.shift(g, k0, k1, k2)
					t++
				}
			}
		}
	}
}

// wideForward is DirectForward for stride 1: per (batch item, output
// channel), acc = Σ over (input channel, tap) of the weight times the
// input plane shifted by the tap.
func wideForward(y, x, w []float32, g *Geom, wd *wideGeom) {
	ov, kv, l := g.OutVol(), g.KVol(), wd.l
	cig, cog := g.CinG(), g.CoutG()
	np, na := wd.scratchSizes(g.Cin, l)
	ps := scratch.Get(np + na)
	xp, acc := (*ps)[:np], (*ps)[np:]
	po, offs, pitch := wd.inputOffsets(g)
	for n := 0; n < g.N; n++ {
		xs := wd.inputPlanes(xp, x, g, n)
		for co := 0; co < g.Cout; co++ {
			grp := co / cog
			yc := y[(n*g.Cout+co)*ov:][:ov]
			a := yc
			if wd.sparse {
				a = acc
			}
			a = a[:l]
			clear(a)
			accTaps(a, xs[grp*cig*pitch:][:cig*pitch], offs, w[co*cig*kv:][:cig*kv])
			if wd.sparse {
				compactPlane(yc, acc, g, wd)
			}
		}
	}
	ints.Put(po)
	scratch.Put(ps)
}

// wideData is DirectData for stride 1: per (batch item, input channel),
// the sum over (output channel, tap) of the weight times the output
// channel's wide plane shifted back by the tap. Each output plane is laid
// out with a margin of zeros as long as the largest shift before it (and
// enough after), so that the shifted reads stay inside.
func wideData(dx, dy, w []float32, g *Geom, wd *wideGeom) {
	iv, ov, kv := g.InVol(), g.OutVol(), g.KVol()
	cig, cog := g.CinG(), g.CoutG()
	m := wd.shift(g, g.K[0]-1, g.K[1]-1, g.K[2]-1)
	dpitch := wd.plane + m
	nd, np := g.Cout*dpitch, 0
	if wd.padded {
		np = wd.plane
	}
	ps := scratch.Get(nd + np + cog*kv)
	d, dxp, ws := (*ps)[:nd], (*ps)[nd:nd+np], (*ps)[nd+np:]
	po := ints.Get(cog * kv)
	offs := *po
	tapOffsets(offs, g, wd, cog, dpitch, m, -1)
	for n := 0; n < g.N; n++ {
		clear(d)
		expandPlanesAt(d, dy[n*g.Cout*ov:][:g.Cout*ov], g, wd, g.Cout, dpitch, m)
		for c := 0; c < g.Cin; c++ {
			grp, ci := c/cig, c%cig
			for cl := 0; cl < cog; cl++ {
				copy(ws[cl*kv:][:kv], w[((grp*cog+cl)*cig+ci)*kv:][:kv])
			}
			dxc := dx[(n*g.Cin+c)*iv:][:iv]
			acc := dxc
			if wd.padded {
				acc = dxp
			}
			acc = acc[:wd.plane]
			clear(acc)
			accTaps(acc, d[grp*cog*dpitch:][:cog*dpitch], offs, ws)
			if wd.padded {
				cropPlane(dxc, acc, g, wd)
			}
		}
	}
	ints.Put(po)
	scratch.Put(ps)
}

// wideFilter is DirectFilter for stride 1, adding into a cleared dw: per
// (batch item, output channel), the dot products of the output channel's
// wide plane with the input planes shifted by every tap.
func wideFilter(dw, x, dy []float32, g *Geom, wd *wideGeom) {
	kv, l := g.KVol(), wd.l
	cig, cog := g.CinG(), g.CoutG()
	np, nw := wd.scratchSizes(g.Cin, g.Cout*l)
	ps := scratch.Get(np + nw)
	xp, dyw := (*ps)[:np], (*ps)[np:]
	po, offs, pitch := wd.inputOffsets(g)
	for n := 0; n < g.N; n++ {
		xs := wd.inputPlanes(xp, x, g, n)
		dys, dpitch := wd.outputPlanes(dyw, dy, g, n)
		for co := 0; co < g.Cout; co++ {
			grp := co / cog
			dotTaps(dw[co*cig*kv:][:cig*kv], dys[co*dpitch:][:l], xs[grp*cig*pitch:][:cig*pitch], offs)
		}
	}
	ints.Put(po)
	scratch.Put(ps)
}
