package odead_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/linalg"
	"github.com/flatkit/flatkit/ode/odead"
)

// The 2-D Brusselator of the SciML tutorial on an N×N periodic grid,
// written with ad ops: state index i + j·N + k·N² for x_i = i/(N−1),
// y_j = j/(N−1) and species k (u, then v).
//
//	u' = α(u_{i−1,j} + u_{i+1,j} + u_{i,j−1} + u_{i,j+1} − 4u) + B + u²v − (A+1)u + f(x, y, t)
//	v' = α(v_{i−1,j} + v_{i+1,j} + v_{i,j−1} + v_{i,j+1} − 4v) + A·u − u²v
//
// with A = 3.4, B = 1, α = 10/Δx², Δx = 1/(N−1), and the forcing f = 5
// in the disc (x−0.3)² + (y−0.6)² ≤ 0.01 from t = 1.1 on.
type bruss2D struct {
	N           int
	nbr         [4][]int // the periodic neighbours of each state, same species
	force, zero []float32
	shape       []int // [N²], made once so that Const allocates nothing
	alpha       float32
}

const brussA, brussB = 3.4, 1.0

func newBruss2D(N int) *bruss2D {
	b := &bruss2D{N: N, shape: []int{N * N}, alpha: float32(10 * float64(N-1) * float64(N-1))}
	n := 2 * N * N
	for d := range b.nbr {
		b.nbr[d] = make([]int, n)
	}
	for k := range 2 {
		for j := range N {
			for i := range N {
				s := i + j*N + k*N*N
				at := func(i, j int) int { return (i+N)%N + (j+N)%N*N + k*N*N }
				b.nbr[0][s], b.nbr[1][s] = at(i-1, j), at(i+1, j)
				b.nbr[2][s], b.nbr[3][s] = at(i, j-1), at(i, j+1)
			}
		}
	}
	b.force, b.zero = make([]float32, N*N), make([]float32, N*N)
	for j := range N {
		for i := range N {
			x, y := float64(i)/float64(N-1), float64(j)/float64(N-1)
			if (x-0.3)*(x-0.3)+(y-0.6)*(y-0.6) <= 0.01 {
				b.force[i+j*N] = 5
			}
		}
	}
	return b
}

// f is the right-hand side.
func (b *bruss2D) f(u, _ ad.Var, t float64) ad.Var {
	n2 := b.N * b.N
	tp := u.Tape()
	lap := ad.Add(ad.Add(ad.Gather(u, b.nbr[0], 2*n2), ad.Gather(u, b.nbr[1], 2*n2)),
		ad.Add(ad.Gather(u, b.nbr[2], 2*n2), ad.Gather(u, b.nbr[3], 2*n2)))
	lap = ad.Scale(ad.Sub(lap, ad.Scale(u, 4)), float64(b.alpha))
	U, V := ad.Slice(u, 0, n2), ad.Slice(u, n2, 2*n2)
	u2v := ad.Mul(ad.Square(U), V)
	f := b.zero
	if t >= 1.1 {
		f = b.force
	}
	du := ad.Add(ad.Sub(ad.Add(u2v, tp.Scalar(brussB)), ad.Scale(U, brussA+1)), tp.Const(flat.Tensor{Shape: b.shape, Data: f}))
	dv := ad.Sub(ad.Scale(U, brussA), u2v)
	return ad.Add(lap, ad.Concat(0, du, dv))
}

// u0 is the tutorial's initial state: u = 22(y(1−y))^{3/2}, v = 27(x(1−x))^{3/2}.
func (b *bruss2D) u0() []float32 {
	N := b.N
	u := make([]float32, 2*N*N)
	for j := range N {
		for i := range N {
			x, y := float64(i)/float64(N-1), float64(j)/float64(N-1)
			u[i+j*N] = float32(22 * math.Pow(y*(1-y), 1.5))
			u[i+j*N+N*N] = float32(27 * math.Pow(x*(1-x), 1.5))
		}
	}
	return u
}

// pattern is the hand-derived pattern: each state depends on itself, its
// four neighbours in its species and the other species at its point.
func (b *bruss2D) pattern(t *testing.T) *linalg.Pattern {
	n2 := b.N * b.N
	var e []linalg.Entry
	for s := range 2 * n2 {
		e = append(e, linalg.Entry{Row: s, Col: s}, linalg.Entry{Row: s, Col: (s + n2) % (2 * n2)})
		for d := range b.nbr {
			e = append(e, linalg.Entry{Row: s, Col: b.nbr[d][s]})
		}
	}
	p, err := linalg.NewPattern(2*n2, 2*n2, e)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// jac is the exact Jacobian's entry (r, c) at u, in float64.
func (b *bruss2D) jac(u []float32, r, c int) float64 {
	n2 := b.N * b.N
	alpha := float64(b.alpha)
	var J float64
	for d := range b.nbr {
		if b.nbr[d][r] == c {
			J += alpha
		}
	}
	s := r % n2
	U, V := float64(u[s]), float64(u[s+n2])
	switch {
	case r == c && r < n2:
		J += -4*alpha + 2*U*V - (brussA + 1)
	case r == c:
		J += -4*alpha - U*U
	case r < n2 && c == r+n2:
		J += U * U
	case r >= n2 && c == s:
		J += brussA - 2*U*V
	}
	return J
}

func equalPatterns(a, b *linalg.Pattern) bool {
	if a.Rows != b.Rows || a.Cols != b.Cols || len(a.ColIdx) != len(b.ColIdx) {
		return false
	}
	for i, v := range a.RowPtr {
		if b.RowPtr[i] != v {
			return false
		}
	}
	for i, v := range a.ColIdx {
		if b.ColIdx[i] != v {
			return false
		}
	}
	return true
}

// The right-hand side at t = 0, N = 32, reproduces the tutorial's values
// (Julia's 1-based column-major indices are ours plus one).
func TestBrusselator2DValues(t *testing.T) {
	b := newBruss2D(32)
	prob := odead.Func(b.f, 2*32*32)
	u := b.u0()
	du := make([]float32, len(u))
	prob.F(du, u, nil, 0)
	for _, c := range []struct {
		julia int
		want  float64
	}{{34, 802.9807693762164}, {1058, 985.3120721709204}, {2000, -403.5817880634729}, {2048, 1431.1460373522068}} {
		// float32 rounding of the Laplacian, scaled by α ≈ 1e4.
		if got := float64(du[c.julia-1]); math.Abs(got-c.want) > 1e-4*math.Abs(c.want) {
			t.Errorf("du[%d] = %.10g, want %.10g", c.julia, got, c.want)
		}
	}
}

// The detected pattern is the hand-derived one (N = 64 is the size of
// examples/brusselator), at the initial state,
// where u = 0 on the grid's edges y = 0 and y = 1 (so ∂u'/∂v = u² = 0
// there), and at u = 0, where every derivative of u²v is 0.
func TestBrusselator2DPattern(t *testing.T) {
	for _, N := range []int{8, 32, 64} {
		b := newBruss2D(N)
		want := b.pattern(t)
		for _, u := range [][]float32{b.u0(), make([]float32, 2*N*N)} {
			for _, tt := range []float64{0, 2} {
				got, err := odead.Sparsity(b.f, u, nil, tt)
				if err != nil {
					t.Fatal(err)
				}
				if !equalPatterns(got, want) {
					t.Fatalf("N=%d t=%g: detected pattern of %d entries, want the hand-derived %d", N, tt, got.NNZ(), want.NNZ())
				}
			}
		}
		_, k := linalg.Colour(want)
		t.Logf("N=%d: %d states, %d entries, %d colours", N, 2*N*N, want.NNZ(), k)
		if N == 32 && k > 12 {
			t.Errorf("N=32: %d colours, want at most 12", k)
		}
	}
}

// The coloured sparse Jacobian has the dense ad Jacobian's values at the
// pattern's entries, and the dense one is zero elsewhere (N = 8); at
// N = 32 it has the exact Jacobian's values.
func TestBrusselator2DSparseJac(t *testing.T) {
	for _, N := range []int{8, 32} {
		for _, replay := range []bool{false, true} {
			b := newBruss2D(N)
			n := 2 * N * N
			u := b.u0()
			u[3] = 0.7 // break the symmetry in x
			opts := []odead.Option{odead.SparseJac()}
			if replay {
				opts = append(opts, odead.Replayable()) // f's t stays below 1.1
			}
			prob, err := odead.Problem(b.f, u, 0, 1, nil, opts...)
			if err != nil {
				t.Fatal(err)
			}
			sj, ok := prob.JacStructure.(ode.SparseJacobian)
			if !ok {
				t.Fatalf("JacStructure %v, want a SparseJacobian", prob.JacStructure)
			}
			pat := sj.Pattern
			if !equalPatterns(pat, b.pattern(t)) {
				t.Fatal("the problem's pattern is not the hand-derived one")
			}
			vals := make([]float32, pat.NNZ())
			for range 2 { // the second call replays, with replay
				for q := range vals {
					vals[q] = float32(math.NaN())
				}
				prob.Jac(vals, u, nil, 0.5)
			}
			if err := prob.Err(); err != nil {
				t.Fatal(err)
			}
			if N == 8 {
				dense := make([]float32, n*n)
				odead.Func(b.f, n).Jac(dense, u, nil, 0.5)
				for i := range n {
					for j := range n {
						q := pat.Index(i, j)
						switch {
						case q < 0 && dense[i*n+j] != 0:
							t.Fatalf("dense J[%d,%d] = %g outside the pattern", i, j, dense[i*n+j])
						case q >= 0 && math.Abs(float64(vals[q]-dense[i*n+j])) > 1e-6*float64(b.alpha):
							t.Fatalf("replay %t: J[%d,%d] = %g, dense ad %g", replay, i, j, vals[q], dense[i*n+j])
						}
					}
				}
			}
			for i := range n {
				for q := pat.RowPtr[i]; q < pat.RowPtr[i+1]; q++ {
					j := pat.ColIdx[q]
					if want := b.jac(u, i, j); math.Abs(float64(vals[q])-want) > 1e-6*float64(b.alpha) {
						t.Fatalf("N=%d replay %t: J[%d,%d] = %g, want %g", N, replay, i, j, vals[q], want)
					}
				}
			}
		}
	}
}

// The sparse Jac allocates nothing once warm, recorded anew at each call
// or replayed.
func TestSparseJacAllocs(t *testing.T) {
	b := newBruss2D(16)
	u := b.u0()
	for _, replay := range []bool{false, true} {
		opts := []odead.Option{odead.SparseJac()}
		if replay {
			opts = append(opts, odead.Replayable())
		}
		prob, err := odead.Problem(b.f, u, 0, 1, nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]float32, prob.JacStructure.(ode.SparseJacobian).Pattern.NNZ())
		prob.Jac(vals, u, nil, 0.5)
		if a := testing.AllocsPerRun(20, func() { prob.Jac(vals, u, nil, 0.5) }); a != 0 {
			t.Errorf("replay %t: %v allocations per Jac, want 0", replay, a)
		}
	}
}

// heat1D is a 1-D reaction-diffusion with zero boundaries, written with
// Pad and Crop: du_i = u_{i−1} − 2u_i + u_{i+1} + u_i²·u_{i+1}.
func heat1D(u, _ ad.Var, _ float64) ad.Var {
	left := ad.Crop(ad.Pad(u, 1, 0), 0, 1)  // u_{i−1}
	right := ad.Crop(ad.Pad(u, 0, 1), 1, 0) // u_{i+1}
	lap := ad.Sub(ad.Add(left, right), ad.Scale(u, 2))
	return ad.Add(lap, ad.Mul(ad.Square(u), right))
}

// BandJac writes the band storage of the detected bandwidths, equal to
// the dense ad Jacobian, for Problem and for Func with JacPattern.
func TestBandJac(t *testing.T) {
	const n = 9
	u := make([]float32, n)
	for i := range u {
		u[i] = float32(i%4) - 1.3
	}
	prob, err := odead.Problem(heat1D, u, 0, 1, nil, odead.BandJac())
	if err != nil {
		t.Fatal(err)
	}
	bj, ok := prob.JacStructure.(ode.BandJacobian)
	if !ok || bj.Lower != 1 || bj.Upper != 1 {
		t.Fatalf("JacStructure %v, want band(lower 1, upper 1)", prob.JacStructure)
	}
	pat, err := odead.Sparsity(heat1D, u, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	fn := odead.Func(heat1D, n, odead.JacPattern(pat), odead.BandJac())
	dense := make([]float32, n*n)
	odead.Func(heat1D, n).Jac(dense, u, nil, 0)
	w := bj.Lower + bj.Upper + 1
	for _, p := range []ode.Problem[float32]{prob, fn} {
		band := make([]float32, n*w)
		for i := range band {
			band[i] = 99 // overwritten, with zeros outside the matrix
		}
		p.Jac(band, u, nil, 0)
		for i := range n {
			for d := -bj.Lower; d <= bj.Upper; d++ {
				j, got := i+d, band[i*w+d+bj.Lower]
				want := float32(0)
				if j >= 0 && j < n {
					want = dense[i*n+j]
				}
				if math.Abs(float64(got-want)) > 1e-6 {
					t.Errorf("band J[%d,%d] = %g, dense %g", i, j, got, want)
				}
			}
		}
	}
}

// Func with JacPattern has the sparse structure and Jacobian; Func with
// SparseJac and no pattern is a bug; a given pattern that lacks an entry,
// and an op without a sparsity rule, are errors from Problem that name
// them.
func TestSparseJacErrors(t *testing.T) {
	b := newBruss2D(4)
	u := b.u0()
	pat := b.pattern(t)
	prob := odead.Func(b.f, len(u), odead.JacPattern(pat))
	if sj, ok := prob.JacStructure.(ode.SparseJacobian); !ok || sj.Pattern != pat {
		t.Errorf("Func with JacPattern: JacStructure %v, want the given pattern", prob.JacStructure)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "JacPattern") {
				t.Errorf("Func with SparseJac and no pattern: recovered %v, want a panic naming JacPattern", r)
			}
		}()
		odead.Func(b.f, len(u), odead.SparseJac())
	}()

	// A pattern without the coupling of u to v at the first point.
	var e []linalg.Entry
	for i := range pat.Rows {
		for _, j := range pat.Row(i) {
			if i != 0 || j != 16 {
				e = append(e, linalg.Entry{Row: i, Col: j})
			}
		}
	}
	short, err := linalg.NewPattern(pat.Rows, pat.Cols, e)
	if err != nil {
		t.Fatal(err)
	}
	_, err = odead.Problem(b.f, u, 0, 1, nil, odead.JacPattern(short))
	if err == nil || !strings.Contains(err.Error(), "(row 0, column 16)") {
		t.Errorf("a pattern lacking (0, 16): got %v, want an error naming the entry", err)
	}

	pooled := func(u, _ ad.Var, _ float64) ad.Var {
		x := ad.Reshape(u, 1, 1, 2, 4)
		return ad.Add(u, ad.Reshape(ad.Pad(ad.MaxPool(x, ad.PoolGeom{Kernel: []int{2, 2}}), 0, 0, 0, 0, 0, 1, 0, 2), 8))
	}
	_, err = odead.Problem(pooled, make([]float32, 8), 0, 1, nil, odead.SparseJac())
	if !errors.Is(err, ad.ErrNoSparsityRule) || !strings.Contains(err.Error(), "MaxPool") {
		t.Errorf("MaxPool: got %v, want an error naming it and wrapping ad.ErrNoSparsityRule", err)
	}
	t.Log(err)
}

// Goroutines that share a problem get the same sparse Jacobian, each on
// its own tapes.
func TestSparseJacConcurrent(t *testing.T) {
	b := newBruss2D(8)
	u := b.u0()
	prob, err := odead.Problem(b.f, u, 0, 1, nil, odead.SparseJac())
	if err != nil {
		t.Fatal(err)
	}
	nnz := prob.JacStructure.(ode.SparseJacobian).Pattern.NNZ()
	want := make([]float32, nnz)
	prob.Jac(want, u, nil, 0)
	got := make([][]float32, 4)
	done := make(chan int)
	for g := range got {
		got[g] = make([]float32, nnz)
		go func() {
			for range 20 {
				prob.Jac(got[g], u, nil, 0)
			}
			done <- g
		}()
	}
	for range got {
		g := <-done
		if !slices.Equal(got[g], want) {
			t.Errorf("goroutine %d: a different Jacobian", g)
		}
	}
}
