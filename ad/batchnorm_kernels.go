package ad

import (
	"math"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/freelist"
)

// The batch-norm kernels. Each works channel by channel, and a channel's
// values are computed by one goroutine in a fixed order, so splitting the
// channels over goroutines (bnRun) gives the same bits for any number of
// them. Sums over a channel are accumulated in float64, in four chains.

// bnDims is x's shape as (N, C, inner), inner the product of the spatial
// sizes.
type bnDims struct{ n, c, inner int }

func bnDimsOf(s []int) bnDims {
	d := bnDims{n: s[0], c: s[1], inner: 1}
	for _, v := range s[2:] {
		d.inner *= v
	}
	return d
}

// plane returns the values of batch item n in channel c.
func (d bnDims) plane(v []float32, n, c int) []float32 {
	return v[(n*d.c+c)*d.inner:][:d.inner]
}

const (
	bnKindStats = iota
	bnKindNorm
	bnKindSums
	bnKindBackData
	bnKindAffine // ChannelAffine: st is the mean, gamma the scale, beta the shift
)

// bnJob is one batch-norm kernel call: its operands, and the channels a
// goroutine computes in channels.
type bnJob struct {
	kind        int
	out, x, st  []float32
	g, t        []float32
	gamma, beta []float32 // nil for no affine map
	eps         float32
	d           bnDims
}

var bnJobs freelist.Jobs[bnJob, *bnJob]

// bnChannelScale is how many of ParallelFor's indices stand for one
// channel: it cuts its range at multiples of 16.
const bnChannelScale = 16

// bnRun runs j over all channels: split over goroutines when there are
// enough values (at least flat.DefaultMinChunk per goroutine), else on the
// caller.
func bnRun(j bnJob) {
	per := j.d.n * j.d.inner
	total := per * j.d.c
	if j.d.c < 2 || total < 2*flat.DefaultMinChunk || flat.MaxThreads() < 2 {
		j.channels(0, j.d.c)
		return
	}
	minCh := (flat.DefaultMinChunk + per - 1) / per
	parallelFor(&bnJobs, j, j.d.c*bnChannelScale, minCh*bnChannelScale)
}

func (j *bnJob) Part(lo, hi int) { j.channels(lo/bnChannelScale, hi/bnChannelScale) }

// channels computes channels [c0, c1).
func (j *bnJob) channels(c0, c1 int) {
	switch j.kind {
	case bnKindStats:
		bnStats(j.out, j.x, j.d, c0, c1)
	case bnKindNorm:
		bnNorm(j.out, j.x, j.st, j.gamma, j.beta, j.eps, j.d, c0, c1)
	case bnKindSums:
		bnSumsKernel(j.out, j.x, j.st, j.g, j.eps, j.d, c0, c1)
	case bnKindBackData:
		bnBackDataKernel(j.out, j.x, j.st, j.g, j.t, j.gamma, j.eps, j.d, c0, c1)
	case bnKindAffine:
		channelAffineKernel(j.out, j.x, j.st, j.gamma, j.beta, j.d, c0, c1)
	}
}

// bnInv returns 1/√(v + eps), rounded once from float64.
func bnInv(v, eps float32) float64 { return 1 / math.Sqrt(float64(v)+float64(eps)) }

// bnStats writes the mean and the biased variance of channels [c0, c1)
// to st (row 0 and row 1 of a (2, C)). The sums are of the values shifted
// by the channel's first one, which keeps the variance accurate when the
// mean is large against the spread.
func bnStats(st, x []float32, d bnDims, c0, c1 int) {
	m := float64(d.n * d.inner)
	for c := c0; c < c1; c++ {
		k := float64(x[c*d.inner])
		var s1, s2 float64
		for n := range d.n {
			a, b := sumShifted(d.plane(x, n, c), k)
			s1 += a
			s2 += b
		}
		mean := s1 / m
		v := max(s2/m-mean*mean, 0)
		st[c] = float32(k + mean)
		st[d.c+c] = float32(v)
	}
}

// sumShifted returns Σ(x − k) and Σ(x − k)² in float64.
func sumShifted(x []float32, k float64) (s1, s2 float64) {
	var a0, a1, a2, a3, b0, b1, b2, b3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		d0, d1, d2, d3 := float64(v[0])-k, float64(v[1])-k, float64(v[2])-k, float64(v[3])-k
		a0, a1, a2, a3 = a0+d0, a1+d1, a2+d2, a3+d3
		b0, b1, b2, b3 = b0+d0*d0, b1+d1*d1, b2+d2*d2, b3+d3*d3
	}
	for ; i < len(x); i++ {
		d0 := float64(x[i]) - k
		a0 += d0
		b0 += d0 * d0
	}
	return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3)
}

// sumDot returns Σg and Σg·(x − mu) in float64.
func sumDot(g, x []float32, mu float32) (s1, s2 float64) {
	x = x[:len(g)]
	var a0, a1, a2, a3, b0, b1, b2, b3 float64
	i := 0
	for ; i+4 <= len(g); i += 4 {
		gv, xv := g[i:i+4:i+4], x[i:i+4:i+4]
		g0, g1, g2, g3 := float64(gv[0]), float64(gv[1]), float64(gv[2]), float64(gv[3])
		a0, a1, a2, a3 = a0+g0, a1+g1, a2+g2, a3+g3
		b0 += g0 * float64(xv[0]-mu)
		b1 += g1 * float64(xv[1]-mu)
		b2 += g2 * float64(xv[2]-mu)
		b3 += g3 * float64(xv[3]-mu)
	}
	for ; i < len(g); i++ {
		g0 := float64(g[i])
		a0 += g0
		b0 += g0 * float64(x[i]-mu)
	}
	return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3)
}

// bnNorm writes y = (x − μ)·a + b for channels [c0, c1), a = γ·s and
// b = β (a = s, b = 0 without γ and β).
func bnNorm(y, x, st, gamma, beta []float32, eps float32, d bnDims, c0, c1 int) {
	for c := c0; c < c1; c++ {
		mu := st[c]
		s := bnInv(st[d.c+c], eps)
		a, b := float32(s), float32(0)
		if gamma != nil {
			a, b = float32(float64(gamma[c])*s), beta[c]
		}
		for n := range d.n {
			yp, xp := d.plane(y, n, c), d.plane(x, n, c)
			xp = xp[:len(yp)]
			for i := range yp {
				yp[i] = float32(float32(xp[i]-mu)*a) + b // conversions: never fused into an FMA
			}
		}
	}
}

// bnSumsKernel writes T = (Σg; Σg·x̂) for channels [c0, c1).
func bnSumsKernel(t, x, st, g []float32, eps float32, d bnDims, c0, c1 int) {
	for c := c0; c < c1; c++ {
		mu := st[c]
		var s1, s2 float64
		for n := range d.n {
			a, b := sumDot(d.plane(g, n, c), d.plane(x, n, c), mu)
			s1 += a
			s2 += b
		}
		t[c] = float32(s1)
		t[d.c+c] = float32(s2 * bnInv(st[d.c+c], eps))
	}
}

// bnBackDataKernel writes dx = k·(g − T₀/m − x̂·T₁/m), k = γ·s, for
// channels [c0, c1), as g·k + (x − μ)·q + p with the per-channel
// p = −k·T₀/m and q = −k·s·T₁/m.
func bnBackDataKernel(dx, x, st, g, t, gamma []float32, eps float32, d bnDims, c0, c1 int) {
	m := float64(d.n * d.inner)
	for c := c0; c < c1; c++ {
		mu := st[c]
		s := bnInv(st[d.c+c], eps)
		k := s
		if gamma != nil {
			k *= float64(gamma[c])
		}
		kf := float32(k)
		p := float32(-k * float64(t[c]) / m)
		q := float32(-k * s * float64(t[d.c+c]) / m)
		for n := range d.n {
			dp, xp, gp := d.plane(dx, n, c), d.plane(x, n, c), d.plane(g, n, c)
			xp, gp = xp[:len(dp)], gp[:len(dp)]
			for i := range dp {
				dp[i] = gp[i]*kf + (xp[i]-mu)*q + p
			}
		}
	}
}

// channelAffineKernel writes y = (x − mean)·scale + shift for channels
// [c0, c1).
func channelAffineKernel(y, x, mean, scale, shift []float32, d bnDims, c0, c1 int) {
	for c := c0; c < c1; c++ {
		mu, a, b := mean[c], scale[c], shift[c]
		for n := range d.n {
			yp, xp := d.plane(y, n, c), d.plane(x, n, c)
			xp = xp[:len(yp)]
			for i := range yp {
				yp[i] = float32(float32(xp[i]-mu)*a) + b // conversions: never fused into an FMA
			}
		}
	}
}
