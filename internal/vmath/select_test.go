package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// selectInputs are special values (signed zeros, infinities, NaNs of both
// signs and with payloads, subnormals, the bounds used below) followed by
// random float32 bit patterns.
func selectInputs(n int) []float32 {
	xs := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, -0.5, 2, -2,
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.Float32frombits(0xffc00000), math.Float32frombits(0x7f800001), math.Float32frombits(0xff800001)}
	rng := rand.New(rand.NewPCG(3, 4))
	for len(xs) < n {
		xs = append(xs, math.Float32frombits(rng.Uint32()), float32(rng.NormFloat64()))
	}
	return xs[:n]
}

func sameBits(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }

// TestSelectKernelsMatchScalar runs Relu, Indicator and Mul on every
// kernel set, every length from 0 to 200 (all tail sizes of both
// widths) and in place, against the scalar definitions bit for bit (Mul:
// any NaN for a NaN product).
func TestSelectKernelsMatchScalar(t *testing.T) {
	ranges := [][2]float32{{0, float32(math.Inf(1))}, {-1, 1}, {float32(math.Inf(-1)), 0}, {0.5, 0.5}, {-2, 3}}
	forEachISA(t, func(t *testing.T) {
		for n := 0; n <= 200; n++ {
			x := selectInputs(n)
			y := selectInputs(n + 7)[7:]
			out := make([]float32, n)
			Relu(out, x)
			for i := range x {
				if want := ReluScalar(x[i]); !sameBits(out[i], want) {
					t.Fatalf("n=%d: Relu(%v) = %v, want %v", n, x[i], out[i], want)
				}
			}
			for _, r := range ranges {
				Indicator(out, x, r[0], r[1])
				for i := range x {
					if want := IndicatorScalar(x[i], r[0], r[1]); !sameBits(out[i], want) {
						t.Fatalf("n=%d: Indicator(%v, %v) = %v, want %v", n, x[i], r, out[i], want)
					}
				}
			}
			Mul(out, x, y)
			for i := range x {
				want := x[i] * y[i]
				if !sameBits(out[i], want) && !(want != want && out[i] != out[i]) {
					t.Fatalf("n=%d: Mul(%v, %v) = %v, want %v", n, x[i], y[i], out[i], want)
				}
			}
			// In place.
			in := append([]float32(nil), x...)
			Relu(in, in)
			for i := range x {
				if !sameBits(in[i], ReluScalar(x[i])) {
					t.Fatalf("n=%d: Relu in place differs at %d", n, i)
				}
			}
		}
	})
}

// checkMaskPositive runs MaskPositive on c and y into a fresh slice, into c
// and into y, and compares each with MaskPositiveScalar bit for bit (NaN
// payloads included: c passes through untouched).
func checkMaskPositive(t *testing.T, c, y []float32) {
	t.Helper()
	n := len(c)
	check := func(how string, out []float32) {
		t.Helper()
		for i := range out {
			if want := MaskPositiveScalar(c[i], y[i]); !sameBits(out[i], want) {
				t.Fatalf("n=%d, %s: MaskPositive(%v (%#x), %v) = %v (%#x), want %v (%#x)", n, how,
					c[i], math.Float32bits(c[i]), y[i], out[i], math.Float32bits(out[i]), want, math.Float32bits(want))
			}
		}
	}
	out := make([]float32, n)
	MaskPositive(out, c, y)
	check("fresh dst", out)
	copy(out, c)
	MaskPositive(out, out, y)
	check("dst = c", out)
	copy(out, y)
	MaskPositive(out, c, out)
	check("dst = y", out)
}

// TestMaskPositiveMatchesScalar runs MaskPositive on every kernel set, every
// length from 0 to 200 (all tail sizes of both widths) and in place, against
// MaskPositiveScalar bit for bit, over random bit patterns and normal
// values with the special values spread through both inputs.
func TestMaskPositiveMatchesScalar(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		for n := 0; n <= 200; n++ {
			c := selectInputs(n)
			y := selectInputs(n + 7)[7:]
			checkMaskPositive(t, c, y)
			// The special values of y against the same c, and y's own signs
			// reversed, so that every c meets positive and non-positive y.
			checkMaskPositive(t, c, selectInputs(n))
			for i := range y {
				y[i] = -y[i]
			}
			checkMaskPositive(t, c, y)
		}
	})
}

// TestMaskPositiveSpecials runs MaskPositive on every pair of special
// values (a NaN or infinite c meeting a negative, zero or NaN y must give
// +0; a positive y, even a subnormal one, passes c's bits), laid out over
// several lengths so that each pair lands in the vector body and the tails.
func TestMaskPositiveSpecials(t *testing.T) {
	sp := selectInputs(18) // the special values only
	var c, y []float32
	for _, cv := range sp {
		for _, yv := range sp {
			c, y = append(c, cv), append(y, yv)
		}
	}
	forEachISA(t, func(t *testing.T) {
		for _, off := range []int{0, 1, 7, 9, 15} {
			for _, n := range []int{len(c) - off, 17, 31, 63} {
				checkMaskPositive(t, c[off:off+n], y[off:off+n])
			}
		}
	})
}

// TestSelectKernelsLeaveTheRest checks that the kernels write no element
// past the destination's length (the masked tails).
func TestSelectKernelsLeaveTheRest(t *testing.T) {
	forEachISA(t, func(t *testing.T) {
		for n := 0; n <= 40; n++ {
			buf := make([]float32, n+16)
			for i := range buf {
				buf[i] = 42
			}
			x := selectInputs(n)
			Relu(buf[:n], x)
			Indicator(buf[:n], x, 0, 1)
			Mul(buf[:n], x, x)
			MaskPositive(buf[:n], x, x)
			for i := n; i < len(buf); i++ {
				if buf[i] != 42 {
					t.Fatalf("n=%d: element %d past the end was written", n, i)
				}
			}
		}
	})
}

func TestSelectLengthMismatchPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"Relu":      func() { Relu(make([]float32, 2), make([]float32, 3)) },
		"Indicator": func() { Indicator(make([]float32, 2), make([]float32, 3), 0, 1) },
		"Mul":       func() { Mul(make([]float32, 3), make([]float32, 3), make([]float32, 2)) },
		"MaskPositive c": func() {
			MaskPositive(make([]float32, 3), make([]float32, 2), make([]float32, 3))
		},
		"MaskPositive y": func() {
			MaskPositive(make([]float32, 3), make([]float32, 3), make([]float32, 2))
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic on mismatched lengths", name)
				}
			}()
			f()
		}()
	}
}

func BenchmarkSelect(b *testing.B) {
	x := selectInputs(6760)
	y := selectInputs(6767)[7:]
	out := make([]float32, len(x))
	for _, k := range []struct {
		name string
		f    func()
	}{
		{"Relu", func() { Relu(out, x) }},
		{"Indicator", func() { Indicator(out, x, 0, float32(math.Inf(1))) }},
		{"Mul", func() { Mul(out, x, y) }},
		{"MaskPositive", func() { MaskPositive(out, x, y) }},
	} {
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				k.f()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(x)), "ns/elem")
		})
	}
}
