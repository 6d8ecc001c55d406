package optimisers

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// lbDrawMemory pushes random pairs with positive curvature into a memory of
// n variables and m pairs, and returns it with the pairs it holds, oldest
// first.
func lbDrawMemory(t *rapid.T, n, m int) (mm *lbMemory, ss, ys [][]float64) {
	mm = newLBMemory(n, m)
	a := make([][]float64, n) // y = A s with A symmetric positive definite
	for i := range a {
		a[i] = make([]float64, n)
	}
	for i := range n {
		for j := 0; j <= i; j++ {
			v := rapid.Float64Range(-1, 1).Draw(t, "a")
			a[i][j], a[j][i] = v, v
		}
		a[i][i] += float64(n) + 1
	}
	pairs := rapid.IntRange(0, 2*m).Draw(t, "pairs")
	for range pairs {
		s, y := make([]float64, n), make([]float64, n)
		for i := range s {
			s[i] = rapid.Float64Range(-2, 2).Draw(t, "s")
		}
		for i := range y {
			y[i] = dot(a[i], s)
		}
		if mm.push(s, y) {
			ss, ys = append(ss, s), append(ys, y)
			if len(ss) > m {
				ss, ys = ss[1:], ys[1:]
			}
			if mm.k == 0 { // dependent pairs: the memory started again
				ss, ys = nil, nil
			}
		}
	}
	if mm.k != len(ss) {
		t.Fatalf("memory holds %d pairs, want %d", mm.k, len(ss))
	}
	return mm, ss, ys
}

// lbDenseB returns the BFGS matrix of the pairs, oldest first, from
// B₀ = θI: B ← B − B s sᵀB / sᵀBs + y yᵀ / yᵀs.
func lbDenseB(n int, theta float64, ss, ys [][]float64) [][]float64 {
	b := make([][]float64, n)
	for i := range b {
		b[i] = make([]float64, n)
		b[i][i] = theta
	}
	for p, s := range ss {
		y := ys[p]
		bs := make([]float64, n)
		for i := range n {
			bs[i] = dot(b[i], s)
		}
		sbs, ys := dot(s, bs), dot(y, s)
		for i := range n {
			for j := range n {
				b[i][j] += -bs[i]*bs[j]/sbs + y[i]*y[j]/ys
			}
		}
	}
	return b
}

// lbCompactB returns θI − W M Wᵀ from the memory.
func lbCompactB(mm *lbMemory) [][]float64 {
	n, k2 := mm.n, 2*mm.k
	wi, wj, mw := make([]float64, k2), make([]float64, k2), make([]float64, k2)
	b := make([][]float64, n)
	for i := range n {
		b[i] = make([]float64, n)
		mm.wRow(i, wi)
		mm.mulMid(wi, mw)
		for j := range n {
			mm.wRow(j, wj)
			b[i][j] = -dot(mw, wj)
		}
		b[i][i] += mm.theta
	}
	return b
}

func lbMaxDiff(a, b [][]float64) (diff, scale float64) {
	for i := range a {
		for j := range a[i] {
			diff = math.Max(diff, math.Abs(a[i][j]-b[i][j]))
			scale = math.Max(scale, math.Abs(b[i][j]))
		}
	}
	return diff, scale
}

// TestLBMemoryIsBFGS: the compact form θI − W M Wᵀ is the BFGS matrix of
// the pairs held, built by the dense update from θI; also after the
// memory has dropped old pairs.
func TestLBMemoryIsBFGS(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n, m := rapid.IntRange(1, 7).Draw(t, "n"), rapid.IntRange(1, 4).Draw(t, "m")
		mm, ss, ys := lbDrawMemory(t, n, m)
		dense := lbDenseB(n, mm.theta, ss, ys)
		if d, s := lbMaxDiff(lbCompactB(mm), dense); d > 1e-9*s {
			t.Fatalf("compact B differs from dense BFGS by %g (scale %g), %d pairs", d, s, mm.k)
		}
	})
}

// lbModelQ returns gᵀ(z − x) + ½(z − x)ᵀB(z − x).
func lbModelQ(b [][]float64, x, g, z []float64) float64 {
	dz := make([]float64, len(x))
	for i := range x {
		dz[i] = z[i] - x[i]
	}
	q := dot(g, dz)
	for i := range b {
		q += 0.5 * dz[i] * dot(b[i], dz)
	}
	return q
}

// lbDrawBox draws x inside a box, some bounds infinite, some variables at
// a bound, and a gradient.
func lbDrawBox(t *rapid.T, n int) (x, g, lo, hi []float64) {
	x, g, lo, hi = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		lo[i] = rapid.Float64Range(-2, 0).Draw(t, "lo")
		hi[i] = lo[i] + rapid.Float64Range(0.1, 3).Draw(t, "width")
		switch rapid.IntRange(0, 5).Draw(t, "kind") {
		case 0:
			lo[i] = math.Inf(-1)
		case 1:
			hi[i] = math.Inf(1)
		case 2:
			lo[i], hi[i] = math.Inf(-1), math.Inf(1)
		}
		a, b := math.Max(lo[i], -3), math.Min(hi[i], 3)
		x[i] = math.Min(a+(b-a)*rapid.Float64Range(0, 1).Draw(t, "at"), b)
		switch rapid.IntRange(0, 4).Draw(t, "atBound") {
		case 0:
			if !math.IsInf(lo[i], -1) {
				x[i] = lo[i]
			}
		case 1:
			if !math.IsInf(hi[i], 1) {
				x[i] = hi[i]
			}
		}
		// A gradient component is 0 or at least 0.01 beside the others:
		// the paper's update of the slope along the path cancels when one
		// is tiny and the path long (as in L-BFGS-B), which a test of
		// 1e-8 would see.
		if rapid.Bool().Draw(t, "zero") {
			g[i] = 0
		} else {
			g[i] = rapid.Float64Range(0.01, 3).Draw(t, "g")
			if rapid.Bool().Draw(t, "neg") {
				g[i] = -g[i]
			}
		}
	}
	return x, g, lo, hi
}

// lbDrawCauchy draws a memory, its dense B, a box with a point and a
// gradient, and computes the Cauchy point into md.
func lbDrawCauchy(t *rapid.T) (mm *lbMemory, b [][]float64, md *lbModel, x, g, lo, hi []float64) {
	n, m := rapid.IntRange(1, 7).Draw(t, "n"), rapid.IntRange(1, 4).Draw(t, "m")
	mm, _, _ = lbDrawMemory(t, n, m)
	b = lbCompactB(mm)
	x, g, lo, hi = lbDrawBox(t, n)
	md = newLBModel(n, m)
	md.cauchy(mm, x, g, lo, hi)
	return mm, b, md, x, g, lo, hi
}

// TestLBCauchyPoint: the generalized Cauchy point is the first local
// minimiser of the model along the projected path P(x − tg), found here
// segment by segment with the dense B; and c = Wᵀ(xc − x).
func TestLBCauchyPoint(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mm, b, md, x, g, lo, hi := lbDrawCauchy(t)
		want := lbCauchyDense(b, x, g, lo, hi)
		for i := range x {
			if math.Abs(md.xc[i]-want[i]) > 1e-8*(1+math.Abs(want[i])) {
				t.Fatalf("xc[%d] = %.15g, want %.15g (xc %v, want %v)", i, md.xc[i], want[i], md.xc, want)
			}
		}
		if q, qw := lbModelQ(b, x, g, md.xc), lbModelQ(b, x, g, want); math.Abs(q-qw) > 1e-10*(1+math.Abs(qw)) {
			t.Fatalf("model at xc %g, above %g at the reference", q, qw)
		}
		k2 := 2 * mm.k
		w := make([]float64, k2)
		c := make([]float64, k2)
		for i := range x {
			mm.wRow(i, w)
			for j := range c {
				c[j] += w[j] * (md.xc[i] - x[i])
			}
		}
		for j := range c {
			if math.Abs(md.c[j]-c[j]) > 1e-8*(1+math.Abs(c[j])) {
				t.Fatalf("c[%d] = %g, want Wᵀ(xc − x) = %g", j, md.c[j], c[j])
			}
		}
	})
}

// lbCauchyDense walks the projected path segment by segment: on each, the
// model is a quadratic in t, and the first segment whose quadratic has its
// minimum inside (or rises from its start) holds the Cauchy point.
func lbCauchyDense(b [][]float64, x, g, lo, hi []float64) []float64 {
	n := len(x)
	tb := make([]float64, n)
	for i := range n {
		tb[i] = math.Inf(1)
		if g[i] < 0 {
			tb[i] = (x[i] - hi[i]) / g[i]
		} else if g[i] > 0 {
			tb[i] = (x[i] - lo[i]) / g[i]
		}
	}
	z := append([]float64(nil), x...)
	tPrev := 0.0
	for {
		tNext := math.Inf(1)
		for i := range n {
			if tb[i] > tPrev && tb[i] < tNext {
				tNext = tb[i]
			}
		}
		d := make([]float64, n)
		for i := range n {
			if tb[i] > tPrev {
				d[i] = -g[i]
			}
		}
		gz := make([]float64, n) // g + B(z − x)
		for i := range n {
			gz[i] = g[i]
			for j := range n {
				gz[i] += b[i][j] * (z[j] - x[j])
			}
		}
		q1 := dot(gz, d)
		q2 := 0.0
		for i := range n {
			q2 += d[i] * dot(b[i], d)
		}
		if q1 >= 0 || q2 <= 0 && dot(d, d) == 0 {
			return z
		}
		dt := -q1 / q2
		if tPrev+dt < tNext {
			for i := range n {
				z[i] += dt * d[i]
			}
			return z
		}
		for i := range n {
			z[i] += (tNext - tPrev) * d[i]
			if tb[i] == tNext {
				z[i] = lo[i]
				if g[i] < 0 {
					z[i] = hi[i]
				}
			}
		}
		tPrev = tNext
	}
}

// TestLBSubspaceStationary: when the subspace step is not cut by a bound,
// x̄ minimises the model over the free variables: the model's gradient
// g + B(x̄ − x) is zero in every free variable.
func TestLBSubspaceStationary(t *testing.T) {
	checked := 0
	rapid.Check(t, func(t *rapid.T) {
		mm, b, md, x, g, lo, hi := lbDrawCauchy(t)
		n := len(x)
		xbar := make([]float64, n)
		md.subspace(mm, x, g, lo, hi, xbar)
		for i := range n {
			if xbar[i] < lo[i] || xbar[i] > hi[i] {
				t.Fatalf("x̄[%d] = %g outside [%g, %g]", i, xbar[i], lo[i], hi[i])
			}
			if md.free[i] && (xbar[i] == lo[i] || xbar[i] == hi[i]) {
				return // cut by a bound: the step is not the free minimiser
			}
		}
		if q, qc := lbModelQ(b, x, g, xbar), lbModelQ(b, x, g, md.xc); q > qc+1e-12*(1+math.Abs(qc)) {
			t.Fatalf("model at x̄ %g, above %g at the Cauchy point", q, qc)
		}
		checked++
		for i := range n {
			if !md.free[i] {
				continue
			}
			r := g[i]
			for j := range n {
				r += b[i][j] * (xbar[j] - x[j])
			}
			if math.Abs(r) > 1e-8*(1+math.Abs(g[i])) {
				t.Fatalf("model gradient %g in free variable %d at x̄, want 0", r, i)
			}
		}
	})
	if checked < 10 {
		t.Errorf("only %d draws had an uncut subspace step; the test checks too little", checked)
	}
}
