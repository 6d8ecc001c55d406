package ad

import (
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/vmath"
)

// Broadcasting arithmetic (numpy rules: shapes aligned at the trailing axis,
// dimensions equal or 1). A per-channel bias for (N, C, H, W) activations is
// a (C, 1, 1) tensor; a per-feature bias for (N, F) is (F).

type binaryPrim struct {
	name string
	op   binop
}

type binop uint8

const (
	opAdd binop = iota
	opSub
	opMul
	opDiv
)

var (
	addOp = &binaryPrim{"Add", opAdd}
	subOp = &binaryPrim{"Sub", opSub}
	mulOp = &binaryPrim{"Mul", opMul}
	divOp = &binaryPrim{"Div", opDiv}
)

// Add returns a + b, broadcasting.
func Add(a, b Var) Var { return Apply(addOp, Attrs{}, a, b) }

// Sub returns a − b, broadcasting.
func Sub(a, b Var) Var { return Apply(subOp, Attrs{}, a, b) }

// Mul returns a · b elementwise, broadcasting.
func Mul(a, b Var) Var { return Apply(mulOp, Attrs{}, a, b) }

// Div returns a / b elementwise, broadcasting.
func Div(a, b Var) Var { return Apply(divOp, Attrs{}, a, b) }

func (p *binaryPrim) Name() string { return p.name }
func (p *binaryPrim) Shape(dst []int, in [][]int, _ Attrs) ([]int, error) {
	return broadcastShape(dst, in[0], in[1])
}

func (p *binaryPrim) Forward(f *Forward) {
	switch od, xd, yd := f.Out.Data, f.In[0].Data, f.In[1].Data; {
	case len(xd) == len(od) && len(yd) == len(od):
		splitElems(elemJob{kind: elemBinary, op: p.op, out: od, a: xd, b: yd})
		return
	case len(xd) == len(od) && len(yd) == 1:
		// A scalar b against any shape: one row (the rows walk below
		// would make the same calls, row by row).
		binaryRow(p.op, od, xd, yd, 1, 0)
		return
	case len(xd) == 1 && len(yd) == len(od):
		binaryRow(p.op, od, xd, yd, 0, 1)
		return
	}
	binaryBroadcast(p.op, f.In[0], f.In[1], f.Out, binaryRow)
}

func (p *binaryPrim) Forward64(f *Forward) {
	// The shapes of a right-hand side's small vectors: equal lengths, or a
	// scalar against a vector, as one row without the broadcast walk
	// (whose strides and closure cost more than a few elements).
	switch od, xd, yd := f.Out64.Data, f.In64[0].Data, f.In64[1].Data; {
	case len(xd) == len(od) && len(yd) == len(od):
		binaryShort(p.op, od, xd, yd)
		return
	case len(xd) == len(od) && len(yd) == 1:
		binaryRowGo(p.op, od, xd, yd, 1, 0)
		return
	case len(xd) == 1 && len(yd) == len(od):
		binaryRowGo(p.op, od, xd, yd, 0, 1)
		return
	}
	binaryBroadcast(p.op, f.In64[0], f.In64[1], f.Out64, binaryRowGo[float64])
}

// binaryBroadcast computes out = a op b, broadcasting, row by row with
// row (binaryRow's contract).
func binaryBroadcast[T flat.Float](op binop, a, b, out flat.TensorOf[T], row func(op binop, out, a, b []T, la, lb int)) {
	sa, sb := bstrides(a.Shape, out.Shape), bstrides(b.Shape, out.Shape)
	var ms, ma, mb [maxRank]int
	shape := coalesce(out.Shape, &sa, &sb, &ms, &ma, &mb)
	inner, la, lb := 1, 0, 0
	if r := len(shape); r > 0 {
		inner, la, lb = shape[r-1], ma[r-1], mb[r-1]
	}
	rows(shape, &ma, &mb, func(o, ia, ib int) {
		row(op, out.Data[o:o+inner], a.Data[ia:], b.Data[ib:], la, lb)
	})
}

// binaryRowGo is binaryRow in plain Go, for either precision: float64's
// kernel, and the reference float32's SIMD kernels give the same bits as.
func binaryRowGo[T flat.Float](op binop, out, a, b []T, la, lb int) {
	n := len(out)
	if la == 1 && lb == 1 {
		binaryShort(op, out, a[:n], b[:n])
		return
	}
	switch op {
	case opAdd:
		for i := range out {
			out[i] = a[i*la] + b[i*lb]
		}
	case opSub:
		for i := range out {
			out[i] = a[i*la] - b[i*lb]
		}
	case opMul:
		for i := range out {
			out[i] = a[i*la] * b[i*lb]
		}
	case opDiv:
		for i := range out {
			out[i] = a[i*la] / b[i*lb]
		}
	}
}

// ones is a read-only row of ones for addConst.
var ones = func() []float32 {
	o := make([]float32, 1024)
	flat.Fill(o, 1)
	return o
}()

// addConst sets out = a + y through flat's SIMD Axpy (out = a, then
// out += y·1: the product is exact, so each sum is rounded once, as a + y)
// and reports whether it did: rows too short to gain, and y = 0 (Axpy
// skips α = 0, which would keep a −0 that a + 0 turns into +0), are left
// to the caller's loop.
func addConst(out, a []float32, y float32) bool {
	if len(out) < 32 || y == 0 || y != y {
		return false
	}
	copy(out, a)
	for off := 0; off < len(out); off += len(ones) {
		m := min(len(ones), len(out)-off)
		flat.Axpy(y, ones[:m], out[off:off+m])
	}
	return true
}

// shortRow is the longest row that binaryRow computes with a plain loop
// rather than flat's and vmath's SIMD kernels, whose calls and checks cost
// more than a few elements (a small network's batch-1 activations). Each
// element is one IEEE operation, so both give the same bits.
const shortRow = 16

// binaryShort is binaryRow's same-length case for a short row, and
// binaryRowGo's for any.
func binaryShort[T flat.Float](op binop, out, a, b []T) {
	out = out[:len(a)]
	b = b[:len(a)]
	switch op {
	case opAdd:
		for i, x := range a {
			out[i] = x + b[i]
		}
	case opSub:
		for i, x := range a {
			out[i] = x - b[i]
		}
	case opMul:
		for i, x := range a {
			out[i] = x * b[i]
		}
	case opDiv:
		for i, x := range a {
			out[i] = x / b[i]
		}
	}
}

// binaryRow computes out[i] = a[i·la] op b[i·lb], with la, lb ∈ {0, 1}.
func binaryRow(op binop, out, a, b []float32, la, lb int) {
	n := len(out)
	switch {
	case la == 1 && lb == 1:
		a, b = a[:n], b[:n]
		if n <= shortRow {
			binaryShort(op, out, a, b)
			return
		}
		switch op {
		case opAdd: // flat's SIMD Axpy: y + 1·x rounds exactly like y + x
			copy(out, a)
			flat.Axpy(1, b, out)
		case opSub:
			copy(out, a)
			flat.Axpy(-1, b, out)
		case opMul:
			vmath.Mul(out, a, b)
		case opDiv:
			for i := range out {
				out[i] = a[i] / b[i]
			}
		}
	case la == 1:
		a = a[:n]
		y := b[0]
		switch op {
		case opAdd:
			if addConst(out, a, y) {
				return
			}
			for i := range out {
				out[i] = a[i] + y
			}
		case opSub:
			if addConst(out, a, -y) {
				return
			}
			for i := range out {
				out[i] = a[i] - y
			}
		case opMul:
			if n <= shortRow {
				for i, x := range a {
					out[i] = x * y
				}
				return
			}
			copy(out, a)
			flat.Scale(y, out)
		case opDiv:
			for i := range out {
				out[i] = a[i] / y
			}
		}
	case lb == 1:
		b = b[:n]
		x := a[0]
		switch op {
		case opAdd:
			if addConst(out, b, x) {
				return
			}
			for i := range out {
				out[i] = x + b[i]
			}
		case opSub:
			for i := range out {
				out[i] = x - b[i]
			}
		case opMul:
			for i := range out {
				out[i] = x * b[i]
			}
		case opDiv:
			for i := range out {
				out[i] = x / b[i]
			}
		}
	default:
		var v float32
		switch x, y := a[0], b[0]; op {
		case opAdd:
			v = x + y
		case opSub:
			v = x - y
		case opMul:
			v = x * y
		case opDiv:
			v = x / y
		}
		for i := range out {
			out[i] = v
		}
	}
}

func (p *binaryPrim) JVP(r *Rule) Var {
	a, b, out := r.In[0], r.In[1], r.Out
	ta, tb := r.Tangent(0), r.Tangent(1)
	var res Var
	switch p.op {
	case opAdd, opSub:
		if !ta.IsZero() {
			res = BroadcastTo(ta, out.Shape()...)
		}
		if !tb.IsZero() {
			if p.op == opSub {
				tb = Neg(tb)
			}
			if res.IsZero() {
				res = BroadcastTo(tb, out.Shape()...)
			} else {
				res = Add(res, tb)
			}
		}
	case opMul:
		if !ta.IsZero() {
			res = Mul(ta, b)
		}
		if !tb.IsZero() {
			res = addOrSet(res, Mul(a, tb))
		}
	case opDiv:
		// The quotient rule: the numerator da − db·out, over b.
		var num Var
		if !ta.IsZero() {
			num = BroadcastTo(ta, out.Shape()...)
		}
		if !tb.IsZero() {
			if num.IsZero() {
				num = Neg(Mul(tb, out))
			} else {
				num = Sub(num, Mul(tb, out))
			}
		}
		res = Div(num, b)
	}
	return res
}

func addOrSet(acc, v Var) Var {
	if acc.IsZero() {
		return v
	}
	return Add(acc, v)
}

func (p *binaryPrim) VJP(r *Rule, c Var) {
	a, b := r.In[0], r.In[1]
	switch p.op {
	case opAdd:
		r.AddGrad(0, SumTo(c, a.Shape()...))
		r.AddGrad(1, SumTo(c, b.Shape()...))
	case opSub:
		r.AddGrad(0, SumTo(c, a.Shape()...))
		if r.Need(1) {
			r.AddGrad(1, SumTo(Neg(c), b.Shape()...))
		}
	case opMul:
		if r.Need(0) {
			r.AddGrad(0, SumTo(Mul(c, b), a.Shape()...))
		}
		if r.Need(1) {
			r.AddGrad(1, SumTo(Mul(c, a), b.Shape()...))
		}
	case opDiv:
		cb := Div(c, b)
		r.AddGrad(0, SumTo(cb, a.Shape()...))
		if r.Need(1) {
			r.AddGrad(1, SumTo(Neg(Mul(cb, r.Out)), b.Shape()...))
		}
	}
}

// Scale returns α·v for a constant α.
func Scale(v Var, alpha float64) Var {
	if v.t == nil {
		return v
	}
	return Mul(v, ScalarLike(v, alpha))
}
