package conv

import (
	"fmt"
	"math"
	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/relerr"
)

// The package's test helpers: the float64 reference convolution, the
// draws of geometries and operands, and the comparisons.

// refTaps calls tap(yi, xi, wi) for every tap of conv, written
// independently of visit: it enumerates every (n, co, o, ci, k) in order by
// plain loops and skips the padding. yi, xi and wi index y, x and w.
func refTaps(g *Geom, tap func(yi, xi, wi int)) {
	iv, ov, kv := g.InVol(), g.OutVol(), g.KVol()
	cig, cog := g.CinG(), g.CoutG()
	for n := 0; n < g.N; n++ {
		for co := 0; co < g.Cout; co++ {
			grp := co / cog
			for o := 0; o < ov; o++ {
				o0, o1, o2 := o/(g.Out[1]*g.Out[2]), o/g.Out[2]%g.Out[1], o%g.Out[2]
				yi := (n*g.Cout+co)*ov + o
				for ci := 0; ci < cig; ci++ {
					for k := 0; k < kv; k++ {
						k0, k1, k2 := k/(g.K[1]*g.K[2]), k/g.K[2]%g.K[1], k%g.K[2]
						i0 := o0*g.Stride[0] - g.PadLo[0] + k0*g.Dil[0]
						i1 := o1*g.Stride[1] - g.PadLo[1] + k1*g.Dil[1]
						i2 := o2*g.Stride[2] - g.PadLo[2] + k2*g.Dil[2]
						if i0 < 0 || i1 < 0 || i2 < 0 || i0 >= g.In[0] || i1 >= g.In[1] || i2 >= g.In[2] {
							continue
						}
						xi := (n*g.Cin+grp*cig+ci)*iv + (i0*g.In[1]+i1)*g.In[2] + i2
						tap(yi, xi, (co*cig+ci)*kv+k)
					}
				}
			}
		}
	}
}

// refForward is conv in float64 by refTaps: each output sums its taps in
// order from zero.
func refForward(x, w []float32, g *Geom) []float64 {
	y := make([]float64, g.N*g.Cout*g.OutVol())
	refTaps(g, func(yi, xi, wi int) { y[yi] += float64(x[xi]) * float64(w[wi]) })
	return y
}

// refAdjoints returns the data and filter gradients in float64 by
// transposing refForward's sums term by term.
func refAdjoints(x, w, dy []float32, g *Geom) (dx, dw []float64) {
	dx = make([]float64, g.N*g.Cin*g.InVol())
	dw = make([]float64, g.Cout*g.CinG()*g.KVol())
	refTaps(g, func(yi, xi, wi int) {
		d := float64(dy[yi])
		dx[xi] += float64(w[wi]) * d
		dw[wi] += float64(x[xi]) * d
	})
	return dx, dw
}

// reference is refForward's output and refAdjoints' gradients at (x, w)
// and the output cotangent dy.
func reference(x, w, dy []float32, g *Geom) (y, dx, dw []float64) {
	dx, dw = refAdjoints(x, w, dy, g)
	return refForward(x, w, g), dx, dw
}

// drawOperands draws an input x, a filter w and an output-shaped u (a
// cotangent, or the u of an adjoint identity) for g by draw (randData or
// dyadic), labelled "x", "w" and ulabel.
func drawOperands(rt *rapid.T, g *Geom, draw func(*rapid.T, int, string) []float32, ulabel string) (x, w, u []float32) {
	x = draw(rt, g.N*g.Cin*g.InVol(), "x")
	w = draw(rt, g.Cout*g.CinG()*g.KVol(), "w")
	return x, w, draw(rt, g.N*g.Cout*g.OutVol(), ulabel)
}

// refCase is a geometry g, an input x, a filter w and an output
// cotangent u drawn for it, and the float64 reference's outputs there.
type refCase struct {
	g                     *Geom
	x, w, u               []float32
	wantY, wantDx, wantDw []float64
}

// drawRefCase draws the operands for g by drawOperands (by draw, u
// labelled ulabel) and takes the reference at them.
func drawRefCase(rt *rapid.T, g *Geom, draw func(*rapid.T, int, string) []float32, ulabel string) refCase {
	x, w, u := drawOperands(rt, g, draw, ulabel)
	wantY, wantDx, wantDw := reference(x, w, u, g)
	return refCase{g: g, x: x, w: w, u: u, wantY: wantY, wantDx: wantDx, wantDw: wantDw}
}

// exactAdjoint checks convolution kernels by the adjoint identities
// ⟨K(x,w),u⟩ = ⟨x,D(u,w)⟩ = ⟨w,F(x,u)⟩, exactly: its operands x, w and u
// are dyadic, so that every product and sum is exact in float32. Each
// check runs a kernel that writes y, dx or dw and compares its product
// with the reference filter kernel's ⟨w,F(x,u)⟩.
type exactAdjoint struct {
	rt                 *rapid.T
	g                  *Geom
	x, w, u, y, dx, dw []float32
	ref                string
	want               float64
}

// newExactAdjoint draws the operands for g and takes the product of the
// reference filter kernel ref, named name.
func newExactAdjoint(rt *rapid.T, g *Geom, name string, ref func(dw, x, u []float32, g *Geom)) *exactAdjoint {
	e := &exactAdjoint{rt: rt, g: g, ref: name}
	e.x, e.w, e.u = drawOperands(rt, g, dyadic, "u")
	e.y, e.dx, e.dw = make([]float32, len(e.u)), make([]float32, len(e.x)), make([]float32, len(e.w))
	ref(e.dw, e.x, e.u, g)
	e.want = dot64(e.w, e.dw)
	return e
}

// filter runs f, which writes dw, and checks ⟨w,dw⟩.
func (e *exactAdjoint) filter(name string, f func()) {
	e.rt.Helper()
	f()
	e.check("⟨w,"+name+"(x,u)⟩", dot64(e.w, e.dw))
}

// data runs f, which writes dx, and checks ⟨x,dx⟩.
func (e *exactAdjoint) data(name string, f func()) {
	e.rt.Helper()
	f()
	e.check("⟨x,"+name+"(u,w)⟩", dot64(e.x, e.dx))
}

// forward runs f, which writes y, and checks ⟨y,u⟩.
func (e *exactAdjoint) forward(name string, f func()) {
	e.rt.Helper()
	f()
	e.check("⟨"+name+"(x,w),u⟩", dot64(e.y, e.u))
}

func (e *exactAdjoint) check(what string, got float64) {
	e.rt.Helper()
	if got != e.want {
		e.rt.Fatalf("%+v: %s = %v, ⟨w,%s(x,u)⟩ = %v", *e.g, what, got, e.ref, e.want)
	}
}

// randData draws n multiples of 1/8 in [-2, 2].
func randData(t *rapid.T, n int, label string) []float32 { return eighths(t, n, 16, label) }

// dyadic draws n multiples of 1/8 in [-1, 1].
func dyadic(t *rapid.T, n int, label string) []float32 { return eighths(t, n, 8, label) }

// eighths draws n multiples of 1/8 in [-m/8, m/8].
func eighths(t *rapid.T, n, m int, label string) []float32 {
	k := rapid.SliceOfN(rapid.IntRange(-m, m), n, n).Draw(t, label)
	x := make([]float32, n)
	for i, v := range k {
		x[i] = float32(v) / 8
	}
	return x
}

// axes says how drawAxes draws the last r axes of a geometry: kernels up
// to kMax, strides up to strideMax (not drawn, so 1, where it is 1), and
// again above 1 on the axis forced (none where it is -1), low and high
// padding up to padMax, inputs up to inMax.
type axes struct {
	r, kMax, strideMax, forced, padMax, inMax int
}

// drawAxes draws g's In, K, Out, Stride, Dil and PadLo as ax says; the
// axes before the last ax.r are 1 (no padding).
func drawAxes(t *rapid.T, g *Geom, ax axes) {
	for a := 0; a < 3; a++ {
		g.In[a], g.K[a], g.Out[a], g.Stride[a], g.Dil[a] = 1, 1, 1, 1, 1
		if a < 3-ax.r {
			continue
		}
		g.K[a] = rapid.IntRange(1, ax.kMax).Draw(t, "k")
		if ax.strideMax > 1 {
			g.Stride[a] = rapid.IntRange(1, ax.strideMax).Draw(t, "stride")
		}
		if a == ax.forced {
			g.Stride[a] = rapid.IntRange(2, ax.strideMax).Draw(t, "stride>1")
		}
		g.Dil[a] = rapid.IntRange(1, 2).Draw(t, "dil")
		g.PadLo[a] = rapid.IntRange(0, ax.padMax).Draw(t, "padlo")
		hi := rapid.IntRange(0, ax.padMax).Draw(t, "padhi")
		span := g.Dil[a]*(g.K[a]-1) + 1
		g.In[a] = rapid.IntRange(max(1, span-g.PadLo[a]-hi), ax.inMax).Draw(t, "in")
		g.Out[a] = (g.In[a]+g.PadLo[a]+hi-span)/g.Stride[a] + 1
	}
}

// namedRun is a kernel call under a name: a row of the benchmarks' and
// the allocation pins' tables.
type namedRun struct {
	name string
	f    func()
}

// fataler is what the comparisons need of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// sameOnThreads runs run into an output of n values filled with 99 (run
// must overwrite it) on one goroutine and then on each of threads
// goroutines, fails unless every run gives the one-goroutine bits, and
// returns the one-goroutine output. It restores flat's thread limit.
func sameOnThreads(t fataler, what string, n int, threads []int, run func(out []float32)) []float32 {
	t.Helper()
	defer flat.SetMaxThreads(flat.SetMaxThreads(1))
	one := fill(n, 99)
	run(one)
	for _, th := range threads {
		flat.SetMaxThreads(th)
		out := fill(n, 99)
		run(out)
		sameBits(t, what, out, one, th)
	}
	return one
}

// sameOnThreads runs the three kernels at (x, w) and the output cotangent
// u by the function sameOnThreads, on one, two and three goroutines, and
// returns their one-goroutine outputs.
func (im kernels) sameOnThreads(t fataler, g *Geom, x, w, u []float32) (y, dx, dw []float32) {
	t.Helper()
	what, threads := fmt.Sprintf("%+v: ", *g), []int{2, 3}
	y = sameOnThreads(t, what+"y", len(u), threads, func(y []float32) { im.fwd(y, x, w, g) })
	dx = sameOnThreads(t, what+"dx", len(x), threads, func(dx []float32) { im.data(dx, u, w, g) })
	dw = sameOnThreads(t, what+"dw", len(w), threads, func(dw []float32) { im.filter(dw, x, u, g) })
	return y, dx, dw
}

// sameBits fails unless got (on threads goroutines) has the bits of want
// (on one).
func sameBits(t fataler, what string, got, want []float32, threads int) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v on %d goroutines, %v on one", what, i, got[i], threads, want[i])
		}
	}
}

// near fails unless got has want's length and each value is within 1e-4
// of want's, relative to 1 + |want|.
func near(t fataler, what string, got []float32, want []float64) {
	t.Helper()
	if err := relerr.Check(what, got, want, 1e-4); err != nil {
		t.Fatal(err)
	}
}

func dot64(a, b []float32) float64 {
	s := 0.0
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}
