package linalg_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/internal/race"
	"github.com/flatkit/flatkit/ode/linalg"
)

// gmDense is a dense row-major test operator with its LU from gonum.
type gmDense struct {
	n  int
	a  []float64
	lu mat.LU
}

func newGMDense(n int, a []float64) *gmDense {
	d := &gmDense{n: n, a: a}
	d.lu.Factorize(mat.NewDense(n, n, a))
	return d
}

// apply writes dst = A·v.
func (d *gmDense) apply(dst, v []float64) {
	for i := range d.n {
		var s float64
		for j, aij := range d.a[i*d.n : (i+1)*d.n] {
			s += aij * v[j]
		}
		dst[i] = s
	}
}

// solve writes dst = A⁻¹·r.
func (d *gmDense) solve(dst, r []float64) {
	x := mat.NewVecDense(d.n, dst)
	if err := d.lu.SolveVecTo(x, false, mat.NewVecDense(d.n, append([]float64(nil), r...))); err != nil {
		panic(err)
	}
}

// gmWRMS is the weighted RMS norm sqrt(Σ (wᵢ·rᵢ)² / n), w nil meaning ones.
func gmWRMS(r, w []float64) float64 {
	var s float64
	for i, v := range r {
		if w != nil {
			v *= w[i]
		}
		s += v * v
	}
	return math.Sqrt(s / float64(len(r)))
}

// gmResidual is P⁻¹·(b − A·x), prec nil meaning P = I.
func gmResidual(d *gmDense, prec func(dst, r []float64), b, x []float64) []float64 {
	r := make([]float64, len(b))
	d.apply(r, x)
	for i := range r {
		r[i] = b[i] - r[i]
	}
	if prec != nil {
		z := make([]float64, len(r))
		prec(z, r)
		return z
	}
	return r
}

// gmNearIdentity draws I + E with ‖E‖₂ ≤ size: restarted GMRES converges
// on it for any restart when the weights vary by less than (1−size)/size.
func gmNearIdentity(t *rapid.T, n int, size float64) []float64 {
	a := make([]float64, n*n)
	for i := range a {
		a[i] = size / float64(n) * rapid.Float64Range(-1, 1).Draw(t, "e")
	}
	for i := range n {
		a[i*n+i]++
	}
	return a
}

// TestGMRESMatchesDenseSolve solves random well-conditioned systems, with
// and without restarts, weights and a preconditioner, and checks the
// returned residual against the true weighted residual and x against a
// dense LU solve.
func TestGMRESMatchesDenseSolve(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 40).Draw(t, "n")
		restart := rapid.IntRange(1, n+2).Draw(t, "restart")
		a := gmNearIdentity(t, n, 0.3)
		d := newGMDense(n, a)
		b := make([]float64, n)
		for i := range b {
			b[i] = rapid.Float64Range(-1, 1).Draw(t, "b")
		}
		var w []float64
		if rapid.Bool().Draw(t, "weighted") {
			w = make([]float64, n)
			for i := range w {
				w[i] = 1e3 * rapid.Float64Range(1, 2).Draw(t, "w")
			}
		}
		// A diagonal preconditioner: the inverse of A's diagonal.
		var prec func(dst, r []float64)
		if rapid.Bool().Draw(t, "prec") {
			prec = func(dst, r []float64) {
				for i := range dst {
					dst[i] = r[i] / a[i*n+i]
				}
			}
		}
		tol := 1e-9
		g := linalg.NewGMRES[float64](n, restart)
		x := make([]float64, n)
		iters, res, ok := g.Solve(d.apply, prec, b, x, w, tol, 2000/restart)
		if !ok {
			t.Fatalf("not converged after %d iterations, residual %g, want ≤ %g", iters, res, tol)
		}
		if res > tol {
			t.Fatalf("converged with residual %g, want ≤ %g", res, tol)
		}
		if iters > n && restart >= n {
			t.Fatalf("%d iterations without restarts, want ≤ n = %d", iters, n)
		}
		if got := gmWRMS(gmResidual(d, prec, b, x), w); got > 1.01*tol+1e-13 {
			t.Fatalf("true weighted residual %g, want ≤ %g (GMRES estimated %g)", got, tol, res)
		}
		want := make([]float64, n)
		d.solve(want, b)
		// ‖A⁻¹‖ ≤ 1/(1−0.3) unweighted; the weights vary by 2 and the
		// diagonal preconditioner by at most 1.3/0.7.
		bound := tol * 2 * 2 * 2 / 0.7 * math.Sqrt(float64(n))
		scale := 1.0
		if w != nil {
			scale = 1e3
		}
		for i := range x {
			if math.Abs(x[i]-want[i])*scale > bound {
				t.Fatalf("x[%d] = %g, dense solve %g, want within %g", i, x[i], want[i], bound/scale)
			}
		}
	})
}

// TestGMRESExactPreconditioner converges in one iteration when P = A.
func TestGMRESExactPreconditioner(t *testing.T) {
	n := 30
	rng := rand.New(rand.NewPCG(1, 2))
	a := make([]float64, n*n)
	for i := range a {
		a[i] = rng.Float64()*2 - 1 // not near the identity
	}
	d := newGMDense(n, a)
	b := make([]float64, n)
	w := make([]float64, n)
	for i := range b {
		b[i] = rng.Float64()*2 - 1
		w[i] = math.Pow(10, 4*rng.Float64()-2)
	}
	g := linalg.NewGMRES[float64](n, 5)
	x := make([]float64, n)
	iters, res, ok := g.Solve(d.apply, d.solve, b, x, w, 1e-8, 0)
	if !ok || iters != 1 {
		t.Fatalf("iters %d, residual %g, converged %v; want 1 iteration, converged", iters, res, ok)
	}
	want := make([]float64, n)
	d.solve(want, b)
	for i := range x {
		if math.Abs(x[i]-want[i]) > 1e-10*(1+math.Abs(want[i])) {
			t.Fatalf("x[%d] = %g, want %g", i, x[i], want[i])
		}
	}
}

// gmLaplace1D is the tridiagonal (−1, 2+s, −1), ill-conditioned for
// small s: a hard system for unpreconditioned GMRES.
func gmLaplace1D(n int, s float64) *gmDense {
	a := make([]float64, n*n)
	for i := range n {
		a[i*n+i] = 2 + s
		if i > 0 {
			a[i*n+i-1] = -1
		}
		if i+1 < n {
			a[i*n+i+1] = -1
		}
	}
	return newGMDense(n, a)
}

// TestGMRESRestarts needs several restart cycles and still meets the
// tolerance, with iterations counted over all cycles.
func TestGMRESRestarts(t *testing.T) {
	n := 60
	d := gmLaplace1D(n, 0.5)
	b := make([]float64, n)
	for i := range b {
		b[i] = math.Sin(float64(i))
	}
	const restart, tol = 4, 1e-10
	g := linalg.NewGMRES[float64](n, restart)
	x := make([]float64, n)
	iters, res, ok := g.Solve(d.apply, nil, b, x, nil, tol, 100)
	if !ok || res > tol {
		t.Fatalf("iters %d, residual %g, converged %v; want converged to %g", iters, res, ok, tol)
	}
	if iters <= 2*restart {
		t.Fatalf("%d iterations, want more than two cycles of %d for this test to test restarts", iters, restart)
	}
	if got := gmWRMS(gmResidual(d, nil, b, x), nil); got > 1.01*tol {
		t.Fatalf("true residual %g, want ≤ %g", got, tol)
	}
	want := make([]float64, n)
	d.solve(want, b)
	for i := range x {
		if math.Abs(x[i]-want[i]) > 1e-8 {
			t.Fatalf("x[%d] = %g, want %g", i, x[i], want[i])
		}
	}
}

// TestGMRESNotConverged reports a tiny iteration budget on a hard system:
// converged false, the residual it reached, and x with that residual.
func TestGMRESNotConverged(t *testing.T) {
	n := 200
	d := gmLaplace1D(n, 1e-4)
	b := make([]float64, n)
	w := make([]float64, n)
	for i := range b {
		b[i] = 1
		w[i] = 1 + float64(i%3)
	}
	g := linalg.NewGMRES[float64](n, 3)
	x := make([]float64, n)
	iters, res, ok := g.Solve(d.apply, nil, b, x, w, 1e-10, 2)
	if ok {
		t.Fatalf("converged in %d iterations, residual %g; want not converged", iters, res)
	}
	if iters != 9 {
		t.Fatalf("%d iterations, want 3·(2+1) = 9", iters)
	}
	res0 := g.InitialResidual()
	if want := gmWRMS(b, w); math.Abs(res0-want) > 1e-14*want {
		t.Fatalf("InitialResidual %g, want ‖b‖ = %g", res0, want)
	}
	if !(res < res0) {
		t.Fatalf("residual %g, want reduced below the initial %g", res, res0)
	}
	if got := gmWRMS(gmResidual(d, nil, b, x), w); math.Abs(got-res) > 1e-8*res0 {
		t.Fatalf("returned residual %g, true residual of x %g", res, got)
	}

	// A cyclic shift: GMRES cannot reduce the residual of e₀ before n
	// iterations, and leaves x at zero.
	shift := make([]float64, n*n)
	for i := range n {
		shift[i*n+(i+n-1)%n] = 1
	}
	ds := newGMDense(n, shift)
	clear(b)
	b[0] = 1
	iters, res, ok = g.Solve(ds.apply, nil, b, x, nil, 1e-6, 3)
	if ok || iters != 12 {
		t.Fatalf("iters %d, converged %v, want 12 and not converged", iters, ok)
	}
	if want := 1 / math.Sqrt(float64(n)); math.Abs(res-want) > 1e-12 {
		t.Fatalf("residual %g, want the initial %g", res, want)
	}
	for i, v := range x {
		if v != 0 {
			t.Fatalf("x[%d] = %g, want 0 when the residual is not reduced", i, v)
		}
	}
}

// TestGMRESWeightedNorm pins the convergence test to the weighted RMS norm
// sqrt(Σ (wᵢ·(P⁻¹r)ᵢ)² / n): the right-hand side alone decides whether a
// solve needs an iteration, and the returned residual is that norm of the
// true residual.
func TestGMRESWeightedNorm(t *testing.T) {
	n := 50
	d := gmLaplace1D(n, 1)
	b := make([]float64, n)
	w := make([]float64, n)
	for i := range b {
		b[i] = 1e-3 * math.Cos(float64(3*i))
		w[i] = math.Pow(10, float64(i%5)-2) // 1e-2 … 1e2
	}
	prec := func(dst, r []float64) { // the inverse of the diagonal, 3
		for i := range dst {
			dst[i] = r[i] / 3
		}
	}
	norm := gmWRMS(b, w) / 3
	g := linalg.NewGMRES[float64](n, 10)
	x := make([]float64, n)
	for _, tc := range []struct {
		tol   float64
		iters bool
	}{{1.001 * norm, false}, {0.999 * norm, true}} {
		iters, res, ok := g.Solve(d.apply, prec, b, x, w, tc.tol, 5)
		if !ok {
			t.Fatalf("tol %g: not converged, residual %g", tc.tol, res)
		}
		if (iters > 0) != tc.iters {
			t.Fatalf("tol %g (the weighted norm of P⁻¹b is %g): %d iterations", tc.tol, norm, iters)
		}
		if got := g.InitialResidual(); math.Abs(got-norm) > 1e-14*norm {
			t.Fatalf("InitialResidual %g, want %g", got, norm)
		}
	}
	// Unconverged after 10 iterations: res is the weighted norm of the
	// preconditioned true residual.
	_, res, ok := g.Solve(d.apply, prec, b, x, w, 1e-14, 0)
	if ok {
		t.Fatal("converged, want not")
	}
	rw := gmResidual(d, prec, b, x)
	if got := gmWRMS(rw, w); math.Abs(got-res) > 1e-9*got {
		t.Fatalf("returned residual %g, the weighted norm of the true one %g", res, got)
	}
	// The weights change the norm minimised, not the space searched:
	// x ∈ K(P⁻¹A, P⁻¹b) either way. So the weighted solve has the smaller
	// weighted residual and the unweighted one the smaller plain residual.
	g.Solve(d.apply, prec, b, x, nil, 1e-14, 0)
	r1 := gmResidual(d, prec, b, x)
	if a, b := gmWRMS(rw, w), gmWRMS(r1, w); !(a < 0.9*b) {
		t.Fatalf("weighted residual %g of the weighted solve, %g of the unweighted one, want the first smaller", a, b)
	}
	if a, b := gmWRMS(r1, nil), gmWRMS(rw, nil); !(a < 0.9*b) {
		t.Fatalf("plain residual %g of the unweighted solve, %g of the weighted one, want the first smaller", a, b)
	}
}

// TestGMRESFloat32 solves in float32 to a float32 tolerance.
func TestGMRESFloat32(t *testing.T) {
	n := 40
	d := gmLaplace1D(n, 0.5)
	a32 := make([]float32, n*n)
	for i, v := range d.a {
		a32[i] = float32(v)
	}
	apply := func(dst, v []float32) {
		for i := range n {
			var s float32
			for j, aij := range a32[i*n : (i+1)*n] {
				s += aij * v[j]
			}
			dst[i] = s
		}
	}
	b := make([]float32, n)
	b64 := make([]float64, n)
	for i := range b {
		b64[i] = math.Sin(float64(i))
		b[i] = float32(b64[i])
	}
	g := linalg.NewGMRES[float32](n, 10)
	x := make([]float32, n)
	iters, res, ok := g.Solve(apply, nil, b, x, nil, 1e-5, 20)
	if !ok {
		t.Fatalf("not converged in %d iterations, residual %g", iters, res)
	}
	want := make([]float64, n)
	d.solve(want, b64)
	for i := range x {
		if math.Abs(float64(x[i])-want[i]) > 1e-4 {
			t.Fatalf("x[%d] = %g, want %g", i, x[i], want[i])
		}
	}
}

// TestGMRESBreakdown ends early, converged, when the Krylov space holds
// the solution: A = 2I gives it after one iteration even with tol 0.
func TestGMRESBreakdown(t *testing.T) {
	n := 10
	apply := func(dst, v []float64) {
		for i := range dst {
			dst[i] = 2 * v[i]
		}
	}
	b := make([]float64, n)
	for i := range b {
		b[i] = float64(i + 1)
	}
	g := linalg.NewGMRES[float64](n, 5)
	x := make([]float64, n)
	iters, res, ok := g.Solve(apply, nil, b, x, nil, 0, 0)
	if !ok || iters != 1 || res != 0 {
		t.Fatalf("iters %d, residual %g, converged %v; want 1, 0, true", iters, res, ok)
	}
	for i := range x {
		if x[i] != b[i]/2 {
			t.Fatalf("x[%d] = %g, want %g", i, x[i], b[i]/2)
		}
	}
}

// TestGMRESNaN stops on a NaN from the operator and reports it.
func TestGMRESNaN(t *testing.T) {
	n := 4
	apply := func(dst, v []float64) {
		for i := range dst {
			dst[i] = v[i] * math.NaN()
		}
	}
	b := []float64{1, 2, 3, 4}
	g := linalg.NewGMRES[float64](n, 3)
	x := make([]float64, n)
	iters, res, ok := g.Solve(apply, nil, b, x, nil, 1e-8, 5)
	if ok || !math.IsNaN(res) || iters != 1 {
		t.Fatalf("iters %d, residual %g, converged %v; want 1, NaN, false", iters, res, ok)
	}
	for i, v := range x {
		if v != 0 {
			t.Fatalf("x[%d] = %g, want 0", i, v)
		}
	}
}

// TestGMRESAllocs pins Solve at zero allocations, with the operator and
// the preconditioner passed as method values made at each call.
func TestGMRESAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("allocation pins skip under -race")
	}
	op := gmNewLaplace2D(8, 8, 0.1)
	pc := gmNewBlockPrec(op, 2)
	n := op.len()
	b := make([]float64, n)
	w := make([]float64, n)
	for i := range b {
		b[i] = math.Sin(float64(i))
		w[i] = 1 + float64(i%4)
	}
	g := linalg.NewGMRES[float64](n, 5)
	x := make([]float64, n)
	allocs := testing.AllocsPerRun(20, func() {
		g.Solve(op.apply, pc.apply, b, x, w, 1e-8, 3)
		g.Solve(op.apply, nil, b, x, nil, 1e-8, 3)
	})
	if allocs != 0 {
		t.Fatalf("%g allocations per Solve, want 0", allocs)
	}
}

// TestGMRESPanicsOnLength names the lengths that came.
func TestGMRESPanicsOnLength(t *testing.T) {
	g := linalg.NewGMRES[float64](3, 2)
	defer func() {
		msg, _ := recover().(string)
		if msg == "" || !strings.Contains(msg, "len(b) = 2") || !strings.Contains(msg, "want 3") {
			t.Fatalf("panic %q, want one naming len(b) = 2 and want 3", msg)
		}
	}()
	g.Solve(func(dst, v []float64) {}, nil, make([]float64, 2), make([]float64, 3), nil, 1, 0)
}
