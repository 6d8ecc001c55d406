package ad

import (
	"math"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/flat"
)

// specialFloats are values where a slice kernel and its scalar function
// could part: signed zeros, infinities, NaNs of both signs, the smallest
// and largest numbers, and values around the usual bounds.
func specialFloats() []float32 {
	xs := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, -0.5, 2, -2,
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.Float32frombits(0xffc00000), math.Float32frombits(0x7f800001), 1e-30, -1e-30, 3, -3}
	for i := -40; i <= 40; i++ {
		xs = append(xs, float32(i)/7)
	}
	return xs
}

// TestSliceKernelsMatchScalar checks that the slice kernels of Relu and
// Indicator give bit for bit what their scalar functions give.
func TestSliceKernelsMatchScalar(t *testing.T) {
	xs := specialFloats()
	out := make([]float32, len(xs))
	reluOp.kernel(out, xs)
	for i, x := range xs {
		if want := reluOp.f(x); math.Float32bits(out[i]) != math.Float32bits(want) {
			t.Errorf("Relu(%v): kernel %v (%#x), scalar %v (%#x)", x, out[i], math.Float32bits(out[i]), want, math.Float32bits(want))
		}
	}
	inf32 := float32(math.Inf(1))
	for _, a := range [][]float32{{0, inf32}, {-1, 1}, {-inf32, 0}, {0.5, 0.5}, {-inf32, inf32}} {
		indicatorKernel(out, xs, a[0], a[1])
		for i, x := range xs {
			if want := indicatorOp.f(x, a[0], a[1]); math.Float32bits(out[i]) != math.Float32bits(want) {
				t.Errorf("Indicator(%v, %v): kernel %v, scalar %v", x, a, out[i], want)
			}
		}
	}
}

// TestCoalescedBroadcasts checks the broadcasting Add and SumTo, which
// walk coalesced rows, against plain index loops on shapes whose axes
// merge in different ways.
func TestCoalescedBroadcasts(t *testing.T) {
	cases := [][2][]int{
		{{2, 3, 4, 5}, {3, 1, 1}},
		{{2, 3, 4, 5}, {1, 3, 4, 1}},
		{{2, 3, 4, 5}, {2, 1, 4, 5}},
		{{2, 3, 4, 5}, {5}},
		{{2, 3, 4, 5}, {1}},
		{{4, 1, 5}, {4, 1, 1}},
		{{1, 1, 7}, {1, 1, 1}},
		{{3, 1}, {1, 1}},
	}
	for _, c := range cases {
		as, bs := c[0], c[1]
		a := flat.New(as...)
		b := flat.New(bs...)
		for i := range a.Data {
			a.Data[i] = float32(i%11) - 5
		}
		for i := range b.Data {
			b.Data[i] = float32(i%7)*0.25 - 1
		}
		tp := NewTape()
		sum := Add(tp.Const(a), tp.Const(b))
		back := SumTo(tp.Const(a), bs...)
		if err := tp.Err(); err != nil {
			t.Fatal(err)
		}
		// References by multi-index.
		r := len(as)
		pad := make([]int, r)
		copy(pad[r-len(bs):], bs)
		for i := 0; i < r-len(bs); i++ {
			pad[i] = 1
		}
		wantSum := make([]float32, len(a.Data))
		wantBack := make([]float64, len(b.Data))
		idx := make([]int, r)
		for i := range a.Data {
			rem := i
			for ax := r - 1; ax >= 0; ax-- {
				idx[ax] = rem % as[ax]
				rem /= as[ax]
			}
			bi := 0
			for ax := 0; ax < r; ax++ {
				bi *= pad[ax]
				if pad[ax] != 1 {
					bi += idx[ax]
				}
			}
			wantSum[i] = a.Data[i] + b.Data[bi]
			wantBack[bi] += float64(a.Data[i])
		}
		if got := sum.Data(); !slices.Equal(got, wantSum) {
			t.Errorf("%v + %v: got %v, want %v", as, bs, got, wantSum)
		}
		for i, w := range wantBack {
			if got := back.Data()[i]; float64(got) != w { // small integers: exact
				t.Errorf("SumTo(%v → %v)[%d] = %v, want %v", as, bs, i, got, w)
			}
		}
	}
}

// TestAddConstMatchesLoop checks that a row plus a constant through
// flat's Axpy gives bit for bit a[i] + y, for long rows of ordinary and
// special values and special constants.
func TestAddConstMatchesLoop(t *testing.T) {
	a := specialFloats()
	for len(a) < 3000 {
		a = append(a, float32(len(a))*1.37e-3-1, -float32(len(a))*7.1e5)
	}
	out := make([]float32, len(a))
	inf32 := float32(math.Inf(1))
	for _, y := range []float32{1, -1, 0.1, -3.5e-8, 1e30, -1e30, inf32, -inf32, 0, float32(math.Copysign(0, -1)), float32(math.NaN())} {
		for _, n := range []int{31, 32, 1023, 1024, 1025, len(a)} {
			if !addConst(out[:n], a[:n], y) {
				for i := range out[:n] {
					out[i] = a[i] + y
				}
			}
			for i := 0; i < n; i++ {
				if want := a[i] + y; math.Float32bits(out[i]) != math.Float32bits(want) && !(want != want && out[i] != out[i]) {
					t.Fatalf("n=%d: %v + %v = %v, want %v", n, a[i], y, out[i], want)
				}
			}
		}
	}
}

// TestKnownGeomIsGeom checks that the Forward methods' geometry (from
// shapes already checked, without divisions) is the checked one, on
// random valid convolutions of rank 1 to 3.
func TestKnownGeomIsGeom(t *testing.T) {
	for seed := uint64(0); seed < 500; seed++ {
		r := int(seed%3) + 1
		h := seed*2654435761 + 12345
		next := func(n int) int { h = h*6364136223846793005 + 1442695040888963407; return int(h>>33) % n }
		ints := make([]int, 5*r+4)
		ints[0] = r
		groups := next(3) + 1
		ints[1+4*r] = groups
		xs := []int{next(3) + 1, groups * (next(3) + 1)}
		ws := []int{groups * (next(3) + 1), xs[1] / groups}
		for j := 0; j < r; j++ {
			st, d, lo, hi, k := next(3)+1, next(2)+1, next(3), next(3), next(3)+1
			span := d*(k-1) + 1
			s := max(1, span-lo-hi) + next(6)
			ints[1+j], ints[1+r+j], ints[1+2*r+j], ints[1+3*r+j] = st, lo, hi, d
			xs = append(xs, s)
			ws = append(ws, k)
		}
		c, err := decodeConv(Attrs{Ints: ints})
		if err != nil {
			t.Fatal(err)
		}
		g, err := c.geom(xs, ws)
		if err != nil {
			t.Fatalf("%v %v %v: %v", ints, xs, ws, err)
		}
		ys := c.outShape(nil, &g)
		if k := c.knownGeom(xs, ws, ys); k != g {
			t.Fatalf("%v %v %v: knownGeom %+v, geom %+v", ints, xs, ws, k, g)
		}
	}
}
