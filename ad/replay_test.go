package ad

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/flat"
)

// A replay case: f maps an input x of shape xs and a flat parameter vector
// p of np values (read through views, as layers do) to a tensor.
type rpCase struct {
	name string
	xs   []int
	np   int
	f    func(x, p Var) Var
}

func pos(x Var) Var { return Add(x.t.Scalar(1), Square(x)) } // > 0, for Log, Sqrt, Div

// rpCases cover the op families that model layers use, each with its
// derivative rules (recorded by the sweeps of rpRecord).
var rpCases = []rpCase{
	{"dense-tanh", []int{2, 3}, 4*3 + 4, func(x, p Var) Var {
		return Tanh(Add(MatMulT(x, View(p, 0, 4, 3), false, true), View(p, 12, 4)))
	}},
	{"arith", []int{2, 3}, 3, func(x, p Var) Var {
		b := View(p, 0, 3)
		return Sub(Mul(Div(x, pos(b)), Scale(x, -1.5)), Neg(Add(x, b)))
	}},
	{"unary", []int{2, 3}, 3, func(x, p Var) Var {
		z := Mul(x, View(p, 0, 3))
		ys := []Var{Exp(z), Log(pos(z)), Log1p(Square(z)), Sqrt(pos(z)), Abs(z), Sin(z), Cos(z),
			Sigmoid(z), Relu(z), Gelu(z), Erf(z), Softplus(z), Swish(z), Tanh(z), Pow(pos(z), 1.5)}
		y := ys[0]
		for _, v := range ys[1:] {
			y = Add(y, v)
		}
		return y
	}},
	{"piecewise", []int{2, 3}, 3, func(x, p Var) Var {
		z := Mul(x, View(p, 0, 3))
		y := Add(Mul(Sign(z), LeakyRelu(z, 0.1)), Elu(z, 0.7))
		y = Add(y, Mul(Indicator(z, -0.5, 0.5), Clamp(z, -1, 1)))
		return Add(Where(x, y, Square(z)), StopGradient(Mul(z, z)))
	}},
	{"reduce", []int{2, 3, 2}, 6, func(x, p Var) Var {
		z := Mul(x, View(p, 0, 3, 2))
		y := Add(Sum(z, 1), Mean(z, 1))
		y = Add(y, Reshape(SumTo(z, 2, 1, 2), 2, 2))
		return Add(BroadcastTo(Sum(y), 2, 2), Mean(Square(y)))
	}},
	{"softmax", []int{2, 4}, 4, func(x, p Var) Var {
		z := Mul(x, View(p, 0, 4))
		return Add(Add(Softmax(z, 1), LogSoftmax(z, 0)), Reshape(LogSumExp(z, 1), 2, 1))
	}},
	{"matmul", []int{2, 3, 4}, 4*5 + 3*2, func(x, p Var) Var {
		w := View(p, 0, 4, 5)
		y := MatMul(x, BroadcastTo(w, 2, 4, 5)) // batched (2, 3, 5)
		a := View(p, 20, 3, 2)
		return Add(MatMulT(a, Reshape(y, 3, 10), true, false), Sum(MatMul(Transpose(Reshape(x, 6, 4), 1, 0), Reshape(x, 6, 4))))
	}},
	{"shape", []int{2, 3}, 6, func(x, p Var) Var {
		z := Mul(x, View(p, 0, 2, 3))
		a := Concat(1, Transpose(z, 1, 0), Transpose(z, 1, 0))
		b := Concat(0, Slice(Reshape(z, 6), 1, 4), Reshape(SliceAxis(Reshape(z, 3, 2), 1, 0, 1), 3))
		c := Crop(Pad(z, 1, 0, 2, 1), 0, 1, 1, 2)
		d := PadAxis(SliceAxis(z, 1, 1, 3), 0, 1, 1)
		return Add(Add(Sum(Mul(a, a)), Sum(Mul(b, b))), Add(Sum(Mul(c, z)), Sum(d)))
	}},
	{"gather", []int{2, 3}, 6, func(x, p Var) Var {
		z := Mul(x, View(p, 0, 2, 3))
		g := Gather(z, []int{5, 0, 0, 3, 2}, 5)
		return Add(ScatterAdd(Tanh(g), []int{1, 1, 4, 0, 2}, 2, 3), z)
	}},
	{"conv", []int{1, 2, 6}, 3*2*2 + 3, func(x, p Var) Var {
		w, b := View(p, 0, 3, 2, 2), View(p, 12, 3)
		g := ConvGeom{Stride: []int{1}, PadLo: []int{1}, PadHi: []int{0}}
		y := Add(Conv(x, w, g), ConvBias(x, w, b, g))
		y = Add(y, ConvBiasRelu(x, w, b, g))
		u := ConvTranspose(y, w, g, 1, 2, 6)
		m := MeanPool(y, PoolGeom{Kernel: []int{2}})
		return Add(Add(Sum(Mul(u, u)), Sum(AdaptiveMeanPool(m, 2))), Sum(GlobalMeanPool(y)))
	}},
	{"batchnorm", []int{2, 2, 5}, 4, func(x, p Var) Var {
		z := Mul(x, Reshape(View(p, 0, 2), 1, 2, 1))
		y, st := BatchNorm(z, View(p, 0, 2), View(p, 2, 2), 1e-5)
		return Add(Sum(Mul(y, Tanh(y))), Sum(st))
	}},
	{"nested-grad", []int{3}, 3, func(x, p Var) Var {
		// A gradient inside the function, differentiated again by the sweeps.
		g := GradVar(func(z Var) Var { return Sum(Mul(Tanh(z), View(p, 0, 3))) }, x)
		return Mul(g, x)
	}},
}

// rpInputs are the values a recording is made at.
type rpInputs struct{ x, p, w, dx, dp []float32 }

// rpRecord records c at in on t, with a VJP of w towards x and p and a JVP
// along (dx, dp) (dp nil: along x only), and returns the input nodes.
func rpRecord(t *Tape, c rpCase, in rpInputs) (ins [5]Var, y Var) {
	xv, pv := t.Param(in.x), t.Param(in.p)
	xr := View(xv, 0, c.xs...)
	y = c.f(xr, pv)
	w := t.Const(flat.Tensor{Shape: y.Shape(), Data: in.w})
	wrt := []Var{xv, pv}
	cots := make([]Var, 2)
	if err := t.VJPOf(y, w, wrt, cots); err != nil {
		panic(err)
	}
	dx := t.Const(flat.Tensor{Shape: xv.Shape(), Data: in.dx})
	var dp Var
	if in.dp != nil {
		dp = t.Const(flat.Tensor{Shape: pv.Shape(), Data: in.dp})
	}
	if _, err := t.JVPOf(y, wrt, []Var{dx, dp}); err != nil {
		panic(err)
	}
	return [5]Var{xv, pv, w, dx, dp}, y
}

// xSize is the size of c's input x.
func (c rpCase) xSize() int {
	nx := 1
	for _, d := range c.xs {
		nx *= d
	}
	return nx
}

// sizes are the sizes of c's input x and of its result y, the latter from
// a throwaway recording.
func (c rpCase) sizes() (nx, ny int) {
	nx = c.xSize()
	tp := NewTape()
	return nx, c.f(View(tp.Param(make([]float32, nx)), 0, c.xs...), tp.Param(make([]float32, c.np))).Size()
}

// draw draws inputs for c with x of size nx and w of size ny, each label
// ending in s, in the order x, p, w, dx, dp (dp only if withDP; nil
// otherwise).
func (c rpCase) draw(rt *rapid.T, nx, ny int, s string, withDP bool) rpInputs {
	in := rpInputs{x: rpDraw(rt, nx, "x"+s), p: rpDraw(rt, c.np, "p"+s), w: rpDraw(rt, ny, "w"+s), dx: rpDraw(rt, nx, "dx"+s)}
	if withDP {
		in.dp = rpDraw(rt, c.np, "dp"+s)
	}
	return in
}

func rpDraw(rt *rapid.T, n int, label string) []float32 {
	return rapid.SliceOfN(rapid.Float32Range(-3, 3), n, n).Draw(rt, label)
}

// TestReplayEqualsFreshRecording: a recording replayed at new inputs holds,
// in every value (the function's, its VJP's and its JVP's), the bits of a
// fresh recording at those inputs.
func TestReplayEqualsFreshRecording(t *testing.T) {
	for _, c := range rpCases {
		t.Run(c.name, func(t *testing.T) {
			nx, ny := c.sizes()
			rapid.Check(t, func(rt *rapid.T) {
				withDP := rapid.Bool().Draw(rt, "withDP")
				draw := func(s string) rpInputs { return c.draw(rt, nx, ny, s, withDP) }
				in1 := draw("1")
				a := NewTape()
				ins, y := rpRecord(a, c, in1)
				if err := a.Replayable(); err != nil {
					rt.Fatalf("replayable: %v", err)
				}
				// Three times: later replays run the plan the first made,
				// the last in two parts, up to y and after it.
				for _, s := range []string{"2", "3", "4"} {
					in := draw(s)
					for k, d := range [][]float32{in.x, in.p, in.w, in.dx, in.dp} {
						if !ins[k].IsZero() {
							if err := a.Rebind(ins[k], d); err != nil {
								rt.Fatalf("rebind %d: %v", k, err)
							}
						}
					}
					if s != "4" {
						if err := a.Replay(); err != nil {
							rt.Fatalf("replay: %v", err)
						}
					} else if err := a.ReplayTo(y); err != nil {
						rt.Fatalf("replay to y: %v", err)
					} else if err := a.ReplayAfter(y); err != nil {
						rt.Fatalf("replay after y: %v", err)
					}
					b := NewTape()
					rpRecord(b, c, in)
					rpSameNodes(rt, a, b)
				}
			})
		})
	}
}

// rpSameNodes fails unless a and b hold the same ops with bit-equal values.
func rpSameNodes(rt interface{ Fatalf(string, ...any) }, a, b *Tape) {
	if a.Len() != b.Len() {
		rt.Fatalf("replayed tape has %d values, fresh %d", a.Len(), b.Len())
	}
	for i := range a.nodes {
		na, nb := &a.nodes[i], &b.nodes[i]
		if na.prim != nb.prim || len(na.data) != len(nb.data) {
			rt.Fatalf("value %d: replayed %v (%d), fresh %v (%d)", i, na.prim, len(na.data), nb.prim, len(nb.data))
		}
		for j := range na.data {
			if math.Float32bits(na.data[j]) != math.Float32bits(nb.data[j]) {
				name := "input"
				if na.prim != nil {
					name = na.prim.Name()
				}
				rt.Fatalf("value %d (%s) [%d]: replayed %g, fresh %g", i, name, j, na.data[j], nb.data[j])
			}
		}
	}
}

// TestReplayRefusesValueDependentRecordings: a recording with saved
// residuals (Max, MaxPool: their rules copy the argmax into Gather and
// ScatterAdd attributes) or with a value read and acted on by Go code is
// refused, not replayed wrong; a read after the last op is harmless.
func TestReplayRefusesValueDependentRecordings(t *testing.T) {
	x := []float32{1, -2, 3, 0.5, 4, -1}
	cases := []struct {
		name string
		f    func(p Var) Var
		ok   bool
	}{
		{"max", func(p Var) Var { return Max(Reshape(p, 2, 3), 1) }, false},
		{"min", func(p Var) Var { return Min(Reshape(p, 2, 3), 0) }, false},
		{"maxpool", func(p Var) Var { return MaxPool(Reshape(p, 1, 1, 6), PoolGeom{Kernel: []int{2}}) }, false},
		{"read-then-op", func(p Var) Var {
			if p.Data()[0] > 0 { // a branch on a value: Replay cannot re-take it
				return Tanh(p)
			}
			return Sin(p)
		}, false},
		{"item-then-op", func(p Var) Var { return Scale(p, float64(Sum(p).Item())) }, false},
		{"read-at-end", func(p Var) Var { y := Tanh(p); _ = y.Data(); _ = y.String(); return y }, true},
		{"size-and-shape", func(p Var) Var { return Reshape(Tanh(p), p.Size()/2, p.Shape()[0]/3) }, true},
	}
	for _, c := range cases {
		tp := NewTape()
		p := tp.Param(x)
		y := c.f(p)
		_ = y
		err := tp.Replayable()
		if c.ok != (err == nil) {
			t.Errorf("%s: Replayable() = %v, want ok = %v", c.name, err, c.ok)
		}
		rerr := tp.Replay()
		if c.ok && rerr != nil {
			t.Errorf("%s: Replay() = %v", c.name, rerr)
		}
		if !c.ok && !errors.Is(rerr, ErrNotReplayable) {
			t.Errorf("%s: Replay() = %v, want ErrNotReplayable", c.name, rerr)
		}
		tp.Reset()
		if err := tp.Replayable(); err != nil {
			t.Errorf("%s: after Reset, Replayable() = %v", c.name, err)
		}
	}
}

func TestRebindErrors(t *testing.T) {
	tp := NewTape()
	p := tp.Param([]float32{1, 2, 3})
	y := Tanh(p)
	if err := tp.Rebind(p, []float32{1, 2}); err == nil || !strings.Contains(err.Error(), "Rebind: 2 values for a Param of shape [3], want 3") {
		t.Errorf("Rebind with 2 values for 3: %v", err)
	}
	tp.Reset()
	p = tp.Param([]float32{1, 2, 3})
	y = Tanh(p)
	if err := tp.Rebind(y, []float32{1, 2, 3}); err == nil || !strings.Contains(err.Error(), "made by Tanh; want a Param or a Const") {
		t.Errorf("Rebind of an op's value: %v", err)
	}
	if err := tp.Replay(); err == nil {
		t.Errorf("Replay after a failed Rebind: nil error, want the tape's")
	}
}

// TestReplayAllocatesNothing: rebinding and replaying a network with its
// VJP and JVP allocates nothing.
func TestReplayAllocatesNothing(t *testing.T) {
	c := rpCases[0]
	in := rpInputs{x: make([]float32, 6), p: make([]float32, c.np), w: make([]float32, 8), dx: make([]float32, 6), dp: make([]float32, c.np)}
	tp := NewTape()
	ins, y := rpRecord(tp, c, in)
	x2 := make([]float32, 6)
	allocs := testing.AllocsPerRun(100, func() {
		x2[0]++
		if tp.Rebind(ins[0], x2) != nil || tp.Replay() != nil || tp.ReplayTo(y) != nil || tp.ReplayAfter(y) != nil {
			t.Fatal("replay failed")
		}
	})
	if allocs != 0 {
		t.Errorf("Rebind + Replay: %v allocations, want 0", allocs)
	}
}

// TestReplayAfterReset: a tape reset and used for another recording
// replays that one, not the plan of the first.
func TestReplayAfterReset(t *testing.T) {
	tp := NewTape()
	for round, c := range []rpCase{rpCases[0], rpCases[9], rpCases[0]} {
		nx := c.xSize()
		mk := func(n int, s float32) []float32 {
			x := make([]float32, n)
			for i := range x {
				x[i] = s * float32(math.Sin(float64(3*i+round+1)))
			}
			return x
		}
		tp.Reset()
		y := c.f(View(tp.Param(mk(nx, 1)), 0, c.xs...), tp.Param(mk(c.np, 1)))
		ny := y.Size()
		tp.Reset()
		in1 := rpInputs{x: mk(nx, 1), p: mk(c.np, 0.5), w: mk(ny, 1), dx: mk(nx, 2), dp: mk(c.np, 1)}
		in2 := rpInputs{x: mk(nx, -1.5), p: mk(c.np, 0.7), w: mk(ny, -1), dx: mk(nx, 1), dp: mk(c.np, -2)}
		ins, _ := rpRecord(tp, c, in1)
		if err := tp.Replay(); err != nil { // builds the plan at in1
			t.Fatal(err)
		}
		for k, d := range [][]float32{in2.x, in2.p, in2.w, in2.dx, in2.dp} {
			if err := tp.Rebind(ins[k], d); err != nil {
				t.Fatal(err)
			}
		}
		if err := tp.Replay(); err != nil {
			t.Fatal(err)
		}
		fresh := NewTape()
		rpRecord(fresh, c, in2)
		rpSameNodes(t, tp, fresh)
	}
}

// TestReplayReadsInputsInPlace: a replay reads its inputs where they are,
// whether the caller writes new values into the memory a Param or Const
// was recorded with (rebinding the same slice, or not at all) or rebinds
// to other memory and back; every value is then a fresh recording's.
func TestReplayReadsInputsInPlace(t *testing.T) {
	for _, c := range rpCases {
		t.Run(c.name, func(t *testing.T) {
			nx, ny := c.sizes()
			rapid.Check(t, func(rt *rapid.T) {
				draw := func(s string) rpInputs { return c.draw(rt, nx, ny, s, true) }
				own := draw("0") // the recording's memory
				a := NewTape()
				ins, _ := rpRecord(a, c, own)
				other := draw("other")
				for _, step := range []string{"in place", "rebind same", "other memory", "back", "in place again"} {
					in := draw(step)
					mem := own
					if step == "other memory" {
						mem = other
					}
					for k, d := range [][]float32{in.x, in.p, in.w, in.dx, in.dp} {
						dst := [][]float32{mem.x, mem.p, mem.w, mem.dx, mem.dp}[k]
						copy(dst, d)
						if step != "in place" && step != "in place again" {
							if err := a.Rebind(ins[k], dst); err != nil {
								rt.Fatalf("%s: rebind %d: %v", step, k, err)
							}
						}
					}
					if err := a.Replay(); err != nil {
						rt.Fatalf("%s: replay: %v", step, err)
					}
					b := NewTape()
					rpRecord(b, c, in)
					rpSameNodes(rt, a, b)
				}
			})
		})
	}
}

// TestReplayForComputesItsTargets: ReplayFor the cotangents of a VJP
// recording gives them a fresh recording's bits, switching between target
// sets (each with its own plan) and back, with new inputs at every call.
func TestReplayForComputesItsTargets(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := rpCases[rapid.IntRange(0, len(rpCases)-1).Draw(rt, "case")]
		nx, ny := c.sizes()
		draw := func(s string) rpInputs { return c.draw(rt, nx, ny, s, true) }
		a := NewTape()
		xv, pv := a.Param(make([]float32, nx)), a.Param(make([]float32, c.np))
		y := c.f(View(xv, 0, c.xs...), pv)
		w := a.Const(flat.Tensor{Shape: y.Shape(), Data: make([]float32, ny)})
		cots := make([]Var, 2)
		if err := a.VJPOf(y, w, []Var{xv, pv}, cots); err != nil {
			rt.Fatal(err)
		}
		sets := [][]Var{cots, {y}, cots[1:], cots}
		for k, vs := range sets {
			in := draw(fmt.Sprint(k))
			for j, d := range [][]float32{in.x, in.p, in.w} {
				if err := a.Rebind([]Var{xv, pv, w}[j], d); err != nil {
					rt.Fatal(err)
				}
			}
			if err := a.ReplayFor(vs...); err != nil {
				rt.Fatalf("set %d: %v", k, err)
			}
			b := NewTape()
			bx, bp := b.Param(in.x), b.Param(in.p)
			by := c.f(View(bx, 0, c.xs...), bp)
			bw := b.Const(flat.Tensor{Shape: by.Shape(), Data: in.w})
			bc := make([]Var, 2)
			if err := b.VJPOf(by, bw, []Var{bx, bp}, bc); err != nil {
				rt.Fatal(err)
			}
			want := map[int32]Var{y.id: by, cots[0].id: bc[0], cots[1].id: bc[1]}
			for _, v := range vs {
				if v.IsZero() {
					continue
				}
				got, exp := v.Data(), want[v.id].Data()
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(exp[i]) {
						rt.Fatalf("set %d, value %d [%d]: replayed %g, fresh %g", k, v.id, i, got[i], exp[i])
					}
				}
			}
		}
	})
}
