package ad_test

import (
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/relerr"
)

// plGeom is a drawn pooling case: input shape (N, C, spatial…) and geometry
// (explicit in every field, so the reference needs no defaults).
type plGeom struct {
	shape []int
	g     ad.PoolGeom
}

// plDraw draws a geometry of rank 1–3 with kernel 1–3, stride 1–3, pads 0–1
// (each smaller than the kernel) and spatial sizes that fit the window.
func plDraw(t *rapid.T) plGeom {
	d := rapid.IntRange(1, 3).Draw(t, "d")
	n, c := 1, 1
	if d < 3 {
		n = rapid.IntRange(1, 2).Draw(t, "N")
		c = rapid.IntRange(1, 2).Draw(t, "C")
	}
	g := ad.PoolGeom{Kernel: make([]int, d), Stride: make([]int, d), PadLo: make([]int, d), PadHi: make([]int, d)}
	shape := []int{n, c}
	for i := range d {
		k := rapid.IntRange(1, 3).Draw(t, "kernel")
		g.Kernel[i] = k
		g.Stride[i] = rapid.IntRange(1, 3).Draw(t, "stride")
		g.PadLo[i] = rapid.IntRange(0, min(1, k-1)).Draw(t, "padLo")
		g.PadHi[i] = rapid.IntRange(0, min(1, k-1)).Draw(t, "padHi")
		lo := max(1, k-g.PadLo[i]-g.PadHi[i])
		shape = append(shape, rapid.IntRange(lo, k+2).Draw(t, "size"))
	}
	return plGeom{shape, g}
}

// plOutShape is the pooled shape of a geometry.
func plOutShape(p plGeom) []int {
	out := slices.Clone(p.shape[:2])
	for i, k := range p.g.Kernel {
		L := p.shape[2+i]
		out = append(out, (L+p.g.PadLo[i]+p.g.PadHi[i]-k)/p.g.Stride[i]+1)
	}
	return out
}

// plWindows calls visit for each output position (flat index o) with the
// flat input indices of its window's cells inside the input, in row-major
// window order, and the divisor (the window's full size).
func plWindows(shape, out []int, win func(axis, o int) (a, b, div int), visit func(o int, cells []int, div int)) {
	d := len(shape) - 2
	for o := range rsSize(out) {
		oi := rsUnravel(o, out)
		var lo, hi []int
		div := 1
		for j := range d {
			a, b, dv := win(j, oi[2+j])
			lo, hi = append(lo, a), append(hi, b)
			div *= dv
		}
		var cells []int
		var rec func(j int, idx []int)
		rec = func(j int, idx []int) {
			if j == d {
				cells = append(cells, rsRavel(idx, shape))
				return
			}
			for i := lo[j]; i < hi[j]; i++ {
				if i >= 0 && i < shape[2+j] {
					rec(j+1, append(idx, i))
				}
			}
		}
		rec(0, []int{oi[0], oi[1]})
		visit(o, cells, div)
	}
}

func plPoolWin(p plGeom) func(j, o int) (int, int, int) {
	return func(j, o int) (int, int, int) {
		a := o*p.g.Stride[j] - p.g.PadLo[j]
		return a, a + p.g.Kernel[j], p.g.Kernel[j]
	}
}

func plAdaptiveWin(shape, out []int) func(j, o int) (int, int, int) {
	return func(j, o int) (int, int, int) {
		L, m := shape[2+j], out[2+j]
		a := int(math.Floor(float64(o*L) / float64(m)))
		b := int(math.Ceil(float64((o+1)*L) / float64(m)))
		return a, b, b - a
	}
}

// plRefMean averages each window in float64 (divisor div).
func plRefMean(x []float32, shape, out []int, win func(j, o int) (int, int, int)) []float64 {
	y := make([]float64, rsSize(out))
	plWindows(shape, out, win, func(o int, cells []int, div int) {
		s := 0.0
		for _, c := range cells {
			s += float64(x[c])
		}
		y[o] = s / float64(div)
	})
	return y
}

// plDistinct draws n values in about [−2, 2] no two within sep, and returns
// sep.
func plDistinct(t *rapid.T, n int) ([]float32, float32) {
	x := rsDistinct(t, n)
	s := 2 / (0.37*float32(n/2) + 0.1)
	for i := range x {
		x[i] *= s
	}
	return x, 0.27 * s
}

func plClose(t *rapid.T, what string, got []float32, want []float64) {
	t.Helper()
	if err := relerr.Check(what, got, want, 1e-5); err != nil {
		t.Fatal(err)
	}
}

func plPow2(n int) bool { return n&(n-1) == 0 }

// TestPoolValues compares MaxPool, MeanPool, AdaptiveMeanPool and
// GlobalMeanPool with direct float64 loops.
func TestPoolValues(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := plDraw(rt)
		out := plOutShape(p)
		x, _ := plDistinct(rt, rsSize(p.shape))
		tp := ad.NewTape()
		xv := tp.Const(flat.Tensor{Shape: p.shape, Data: x})
		mx := ad.MaxPool(xv, p.g)
		mn := ad.MeanPool(xv, p.g)
		d := len(p.shape) - 2
		aout := slices.Clone(p.shape[:2])
		for range d {
			aout = append(aout, rapid.IntRange(1, 4).Draw(rt, "adaptive out"))
		}
		ad_ := ad.AdaptiveMeanPool(xv, aout[2:]...)
		gl := ad.GlobalMeanPool(xv)
		if err := tp.Err(); err != nil {
			rt.Fatal(err)
		}
		gout := slices.Clone(p.shape[:2])
		for range d {
			gout = append(gout, 1)
		}
		for _, c := range []struct {
			name      string
			got, want []int
		}{{"MaxPool", mx.Shape(), out}, {"MeanPool", mn.Shape(), out}, {"AdaptiveMeanPool", ad_.Shape(), aout}, {"GlobalMeanPool", gl.Shape(), gout}} {
			if !slices.Equal(c.got, c.want) {
				rt.Fatalf("%s shape %v, want %v", c.name, c.got, c.want)
			}
		}
		wantMax := make([]float64, rsSize(out))
		plWindows(p.shape, out, plPoolWin(p), func(o int, cells []int, _ int) {
			best := math.Inf(-1)
			for _, c := range cells {
				best = math.Max(best, float64(x[c]))
			}
			wantMax[o] = best
		})
		plClose(rt, "MaxPool", mx.Data(), wantMax)
		plClose(rt, "MeanPool", mn.Data(), plRefMean(x, p.shape, out, plPoolWin(p)))
		plClose(rt, "AdaptiveMeanPool", ad_.Data(), plRefMean(x, p.shape, aout, plAdaptiveWin(p.shape, aout)))
		plClose(rt, "GlobalMeanPool", gl.Data(), plRefMean(x, p.shape, gout, plAdaptiveWin(p.shape, gout)))
	})
}

// TestPoolDefaults checks PoolGeom's defaults: Stride = Kernel, no padding,
// PadHi = PadLo.
func TestPoolDefaults(t *testing.T) {
	tp := ad.NewTape()
	x := tp.Const(flat.Tensor{Shape: []int{1, 1, 5}, Data: []float32{1, 5, 2, 4, 3}})
	a := ad.MaxPool(x, ad.PoolGeom{Kernel: []int{2}})
	b := ad.MeanPool(x, ad.PoolGeom{Kernel: []int{3}, Stride: []int{1}, PadLo: []int{1}})
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []float32{5, 4}; !slices.Equal(a.Data(), want) {
		t.Errorf("MaxPool %v, want %v", a.Data(), want)
	}
	// count_include_pad: the padded windows still divide by 3.
	if want := []float32{6. / 3, 8. / 3, 11. / 3, 9. / 3, 7. / 3}; !slices.Equal(b.Data(), want) {
		t.Errorf("MeanPool %v, want %v", b.Data(), want)
	}
}

// TestMaxPoolTies checks that the first cell of a window wins a tie.
func TestMaxPoolTies(t *testing.T) {
	tp := ad.NewTape()
	p := tp.Param([]float32{1, 3, 3, 0, 3, 3})
	y := ad.MaxPool(ad.Reshape(p, 1, 1, 2, 3), ad.PoolGeom{Kernel: []int{2, 2}, Stride: []int{1, 1}})
	g, err := tp.Grad(ad.Sum(y))
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{0, 2, 0, 0, 0, 0}; !slices.Equal(g, want) {
		t.Errorf("gradient %v, want %v (first maximal cell of each window)", g, want)
	}
}

// TestPoolProperties checks, across random geometry: the JVP and VJP of
// each pool are transposes of each other (exactly, with dyadic inputs,
// where the divisors are powers of two), gradients against finite
// differences, and the HVP of Σ w ⊙ tanh(pool(x)) forward-over-reverse
// against reverse-over-reverse and finite differences.
func TestPoolProperties(t *testing.T) {
	t.Run("MaxPool", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			p := plDraw(rt)
			f := rsOnInput(p.shape, func(x ad.Var) ad.Var { return ad.MaxPool(x, p.g) })
			θ, sep := plDistinct(rt, rsSize(p.shape))
			h := min(3e-3, sep/8)
			rsCheckTranspose(rt, f, θ, true)
			rsCheckGrad(rt, f, θ, h)
			tanh := func(x ad.Var) ad.Var { return ad.Tanh(f(x)) }
			rsCheckHVP(rt, rsWeighted(rt, tanh, θ), θ, h)
		})
	})
	t.Run("MeanPool", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			p := plDraw(rt)
			f := rsOnInput(p.shape, func(x ad.Var) ad.Var { return ad.MeanPool(x, p.g) })
			div := 1
			for _, k := range p.g.Kernel {
				div *= k
			}
			rsCheckTranspose(rt, f, rsDyadic(rt, rsSize(p.shape), "θ"), plPow2(div))
			plCheckSmooth(rt, f, rsSize(p.shape))
		})
	})
	t.Run("AdaptiveMeanPool", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			p := plDraw(rt)
			out := make([]int, len(p.shape)-2)
			for i := range out {
				out[i] = rapid.IntRange(1, 4).Draw(rt, "out")
			}
			f := rsOnInput(p.shape, func(x ad.Var) ad.Var { return ad.AdaptiveMeanPool(x, out...) })
			rsCheckTranspose(rt, f, rsDyadic(rt, rsSize(p.shape), "θ"), false)
			plCheckSmooth(rt, f, rsSize(p.shape))
		})
	})
	t.Run("GlobalMeanPool", func(t *testing.T) {
		rapid.Check(t, func(rt *rapid.T) {
			p := plDraw(rt)
			f := rsOnInput(p.shape, ad.GlobalMeanPool)
			plCheckSmooth(rt, f, rsSize(p.shape))
		})
	})
}

// plCheckSmooth checks the gradient of f, a mean pooling of n values, and
// through a tanh its second derivatives, at a θ drawn in ±2.
func plCheckSmooth(rt *rapid.T, f func(ad.Var) ad.Var, n int) {
	rt.Helper()
	θ := rsSmooth(rt, n, -2, 2, "θ")
	rsCheckGrad(rt, f, θ, 3e-3)
	tanh := func(x ad.Var) ad.Var { return ad.Tanh(f(x)) }
	rsCheckHVP(rt, rsWeighted(rt, tanh, θ), θ, 3e-3)
}

// TestMeanPoolTransposeExact checks ⟨MeanPool(x), u⟩ == ⟨x, MeanPoolᵀ(u)⟩
// with == on dyadic inputs, for kernels whose size is a power of two.
func TestMeanPoolTransposeExact(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := plDraw(rt)
		for i := range p.g.Kernel {
			if k := p.g.Kernel[i]; k == 3 {
				p.g.Kernel[i] = 2
				p.g.PadLo[i] = min(p.g.PadLo[i], 1)
				p.g.PadHi[i] = min(p.g.PadHi[i], 1)
			}
		}
		f := rsOnInput(p.shape, func(x ad.Var) ad.Var { return ad.MeanPool(x, p.g) })
		rsCheckTranspose(rt, f, rsDyadic(rt, rsSize(p.shape), "θ"), true)
	})
}

func TestPoolErrors(t *testing.T) {
	x := flat.Tensor{Shape: []int{1, 2, 4, 4}, Data: make([]float32, 32)}
	for _, tc := range []struct {
		name  string
		op    func(ad.Var) ad.Var
		frags []string
	}{
		{"MaxPool rank", func(v ad.Var) ad.Var { return ad.MaxPool(v, ad.PoolGeom{Kernel: []int{2}}) },
			[]string{"MaxPool", "[1 2 4 4]", "rank 4", "want 3"}},
		{"MeanPool rank", func(v ad.Var) ad.Var { return ad.MeanPool(v, ad.PoolGeom{Kernel: []int{2, 2, 2}}) },
			[]string{"MeanPool", "rank 4", "want 5"}},
		{"Kernel too large", func(v ad.Var) ad.Var { return ad.MaxPool(v, ad.PoolGeom{Kernel: []int{2, 5}}) },
			[]string{"MaxPool", "size 4", "kernel 5"}},
		{"Stride length", func(v ad.Var) ad.Var {
			return ad.MaxPool(v, ad.PoolGeom{Kernel: []int{2, 2}, Stride: []int{1, 1, 1}})
		}, []string{"MaxPool", "PoolGeom.Stride has 3 values", "want 1 or 2"}},
		{"Zero stride", func(v ad.Var) ad.Var {
			return ad.MeanPool(v, ad.PoolGeom{Kernel: []int{2, 2}, Stride: []int{1, 0}})
		}, []string{"MeanPool", "stride 0", "at least 1"}},
		{"Pad not below kernel", func(v ad.Var) ad.Var {
			return ad.MaxPool(v, ad.PoolGeom{Kernel: []int{2, 2}, PadLo: []int{0, 2}})
		}, []string{"MaxPool", "padding 2, 2", "kernel 2"}},
		{"No kernel", func(v ad.Var) ad.Var { return ad.MaxPool(v, ad.PoolGeom{}) },
			[]string{"MaxPool", "Kernel has 0 entries"}},
		{"Adaptive rank", func(v ad.Var) ad.Var { return ad.AdaptiveMeanPool(v, 1) },
			[]string{"AdaptiveMeanPool", "rank 4", "want 3"}},
		{"Adaptive zero size", func(v ad.Var) ad.Var { return ad.AdaptiveMeanPool(v, 1, 0) },
			[]string{"AdaptiveMeanPool", "output size 0"}},
		{"Global rank", func(v ad.Var) ad.Var { return ad.GlobalMeanPool(ad.Reshape(v, 32)) },
			[]string{"GlobalMeanPool", "rank 1", "want 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := ad.NewTape()
			wantOpErr(t, tp, tc.op(tp.Const(x)), tc.frags...)
		})
	}
}

// TestPoolAllocs pins a forward and gradient step through the pools on a
// reused tape at zero allocations.
func TestPoolAllocs(t *testing.T) {
	θ := make([]float32, 2*3*6*6)
	for i := range θ {
		θ[i] = float32((i*37)%101) / 50
	}
	gMax := ad.PoolGeom{Kernel: []int{2, 2}, Stride: []int{2, 1}, PadLo: []int{1, 0}}
	gMean := ad.PoolGeom{Kernel: []int{3, 3}, PadLo: []int{1, 1}, PadHi: []int{0, 1}}
	pinGradAllocs(t, 3, 50, θ, func(p ad.Var) ad.Var {
		x := ad.Reshape(p, 2, 3, 6, 6)
		l := ad.Add(ad.Sum(ad.Tanh(ad.MaxPool(x, gMax))), ad.Sum(ad.Tanh(ad.MeanPool(x, gMean))))
		l = ad.Add(l, ad.Sum(ad.Tanh(ad.AdaptiveMeanPool(x, 4, 5))))
		return ad.Add(l, ad.Sum(ad.Tanh(ad.GlobalMeanPool(x))))
	})
}

func BenchmarkMaxPool2D(b *testing.B) {
	θ := make([]float32, 8*16*32*32)
	for i := range θ {
		θ[i] = float32((i*37)%101) / 50
	}
	g := ad.PoolGeom{Kernel: []int{2, 2}}
	tp := ad.NewTape()
	b.ReportAllocs()
	for b.Loop() {
		x := ad.Reshape(tp.Param(θ), 8, 16, 32, 32)
		if _, err := tp.Grad(ad.Sum(ad.MaxPool(x, g))); err != nil {
			b.Fatal(err)
		}
		tp.Reset()
	}
}
