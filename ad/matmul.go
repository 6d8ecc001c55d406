package ad

import (
	"fmt"

	"github.com/flatkit/flatkit/flat"
)

// matmulPrim is op(A)·op(B), where op transposes the last two axes when
// the attribute says so. Inputs are 2-D, or 3-D with a leading batch axis
// that may be shared or of size 1. Carrying the transposes as attributes lets the rules
// stay one primitive: each derivative of a matmul is a matmul.
type matmulPrim struct{}

var matmulOp = &matmulPrim{}

// MatMul returns the matrix product a·b over the last two axes. Either
// operand may have a leading batch axis; a batch of 1, or none, is shared:
//
//	(m, k)·(k, n) → (m, n)
//	(B, m, k)·(B, k, n) → (B, m, n)
//
// A 1-D operand is a vector, as in NumPy's matmul:
//
//	(m, k)·(k) → (m)          the matrix-vector product
//	(B, m, k)·(k) → (B, m)    batched
//	(k)·(k, n) → (n)          the vector-matrix product
//	(k)·(k) → ()              the dot product
//
// Its derivatives are those of the matrix product with the vector as a
// column or a row.
func MatMul(a, b Var) Var { return MatMulT(a, b, false, false) }

// MatMulT returns op(a)·op(b), where op transposes the last two axes of
// its argument when the flag is set. So MatMulT(x, w, false, true) is x·wᵀ,
// without materialising wᵀ. A 1-D operand is a vector (see MatMul), whose flag is
// ignored: a vector is its own transpose.
func MatMulT(a, b Var, transA, transB bool) Var {
	if sa, sb := a.Shape(), b.Shape(); sa != nil && sb != nil && (len(sa) == 1 || len(sb) == 1) {
		return matVec(a, b, len(sa), len(sb), transA, transB)
	}
	ints := [2]int{b2i(transA), b2i(transB)}
	return Apply(matmulOp, Attrs{Ints: ints[:]}, a, b)
}

// matVec is MatMulT with a 1-D operand: the vector becomes a column (b) or a
// row (a) of a matrix product, whose size-1 axis is then dropped, so every
// derivative is a matmul and a reshape.
func matVec(a, b Var, ra, rb int, transA, transB bool) Var {
	var ints [2]int
	if ra == 1 {
		a = Reshape(a, 1, -1)
		transA = false
	}
	if rb == 1 {
		b = Reshape(b, -1, 1)
		transB = false
	}
	ints[0], ints[1] = b2i(transA), b2i(transB)
	y := Apply(matmulOp, Attrs{Ints: ints[:]}, a, b)
	s := y.Shape()
	if s == nil {
		return y // failed: the tape has the error
	}
	var dims [maxRank]int
	out := dims[:0]
	for i, d := range s {
		if ra == 1 && i == len(s)-2 || rb == 1 && i == len(s)-1 {
			continue
		}
		out = append(out, d)
	}
	return Reshape(y, out...)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (*matmulPrim) Name() string { return "MatMul" }

// dims returns batch, rows, inner and cols of op(x) for x of shape s.
func mmDims(s []int, trans bool) (batch, rows, cols int, ok bool) {
	switch len(s) {
	case 2:
		batch, rows, cols = 1, s[0], s[1]
	case 3:
		batch, rows, cols = s[0], s[1], s[2]
	default:
		return 0, 0, 0, false
	}
	if trans {
		rows, cols = cols, rows
	}
	return batch, rows, cols, true
}

func (*matmulPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	ta, tb := a.Ints[0] == 1, a.Ints[1] == 1
	ba, m, ka, okA := mmDims(in[0], ta)
	bb, kb, n, okB := mmDims(in[1], tb)
	switch {
	case !okA || !okB:
		return dst, fmt.Errorf("want 2-D or 3-D inputs, got %v and %v", in[0], in[1])
	case ka != kb:
		return dst, fmt.Errorf("inner dimensions differ: %v%s · %v%s is (%d×%d)·(%d×%d), want (%d×%d)·(%d×%d)", in[0], tick(ta), in[1], tick(tb), m, ka, kb, n, m, ka, ka, n)
	case ba != bb && ba != 1 && bb != 1:
		return dst, fmt.Errorf("batch sizes %d and %d differ (shapes %v and %v), want equal sizes or one of them 1", ba, bb, in[0], in[1])
	}
	if len(in[0]) == 3 || len(in[1]) == 3 {
		dst = append(dst, max(ba, bb))
	}
	return append(dst, m, n), nil
}

func tick(t bool) string {
	if t {
		return "ᵀ"
	}
	return ""
}

func (*matmulPrim) Forward(f *Forward) {
	if sa, sb := f.In[0].Shape, f.In[1].Shape; len(sa) == 2 && len(sb) == 2 {
		// One product (a layer's): no batch to walk. Written out here
		// rather than through matmulForward, whose call costs a few
		// percent of a small network's step.
		m, k, n := sa[0], sa[1], sb[1]
		if f.Attrs.Ints[0] == 1 {
			m, k = k, m
		}
		if f.Attrs.Ints[1] == 1 {
			n = sb[0]
		}
		gemm(f.Attrs.Ints[0] == 1, f.Attrs.Ints[1] == 1, m, n, k, f.In[0].Data, sa[1], f.In[1].Data, sb[1], f.Out.Data, n)
		return
	}
	matmulForward(f.In[0], f.In[1], f.Out, f.Attrs, gemm)
}

// Forward64 computes the products in float64 with gemmGo, a plain loop:
// the matrices of an ODE's right-hand side or a small network are too
// small for packing and blocking to pay.
func (*matmulPrim) Forward64(f *Forward) {
	matmulForward(f.In64[0], f.In64[1], f.Out64, f.Attrs, gemmGo[float64])
}

// matmulForward computes out = op(A)·op(B), one product of the batch at a
// time with gemm (gemm's contract); a 2-D A or B, or a batch of 1, is
// shared.
func matmulForward[T flat.Float](A, B, out flat.TensorOf[T], a Attrs, gemm func(ta, tb bool, m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int)) {
	ta, tb := a.Ints[0] == 1, a.Ints[1] == 1
	ba, m, k, _ := mmDims(A.Shape, ta)
	bb, _, n, _ := mmDims(B.Shape, tb)
	ra, ca := A.Shape[len(A.Shape)-2], A.Shape[len(A.Shape)-1]
	rb, cb := B.Shape[len(B.Shape)-2], B.Shape[len(B.Shape)-1]
	batch := max(ba, bb)
	for i := 0; i < batch; i++ {
		ai, bi := 0, 0
		if ba > 1 {
			ai = i * ra * ca
		}
		if bb > 1 {
			bi = i * rb * cb
		}
		gemm(ta, tb, m, n, k, A.Data[ai:ai+ra*ca], ca, B.Data[bi:bi+rb*cb], cb, out.Data[i*m*n:(i+1)*m*n], n)
	}
}

// gemmGo is gemm in plain Go for either precision, float64's kernel: c =
// op(a)·op(b) for row-major a, b, c. Each case runs its innermost loop
// along contiguous memory: rows of b scaled and added (axpy) when b is
// not transposed, dot products of rows when it is.
func gemmGo[T flat.Float](ta, tb bool, m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int) {
	for i := 0; i < m; i++ {
		ci := c[i*ldc : i*ldc+n : i*ldc+n]
		switch {
		case !tb:
			clear(ci)
			for p := 0; p < k; p++ {
				var aip T
				if ta {
					aip = a[p*lda+i]
				} else {
					aip = a[i*lda+p]
				}
				bp := b[p*ldb : p*ldb+n : p*ldb+n]
				for j, v := range bp {
					ci[j] += aip * v
				}
			}
		case !ta:
			ai := a[i*lda : i*lda+k : i*lda+k]
			for j := range ci {
				bj := b[j*ldb : j*ldb+k : j*ldb+k]
				var s T
				for p, v := range ai {
					s += v * bj[p]
				}
				ci[j] = s
			}
		default:
			for j := range ci {
				bj := b[j*ldb : j*ldb+k : j*ldb+k]
				var s T
				for p, v := range bj {
					s += a[p*lda+i] * v
				}
				ci[j] = s
			}
		}
	}
}

// gemm computes c = op(a)·op(b) for row-major a, b, c.
func gemm(ta, tb bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		clear(c[:m*n])
		return
	}
	if !ta && tb && m*n <= 64 && k >= 64 {
		// A few long dot products (a classifier head: x·Wᵀ for a small
		// batch): packing the panels would cost more than the products.
		for i := 0; i < m; i++ {
			ar := a[i*lda:][:k]
			for j := 0; j < n; j++ {
				c[i*ldc+j] = flat.Dot(ar, b[j*ldb:][:k])
			}
		}
		return
	}
	// A column or a row of C (a batch of one): the Gemv that flat.Gemm
	// hands it to, in Gemm's order of cases, without Gemm's checks and
	// dispatch, which cost more than a small network's product.
	switch {
	case n == 1 && (tb || ldb == 1):
		if ldc != 1 && m != 1 {
			flat.Gemm(ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)
			return
		}
		ar, ac := m, k
		if ta {
			ar, ac = k, m
		}
		flat.Gemv(ta, ar, ac, 1, a, lda, b[:k], 0, c[:m])
	case m == 1 && (!ta || lda == 1) && tb && k <= narrowK:
		narrowRows(n, k, b, ldb, a[:k], c[:n])
	case m == 1 && (!ta || lda == 1):
		br, bc := k, n
		if tb {
			br, bc = n, k
		}
		flat.Gemv(!tb, br, bc, 1, b, ldb, a[:k], 0, c[:n])
	case k == 1 && n == 2 && ldc == 2 && (!tb || ldb == 1) && m > 2:
		outer2(m, a, lda, ta, b, c)
	default:
		flat.Gemm(ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c, ldc)
	}
}

// narrowK is the widest matrix whose product with a vector narrowRows
// computes. flat's vector kernels reduce each row's products across a
// whole register, a long chain of dependent adds. That is slow for a row
// of two, such as a layer's weight on a two-component state.
const narrowK = 8

// narrowRows sets y_i = Σ_j w_ij·x_j for the n×k matrix w (row stride
// ldw, k ≤ narrowK): each product rounded, summed in order j = 0, 1, …
// (the conversions keep the compiler from fusing them). The rows are
// independent, so they overlap in the pipeline, unlike the kernels'
// reductions.
func narrowRows(n, k int, w []float32, ldw int, x, y []float32) {
	x = x[:k]
	y = y[:n]
	if k == 2 {
		x0, x1 := x[0], x[1]
		for i := range y {
			r := w[i*ldw : i*ldw+2 : i*ldw+2]
			y[i] = float32(r[0]*x0) + float32(r[1]*x1)
		}
		return
	}
	for i := range y {
		r := w[i*ldw : i*ldw+k : i*ldw+k]
		s := float32(r[0] * x[0])
		for j := 1; j < k; j++ {
			s += float32(r[j] * x[j])
		}
		y[i] = s
	}
}

// outer2 sets the m×2 matrix C = op(A)·op(B) for k = 1 (the weight
// gradient dyᵀ·x of a layer whose input has two components, an ODE's
// state), as flat.Gemm's outer-product kernel computes each element,
// fma(a_i, b_j, +0) times α = 1: the product in float64, exact, plus +0,
// rounded once (TestSmallGemmMatchesFlat). The kernel's vector loop has
// nothing to do on rows of two; this loop costs a third of it.
func outer2(m int, a []float32, lda int, ta bool, b, c []float32) {
	inc := lda
	if ta {
		inc = 1
	}
	a = a[:(m-1)*inc+1]
	y0, y1 := float64(b[0]), float64(b[1])
	c = c[:2*m]
	for o, i := 0, 0; o+1 < len(c); o, i = o+2, i+inc {
		x := float64(a[i])
		c[o] = float32(x*y0 + 0)
		c[o+1] = float32(x*y1 + 0)
	}
}

func (*matmulPrim) JVP(r *Rule) Var { return bilinearJVP(matmulOp, r) }

// bilinearJVP is the forward rule of a primitive p that is linear in each of
// its two inputs: d p(a, b) = p(da, b) + p(a, db), with the same attributes.
func bilinearJVP(p Primitive, r *Rule) Var {
	var res Var
	if t := r.Tangent(0); !t.IsZero() {
		res = Apply(p, r.Attrs, t, r.In[1])
	}
	if t := r.Tangent(1); !t.IsZero() {
		res = addOrSet(res, Apply(p, r.Attrs, r.In[0], t))
	}
	return res
}

func (*matmulPrim) VJP(r *Rule, c Var) {
	ta, tb := r.Attrs.Ints[0] == 1, r.Attrs.Ints[1] == 1
	a, b := r.In[0], r.In[1]
	// With 2-D inputs each cotangent is one product of the input's shape,
	// which a Backward may compute straight into the gradient buffer when
	// the input is a View of a Param (a layer's weight, or an input x made
	// a Param): see Rule.gradDest.
	flat2 := len(a.Shape()) == 2 && len(b.Shape()) == 2
	if r.Need(0) {
		if !ta {
			matmulGrad(r, 0, flat2, c, b, false, !tb) // c·op(B)ᵀ
		} else {
			matmulGrad(r, 0, flat2, b, c, tb, true) // (c·op(B)ᵀ)ᵀ = op(B)·cᵀ
		}
	}
	if r.Need(1) {
		if !tb {
			matmulGrad(r, 1, flat2, a, c, !ta, false) // op(A)ᵀ·c
		} else {
			matmulGrad(r, 1, flat2, c, a, true, ta) // cᵀ·op(A)
		}
	}
}

// matmulGrad adds the product op(x)·op(y), summed over a broadcast batch,
// to the cotangent of input i, computing it into the gradient buffer when
// flat2 allows (see matmulPrim.VJP).
func matmulGrad(r *Rule, i int, flat2 bool, x, y Var, tx, ty bool) {
	var dst []float32
	if flat2 {
		dst = r.gradDest(i)
	}
	r.AddGrad(i, sumBatch(matMulInto(dst, x, y, tx, ty), r.In[i].Shape()))
}

// matMulInto is MatMulT with its output stored in dst if dst has its size
// (applyInto).
func matMulInto(dst []float32, a, b Var, transA, transB bool) Var {
	ints := [2]int{b2i(transA), b2i(transB)}
	return applyInto(dst, matmulOp, Attrs{Ints: ints[:]}, a, b)
}

// sumBatch sums a batched cotangent over the batch axis when the input it
// belongs to was shared across the batch (2-D or batch 1).
func sumBatch(g Var, shape []int) Var {
	gs := g.Shape()
	if len(gs) == 3 && (len(shape) == 2 || shape[0] == 1 && gs[0] != 1) {
		return Reshape(SumTo(g, append([]int{1}, gs[1:]...)...), shape...)
	}
	return g
}
