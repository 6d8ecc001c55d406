package ad_test

import (
	"math"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// Float64 forms of the selection and shape ops (Where, the ReLU mask,
// Concat, Stack, Pad, Crop, SliceAxis, PadAxis, Slice, Transpose), and the
// errors of the ops whose kernels are float32 only.

// opsBInput is the input of the cases below: 24 numbers, none within 0.1
// of zero, of both signs, so that the conditions of Where and Relu do not
// flip under the finite differences' steps. They are float32 numbers, so
// that a float32 recording sees the same input.
var opsBInput = func() []float64 {
	x := make([]float64, 24)
	for i := range x {
		v := 0.15 + 0.9*math.Abs(math.Sin(1.3*float64(i)+0.4))
		if i%3 == 1 {
			v = -v
		}
		x[i] = float64(float32(v))
	}
	return x
}()

// opsBCases are functions of a vector of 24 made of the ops under test
// only: each value of the result is one of the input's, or 0, so float32
// and float64 results agree exactly.
var opsBCases = []struct {
	name string
	f    func(x ad.Var) ad.Var
}{
	{"Where", func(x ad.Var) ad.Var {
		return ad.Where(ad.View(x, 0, 2, 3), ad.View(x, 6, 2, 3), ad.View(x, 12, 2, 3))
	}},
	{"WhereBroadcast", func(x ad.Var) ad.Var {
		// cond (3), a (2, 3), b (2, 1, 1): the result is (2, 2, 3).
		return ad.Where(ad.View(x, 0, 3), ad.View(x, 6, 2, 3), ad.View(x, 20, 2, 1, 1))
	}},
	{"Relu", func(x ad.Var) ad.Var { return ad.Relu(x) }},
	{"Elu", func(x ad.Var) ad.Var { return ad.Reshape(ad.Elu(ad.View(x, 0, 4), 1), 2, 2) }},
	{"Concat1", func(x ad.Var) ad.Var {
		return ad.Concat(1, ad.View(x, 0, 2, 3), ad.View(x, 6, 2, 5), ad.View(x, 16, 2, 1))
	}},
	{"Concat0", func(x ad.Var) ad.Var { return ad.Concat(-2, ad.View(x, 2, 2, 3), ad.View(x, 8, 1, 3)) }},
	{"ConcatScalars", func(x ad.Var) ad.Var {
		return ad.Concat(0, ad.Reshape(ad.View(x, 3, 1)), ad.Reshape(ad.View(x, 9, 1)))
	}},
	{"Stack", func(x ad.Var) ad.Var { return ad.Stack(ad.View(x, 0, 2, 3), ad.View(x, 7, 2, 3), ad.View(x, 18, 2, 3)) }},
	{"Pad", func(x ad.Var) ad.Var { return ad.Pad(ad.View(x, 0, 2, 3, 4), 1, 0, 0, 2, 1, 1) }},
	{"Crop", func(x ad.Var) ad.Var { return ad.Crop(ad.View(x, 0, 2, 3, 4), 0, 1, 1, 0, 1, 2) }},
	{"SliceAxis", func(x ad.Var) ad.Var { return ad.SliceAxis(ad.View(x, 0, 4, 6), -1, 1, 4) }},
	{"PadAxis", func(x ad.Var) ad.Var { return ad.PadAxis(ad.View(x, 0, 4, 6), 0, 2, 1) }},
	{"Slice", func(x ad.Var) ad.Var { return ad.Slice(ad.View(x, 0, 6, 4), 1, 4) }},
	{"Transpose", func(x ad.Var) ad.Var { return ad.Transpose(ad.View(x, 0, 2, 3, 4), 2, 0, 1) }},
	{"TransposeOfPad", func(x ad.Var) ad.Var {
		return ad.Transpose(ad.PadAxis(ad.View(x, 0, 4, 6), 1, 1, 0), 1, 0)
	}},
}

// opsBLoss is Σ w ⊙ sin(y) ⊙ y for a weight w that differs at every
// position, so that a cotangent sent to a wrong place changes the
// gradient, and the Hessian has nonzero blocks.
func opsBLoss(y ad.Var) ad.Var {
	w := make([]float64, y.Size())
	for i := range w {
		w[i] = 1 + 0.37*float64(i%7) - 0.11*float64(i)
	}
	wv := ad.Reshape(y.Tape().Const64(flat.Tensor64{Shape: []int{len(w)}, Data: w}), y.Shape()...)
	if y.Precision() == ad.Float32 {
		wv = ad.Convert(wv, ad.Float32)
	}
	return ad.Sum(ad.Mul(wv, ad.Mul(ad.Sin(y), y)))
}

func TestFloat64OpsBGradients(t *testing.T) {
	x := opsBInput
	for _, c := range opsBCases {
		t.Run(c.name, func(t *testing.T) {
			loss := func(p ad.Var) ad.Var { return opsBLoss(c.f(p)) }
			checkSecondOrder64(t, loss, x, []int{0, 5, 13, 22})
		})
	}
}

func TestFloat64OpsBAgreeWithFloat32(t *testing.T) {
	x := opsBInput
	x32 := make([]float32, len(x))
	for i, v := range x {
		x32[i] = float32(v)
	}
	for _, c := range opsBCases {
		t.Run(c.name, func(t *testing.T) {
			t64 := ad.NewTape()
			p64 := t64.Param64(x)
			y64 := c.f(p64)
			g64, err := t64.Grad64(opsBLoss(y64))
			if err != nil {
				t.Fatal(err)
			}
			t32 := ad.NewTape()
			p32 := t32.Param(x32)
			y32 := c.f(p32)
			g32, err := t32.Grad(opsBLoss(y32))
			if err != nil {
				t.Fatal(err)
			}
			if y64.Precision() != ad.Float64 || y32.Precision() != ad.Float32 {
				t.Fatalf("precisions %v and %v, want float64 and float32", y64.Precision(), y32.Precision())
			}
			if !slices.Equal(y64.Shape(), y32.Shape()) {
				t.Fatalf("shapes %v (float64) and %v (float32)", y64.Shape(), y32.Shape())
			}
			// Selections and copies of the same numbers: exactly equal.
			for i, v := range y64.Data64() {
				if v != float64(y32.Data()[i]) && !(c.name == "Elu" && math.Abs(v-float64(y32.Data()[i])) <= 1e-6) {
					t.Errorf("value [%d] = %v in float64, %v in float32", i, v, y32.Data()[i])
				}
			}
			for i, v := range g64 {
				if math.Abs(v-float64(g32[i])) > 1e-5*(1+math.Abs(v)) {
					t.Errorf("gradient [%d] = %.9g in float64, %.9g in float32", i, v, g32[i])
				}
			}
		})
	}
}

// TestFloat64OpsBReplay replays a float64 recording of every case, its
// VJP and its JVP, at a new input and compares the bits with a fresh
// recording there.
func TestFloat64OpsBReplay(t *testing.T) {
	x0 := opsBInput
	x1 := make([]float64, len(x0))
	for i, v := range x0 {
		x1[i] = v * (1 + 0.01*float64(i%5)) // same signs, other values
	}
	dir := make([]float64, len(x0))
	for i := range dir {
		dir[i] = math.Cos(float64(i))
	}
	f := func(x ad.Var) ad.Var {
		var ys []ad.Var
		for _, c := range opsBCases {
			ys = append(ys, opsBLoss(c.f(x)))
		}
		return ad.Stack(ys...)
	}
	// record returns f(x), the VJP with weights 1..n and the JVP along dir.
	record := func(tp *ad.Tape, p ad.Var) (y, vjp, jvp ad.Var) {
		y = f(p)
		w := make([]float64, y.Size())
		for i := range w {
			w[i] = float64(i + 1)
		}
		out := make([]ad.Var, 1)
		if err := tp.VJPOf(y, tp.Const64(flat.Tensor64{Shape: y.Shape(), Data: w}), []ad.Var{p}, out); err != nil {
			t.Fatal(err)
		}
		jvp, err := tp.JVPOf(y, []ad.Var{p}, []ad.Var{tp.Const64(flat.Tensor64{Shape: []int{len(dir)}, Data: dir})})
		if err != nil {
			t.Fatal(err)
		}
		return y, out[0], jvp
	}
	tp := ad.NewTape()
	p := tp.Param64(x0)
	y, vjp, jvp := record(tp, p)
	if err := tp.Rebind64(p, x1); err != nil {
		t.Fatal(err)
	}
	if err := tp.ReplayFor(y, vjp, jvp); err != nil {
		t.Fatal(err)
	}
	fresh := ad.NewTape()
	fy, fvjp, fjvp := record(fresh, fresh.Param64(x1))
	for _, r := range []struct {
		name      string
		got, want ad.Var
	}{{"f", y, fy}, {"VJP", vjp, fvjp}, {"JVP", jvp, fjvp}} {
		got, want := r.got.Data64(), r.want.Data64()
		if len(got) != len(want) || len(got) == 0 {
			t.Fatalf("%s: %d values replayed, %d recorded", r.name, len(got), len(want))
		}
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Errorf("%s[%d]: replay %v, fresh recording %v", r.name, i, got[i], want[i])
			}
		}
	}
}

// TestWhereTakesOnePrecision: a float32 condition does not select float64
// values; the error names Where and both precisions.
func TestWhereTakesOnePrecision(t *testing.T) {
	tp := ad.NewTape()
	cond := tp.Param([]float32{1, -1})
	a := tp.Param64([]float64{1, 2})
	ad.Where(cond, a, ad.ScalarLike(a, 0))
	wantErr(t, tp.Err(), "Where", "float32", "float64")
	// Converted, it does.
	tp = ad.NewTape()
	cond = tp.Param([]float32{1, -1})
	a = tp.Param64([]float64{1, 2})
	y := ad.Where(ad.Convert(cond, ad.Float64), a, ad.ScalarLike(a, 5))
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	if got := y.Data64(); got[0] != 1 || got[1] != 5 {
		t.Errorf("Where([1 -1], [1 2], 5) = %v, want [1 5]", got)
	}
	// Concat of the two precisions names both too.
	tp = ad.NewTape()
	ad.Concat(1, tp.Full(1, 2, 2), tp.Full64(1, 2, 3))
	wantErr(t, tp.Err(), "Concat", "float32", "float64")
}

// TestFloat32OnlyFamiliesSaySo: every op of the conv, pooling, batch-norm
// and channel-affine families, given float64 values, records an error
// naming it and the precision, and the tape stays failed.
func TestFloat32OnlyFamiliesSaySo(t *testing.T) {
	g := ad.ConvGeom{}
	cases := []struct {
		op string
		f  func(tp *ad.Tape)
	}{
		{"Conv", func(tp *ad.Tape) { ad.Conv(tp.Full64(1, 1, 2, 5, 5), tp.Full64(1, 3, 2, 3, 3), g) }},
		{"ConvBias", func(tp *ad.Tape) {
			ad.ConvBias(tp.Full64(1, 1, 2, 5, 5), tp.Full64(1, 3, 2, 3, 3), tp.Full64(0, 3), g)
		}},
		{"ConvBiasRelu", func(tp *ad.Tape) {
			ad.ConvBiasRelu(tp.Full64(1, 1, 2, 5, 5), tp.Full64(1, 3, 2, 3, 3), tp.Full64(0, 3), g)
		}},
		{"ConvTranspose", func(tp *ad.Tape) {
			ad.ConvTranspose(tp.Full64(1, 1, 3, 3, 3), tp.Full64(1, 3, 2, 3, 3), g, 1, 2, 5, 5)
		}},
		{"ConvFilter", func(tp *ad.Tape) {
			ad.ConvFilter(tp.Full64(1, 1, 2, 5, 5), tp.Full64(1, 1, 3, 3, 3), g, 3, 2, 3, 3)
		}},
		{"MaxPool", func(tp *ad.Tape) { ad.MaxPool(tp.Full64(1, 1, 2, 4, 4), ad.PoolGeom{Kernel: []int{2, 2}}) }},
		{"MeanPool", func(tp *ad.Tape) { ad.MeanPool(tp.Full64(1, 1, 2, 4, 4), ad.PoolGeom{Kernel: []int{2, 2}}) }},
		{"AdaptiveMeanPool", func(tp *ad.Tape) { ad.AdaptiveMeanPool(tp.Full64(1, 1, 2, 5, 5), 2, 2) }},
		{"BatchNorm", func(tp *ad.Tape) { ad.BatchNorm(tp.Full64(1, 4, 3), ad.Var{}, ad.Var{}, 1e-5) }},
		{"BatchNorm", func(tp *ad.Tape) {
			ad.BatchNorm(tp.Full64(1, 4, 3), tp.Full64(1, 3), tp.Full64(0, 3), 1e-5)
		}},
		{"BatchNormSums", func(tp *ad.Tape) {
			ad.BatchNormSums(tp.Full64(1, 4, 3), tp.Full64(1, 2, 3), tp.Full64(1, 4, 3), 1e-5)
		}},
		{"BatchNormBackData", func(tp *ad.Tape) {
			ad.BatchNormBackData(tp.Full64(1, 4, 3), tp.Full64(1, 2, 3), tp.Full64(1, 4, 3), tp.Full64(1, 2, 3), ad.Var{}, 1e-5)
		}},
		{"ChannelAffine", func(tp *ad.Tape) {
			ad.ChannelAffine(tp.Full64(1, 4, 3), tp.Full64(0, 3), tp.Full64(1, 3), tp.Full64(0, 3))
		}},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			tp := ad.NewTape()
			c.f(tp)
			wantErr(t, tp.Err(), c.op, "float64", "float32 kernel only")
		})
	}
}

// TestFloat64OpsBAllocateNothing: recording the ops again on a reset tape,
// with their VJP, and replaying the recording allocate nothing once the
// tape has grown.
func TestFloat64OpsBAllocateNothing(t *testing.T) {
	x := append([]float64(nil), opsBInput...)
	f := func(p ad.Var) ad.Var {
		a := ad.Relu(ad.Where(ad.View(p, 0, 2, 3), ad.View(p, 6, 2, 3), ad.ScalarLike(p, 0.5)))
		b := ad.Concat(1, a, ad.Crop(ad.View(p, 12, 3, 4), 1, 0, 1, 0))
		c := ad.Transpose(ad.PadAxis(b, 0, 1, 0), 1, 0)
		return ad.Sum(ad.Mul(c, c))
	}
	tp := ad.NewTape()
	var p, y, g ad.Var
	out := make([]ad.Var, 1)
	record := func() {
		tp.Reset()
		p = tp.Param64(x)
		y = f(p)
		if err := tp.VJPOf(y, ad.ScalarLike(y, 1), []ad.Var{p}, out); err != nil {
			t.Fatal(err)
		}
		g = out[0]
	}
	record()
	record()
	if allocs := testing.AllocsPerRun(20, record); allocs != 0 {
		t.Errorf("recording on a reset tape: %v allocations, want 0", allocs)
	}
	want := append([]float64(nil), g.Data64()...)
	if err := tp.ReplayFor(y, g); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(20, func() {
		if err := tp.ReplayFor(y, g); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("ReplayFor: %v allocations, want 0", allocs)
	}
	for i, v := range g.Data64() {
		if v != want[i] {
			t.Errorf("replayed gradient [%d] = %v, recorded %v", i, v, want[i])
		}
	}
}
