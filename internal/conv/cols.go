package conv

import "github.com/flatkit/flatkit/flat"

// The wide im2col forward, for stride 1 on every axis. In the wide layout
// (see wideGeom) row r = ci·KVol + k of a group's im2col matrix is the
// channel's plane read from offset shift(k) for l values: one contiguous
// copy per row, where the dense im2col makes one per (row, output row).
// The product
//
//	Y (CoutG × l) = W (CoutG × CinG·KVol) · cols (CinG·KVol × l)
//
// is then one flat.Gemm per (image, group) of depth CinG·KVol, where the
// tap-GEMM path (tapGemmForward) makes KVol products of depth CinG, each
// reading and writing all of Y. W is passed transposed, (CinG·KVol ×
// CoutG), which flat.Gemm packs by copying runs rather than by
// interleaving rows, once per call of the kernel instead of once per image.

// ColsMaxFloats bounds the im2col matrix of the wide forward path
// (CinG·KVol·l floats, reused across images and groups): larger ones take
// the tap-GEMM path, which needs no such copy.
const ColsMaxFloats = 1 << 20

// useCols reports whether a stride-1 GEMM forward takes the wide im2col
// path.
func useCols(g *Geom, wd *wideGeom) bool {
	return g.CinG()*g.KVol()*wd.l <= ColsMaxFloats
}

// colGemmForward is GemmForward for stride 1 by a wide im2col and one GEMM
// per (image, group).
func colGemmForward(y, x, w []float32, g *Geom, wd *wideGeom) {
	ov, l := g.OutVol(), wd.l
	cig, cog, ck := g.CinG(), g.CoutG(), g.CinG()*g.KVol()
	nc, nw, np, ny := ck*l, g.Cout*ck, 0, 0
	if wd.padded {
		np = g.Cin * wd.cp
	}
	if wd.sparse {
		ny = cog * l
	}
	ps := scratch.Get(nc + nw + np + ny)
	cols, wt := (*ps)[:nc], (*ps)[nc:nc+nw]
	xp, yw := (*ps)[nc+nw:nc+nw+np], (*ps)[nc+nw+np:]
	for grp := 0; grp < g.Groups; grp++ {
		transposeTo(wt[grp*cog*ck:][:cog*ck], w[grp*cog*ck:][:cog*ck], cog, ck)
	}
	pitch := wd.pitch(g)
	po := ints.Get(ck)
	offs := *po
	tapOffsets(offs, g, wd, cig, pitch, 0, 1)
	for n := 0; n < g.N; n++ {
		xs := wd.inputPlanes(xp, x, g, n)
		for grp := 0; grp < g.Groups; grp++ {
			yg := y[(n*g.Cout+grp*cog)*ov:][:cog*ov]
			xg := xs[grp*cig*pitch:][:cig*pitch]
			for r, o := range offs {
				copy(cols[r*l:][:l], xg[o:o+l])
			}
			c, ldc := yg, ov
			if wd.sparse {
				c, ldc = yw, l
			}
			flat.Gemm(true, false, cog, l, ck, 1, wt[grp*cog*ck:], cog, cols, l, 0, c, ldc)
			if wd.sparse {
				for co := 0; co < cog; co++ {
					compactPlane(yg[co*ov:][:ov], yw[co*l:][:l], g, wd)
				}
			}
		}
	}
	ints.Put(po)
	scratch.Put(ps)
}

// transposeTo writes the transpose of a (m × n, row-major) into at (n × m).
func transposeTo(at, a []float32, m, n int) {
	at = at[:m*n]
	for i := 0; i < m; i++ {
		for j, v := range a[i*n:][:n] {
			at[j*m+i] = v
		}
	}
}
