package ad

import (
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/freelist"
	"github.com/flatkit/flatkit/internal/vmath"
)

// The pooling kernels, plane by plane ((n, c) pairs): a plane's outputs
// depend only on that plane of the input, so planes are split over
// goroutines (poolRun) with the same bits for any number of them.
//
// Max-pooling's winner of a window is the first cell in row-major order
// with the largest value, a NaN over any number; padded cells never win.

const (
	poolMax        = iota // out = max of each window of x, arg = its winner
	poolMaxScatter        // out = 0, plus v[k] at arg[k]
	poolMean              // out = mean of each window of x
	poolMeanT             // out = 0, plus v[k]/div spread over window k
)

// poolJob is one pooling kernel call over planes.
type poolJob struct {
	mode int
	p    poolDims
	x, v []float32
	out  []float32
	arg  []int // the winners of a max-pool (flat positions in x)
}

var poolJobs freelist.Jobs[poolJob, *poolJob]

// poolPlaneScale is how many of ParallelFor's indices stand for one plane.
const poolPlaneScale = 16

// poolRun runs j over every plane: split over goroutines when the planes
// hold at least two of flat.DefaultMinChunk's chunks, else on the caller.
func poolRun(j poolJob) {
	planes := j.p.planes
	per := max(j.p.inN, j.p.outN)
	if planes < 2 || per*planes < 2*flat.DefaultMinChunk || flat.MaxThreads() < 2 {
		j.planes(0, planes)
		return
	}
	minPl := (flat.DefaultMinChunk + per - 1) / per
	parallelFor(&poolJobs, j, planes*poolPlaneScale, minPl*poolPlaneScale)
}

func (j *poolJob) Part(lo, hi int) { j.planes(lo/poolPlaneScale, hi/poolPlaneScale) }

// planes computes planes [pl0, pl1).
func (j *poolJob) planes(pl0, pl1 int) {
	p := &j.p
	switch j.mode {
	case poolMaxScatter, poolMeanT:
		clear(j.out[pl0*p.inN : pl1*p.inN])
	}
	for pl := pl0; pl < pl1; pl++ {
		switch j.mode {
		case poolMax:
			j.maxPlane(pl)
		case poolMaxScatter:
			out, v := j.out, j.v[pl*p.outN:(pl+1)*p.outN]
			for k, i := range j.arg[pl*p.outN : (pl+1)*p.outN] {
				out[i] += v[k]
			}
		default:
			j.meanPlane(pl)
		}
	}
}

// maxPlane max-pools plane pl. The scan of a window keeps the first
// largest value and sums the window as it goes: a NaN anywhere makes the
// sum NaN (as may infinities of both signs), and only then is the window
// scanned again by maxWindow's exact rule, so the common window costs a
// compare and an add per cell.
func (j *poolJob) maxPlane(pl int) {
	p := &j.p
	if p.in[0] == 1 && p.k[0] == 1 && !p.adaptive && (p.s[2] == 1 || p.s[2] == 2) && j.maxPlaneRows(pl) {
		return
	}
	base := pl * p.inN
	xp := j.x[base : base+p.inN]
	out, arg := j.out[pl*p.outN:(pl+1)*p.outN], j.arg[pl*p.outN:(pl+1)*p.outN]
	n1, n2 := p.in[1], p.in[2]
	k := 0
	for o0 := range p.out[0] {
		a0, b0, _ := p.window(0, o0)
		for o1 := range p.out[1] {
			a1, b1, _ := p.window(1, o1)
			for o2 := range p.out[2] {
				a2, b2, _ := p.window(2, o2)
				pos := (a0*n1+a1)*n2 + a2
				best := xp[pos]
				var sum float32
				w := b2 - a2
				for i0 := a0; i0 < b0; i0++ {
					for row := (i0*n1+a1)*n2 + a2; row < (i0*n1+b1)*n2; row += n2 {
						switch w {
						case 3: // ResNet's stem: one bounds check a row
							r := xp[row : row+3 : row+3]
							v0, v1, v2 := r[0], r[1], r[2]
							if v0 > best {
								best, pos = v0, row
							}
							if v1 > best {
								best, pos = v1, row+1
							}
							if v2 > best {
								best, pos = v2, row+2
							}
							sum += v0 + v1 + v2
						case 2:
							r := xp[row : row+2 : row+2]
							v0, v1 := r[0], r[1]
							if v0 > best {
								best, pos = v0, row
							}
							if v1 > best {
								best, pos = v1, row+1
							}
							sum += v0 + v1
						default:
							for i, v := range xp[row : row+w] {
								if v > best {
									best, pos = v, row+i
								}
								sum += v
							}
						}
					}
				}
				if sum != sum {
					pos = maxWindow(xp, n1, n2, a0, b0, a1, b1, a2, b2)
					best = xp[pos]
				}
				out[k], arg[k] = best, base+pos
				k++
			}
		}
	}
}

// maxPlaneRows max-pools plane pl of a pool over two axes (p.in[0] = 1)
// with vmath.MaxPoolRows: each output row's windows that lie wholly inside
// the plane's columns are one call over the window's unpadded rows; the
// windows that overlap the left or right padding go through maxWindow. It
// reports false, having written nothing, if MaxPoolRows has no kernel
// here.
func (j *poolJob) maxPlaneRows(pl int) bool {
	p := &j.p
	base := pl * p.inN
	xp := j.x[base : base+p.inN]
	out, arg := j.out[pl*p.outN:(pl+1)*p.outN], j.arg[pl*p.outN:(pl+1)*p.outN]
	n1, n2 := p.in[1], p.in[2]
	k2, s2, lo2 := p.k[2], p.s[2], p.lo[2]
	// Outputs [oLo, oHi) of a row have every column of their window
	// inside the plane: s2·o − lo2 ≥ 0 and s2·o − lo2 + k2 ≤ n2.
	oLo := min((lo2+s2-1)/s2, p.out[2])
	oHi := p.out[2]
	if n2-k2+lo2 < 0 {
		oHi = 0
	} else {
		oHi = min(oHi, (n2-k2+lo2)/s2+1)
	}
	oHi = max(oHi, oLo)
	for o1 := range p.out[1] {
		a1, b1, _ := p.window(1, o1)
		row := o1 * p.out[2]
		if oHi > oLo {
			col0 := s2*oLo - lo2
			if !vmath.MaxPoolRows(xp[a1*n2:b1*n2], n2, b1-a1, k2, s2, col0, oHi-oLo,
				out[row+oLo:row+oHi], arg[row+oLo:row+oHi], base+a1*n2) {
				return false
			}
		}
		for o2 := 0; o2 < p.out[2]; o2++ {
			if o2 == oLo && oHi > oLo {
				if o2 = oHi; o2 >= p.out[2] { // skip the windows done above
					break
				}
			}
			a2, b2, _ := p.window(2, o2)
			pos := maxWindow(xp, n1, n2, 0, 1, a1, b1, a2, b2)
			out[row+o2], arg[row+o2] = xp[pos], base+pos
		}
	}
	return true
}

// maxWindow returns the position in the plane x (axes of sizes ·, n1, n2)
// of the winner of the window [a0, b0)×[a1, b1)×[a2, b2): the first
// largest value in row-major order, a NaN over any number. The window is
// not empty (padding is smaller than the kernel).
func maxWindow(x []float32, n1, n2, a0, b0, a1, b1, a2, b2 int) int {
	pos := (a0*n1+a1)*n2 + a2
	best := x[pos]
	if best != best {
		return pos
	}
	w := b2 - a2
	for i0 := a0; i0 < b0; i0++ {
		row := (i0*n1+a1)*n2 + a2
		for i1 := a1; i1 < b1; i1++ {
			r := x[row : row+w]
			for i, v := range r {
				if v > best {
					best, pos = v, row+i
				} else if v != v {
					return row + i
				}
			}
			row += n2
		}
	}
	return pos
}

// meanPlane runs a mean-pooling mode on plane pl.
func (j *poolJob) meanPlane(pl int) {
	p := &j.p
	base := pl * p.inN
	k := pl * p.outN
	for o0 := range p.out[0] {
		a0, b0, d0 := p.window(0, o0)
		for o1 := range p.out[1] {
			a1, b1, d1 := p.window(1, o1)
			for o2 := range p.out[2] {
				a2, b2, d2 := p.window(2, o2)
				div := float32(d0 * d1 * d2)
				if j.mode == poolMeanT {
					v := j.v[k] / div
					for i0 := a0; i0 < b0; i0++ {
						for i1 := a1; i1 < b1; i1++ {
							row := j.out[base+(i0*p.in[1]+i1)*p.in[2]:]
							row = row[a2:b2]
							for i := range row {
								row[i] += v
							}
						}
					}
				} else {
					var s float32
					for i0 := a0; i0 < b0; i0++ {
						for i1 := a1; i1 < b1; i1++ {
							row := j.x[base+(i0*p.in[1]+i1)*p.in[2]:]
							for _, v := range row[a2:b2] {
								s += v
							}
						}
					}
					j.out[k] = s / div
				}
				k++
			}
		}
	}
}
