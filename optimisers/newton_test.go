package optimisers

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"

	"github.com/flatkit/flatkit/ad"
)

// rosenbrock is the chained Rosenbrock function Σ 100(θᵢ₊₁ − θᵢ²)² +
// (1 − θᵢ)², SciPy's rosen, in float64, with its gradient and exact
// Hessian-vector product written by hand.
func rosenbrock(θ, grad []float32) (float64, error) {
	f := 0.0
	for i := range grad {
		grad[i] = 0
	}
	for i := 0; i+1 < len(θ); i++ {
		x, y := float64(θ[i]), float64(θ[i+1])
		a, b := y-x*x, 1-x
		f += 100*a*a + b*b
		if grad != nil {
			grad[i] += float32(-400*x*a - 2*b)
			grad[i+1] += float32(200 * a)
		}
	}
	return f, nil
}

func rosenbrockHv(θ, v, hv []float32) error {
	for i := range hv {
		hv[i] = 0
	}
	for i := 0; i+1 < len(θ); i++ {
		x, y := float64(θ[i]), float64(θ[i+1])
		hxx, hxy, hyy := 1200*x*x-400*y+2, -400*x, 200.0
		vx, vy := float64(v[i]), float64(v[i+1])
		hv[i] += float32(hxx*vx + hxy*vy)
		hv[i+1] += float32(hxy*vx + hyy*vy)
	}
	return nil
}

func rosenbrockStart(n int) []float32 {
	θ := make([]float32, n)
	for i := range θ {
		if i%2 == 0 && n == 2 {
			θ[i] = -1.2
		} else if n > 2 {
			θ[i] = 0
		} else {
			θ[i] = 1
		}
	}
	return θ
}

// TestNewtonCGRosenbrockFewerIterationsThanLBFGS runs the 2-D Rosenbrock
// from (−1.2, 1) and the chained 20-D one from 0, where the valley turns
// one coordinate at a time. The logged counts (2-D: 26 and 21 iterations
// against L-BFGS's 37; 20-D: 58 at CGTol 1e-3, 94 at the default, against
// 113) are held to at most three quarters of L-BFGS's.
func TestNewtonCGRosenbrockFewerIterationsThanLBFGS(t *testing.T) {
	for _, c := range []struct {
		n     int
		cgTol float64
	}{{2, 0}, {2, 1e-3}, {20, 1e-3}} {
		t.Run(fmt.Sprint(c.n, "/", c.cgTol), func(t *testing.T) {
			set := &optimize.Settings{GradientThreshold: 1e-5}
			θ := rosenbrockStart(c.n)
			res, err := Minimize(rosenbrock, θ, &NewtonCG{Hv: rosenbrockHv, CGTol: c.cgTol}, set)
			if err != nil {
				t.Fatalf("NewtonCG: %v", err)
			}
			for i, v := range θ {
				if math.Abs(float64(v)-1) > 1e-4 {
					t.Fatalf("NewtonCG: θ[%d] = %v, want 1 (status %v)", i, v, res.Status)
				}
			}
			θl := rosenbrockStart(c.n)
			resL, err := Minimize(rosenbrock, θl, nil, set)
			if err != nil {
				t.Fatalf("LBFGS: %v", err)
			}
			t.Logf("NewtonCG %d iterations, %d evaluations, %d Hv; LBFGS %d iterations, %d evaluations",
				res.MajorIterations, res.FuncEvaluations, res.HessEvaluations, resL.MajorIterations, resL.FuncEvaluations)
			if 4*res.MajorIterations > 3*resL.MajorIterations {
				t.Errorf("NewtonCG took %d iterations, LBFGS %d; want NewtonCG at most three quarters", res.MajorIterations, resL.MajorIterations)
			}
			if res.Status != optimize.GradientThreshold {
				t.Errorf("status %v, want GradientThreshold", res.Status)
			}
		})
	}
}

// doubleWell is x⁴/4 − x²/2 + y²/2: a saddle at 0, minima at (±1, 0).
func doubleWell(θ, grad []float32) (float64, error) {
	x, y := float64(θ[0]), float64(θ[1])
	if grad != nil {
		grad[0] = float32(x*x*x - x)
		grad[1] = float32(y)
	}
	return x*x*x*x/4 - x*x/2 + y*y/2, nil
}

func doubleWellHv(θ, v, hv []float32) error {
	x := float64(θ[0])
	hv[0] = float32((3*x*x - 1) * float64(v[0]))
	hv[1] = v[1]
	return nil
}

func TestNewtonCGNegativeCurvatureHitsBoundary(t *testing.T) {
	// At (0.1, 0) the curvature along −g is −0.97: CG must go to the
	// boundary of the region, not to the saddle's Newton point.
	n := &NewtonCG{Hv: doubleWellHv, Radius: 0.5, MaxCG: 2}
	r := newNCGRun(n, doubleWell, &optimize.Settings{}, 2)
	r.x[0] = 0.1
	if _, err := r.eval(r.x, r.g); err != nil {
		t.Fatal(err)
	}
	pred, boundary, err := r.steihaug()
	if err != nil {
		t.Fatal(err)
	}
	if !boundary || math.Abs(norm2(r.p)-0.5) > 1e-12 || r.p[0] <= 0 {
		t.Fatalf("step %v (‖p‖ = %v, boundary %v), want (0.5, 0) on the boundary", r.p, norm2(r.p), boundary)
	}
	// m(p) = gᵀp + ½pᵀHp at p = (0.5, 0).
	g0, h0 := float64(float32(0.001-0.1)), 3*0.01-1
	want := -(g0*0.5 + 0.5*h0*0.25)
	if math.Abs(pred-want) > 1e-6 {
		t.Errorf("predicted decrease %v, want %v", pred, want)
	}

	θ := []float32{0.1, 0}
	res, err := Minimize(doubleWell, θ, n, &optimize.Settings{GradientThreshold: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(θ[0])-1) > 1e-6 || θ[1] != 0 {
		t.Errorf("θ = %v, want (1, 0) (status %v)", θ, res.Status)
	}
}

func TestNewtonCGQuadraticOneStep(t *testing.T) {
	// f = ½θᵀAθ − bᵀθ with A SPD: one exact Newton step from any start.
	A := [][]float64{{4, 1, 0}, {1, 3, 1}, {0, 1, 2}}
	b := []float64{1, 2, 3}
	fg := func(θ, grad []float32) (float64, error) {
		f := 0.0
		for i := range A {
			ai := 0.0
			for j := range A {
				ai += A[i][j] * float64(θ[j])
			}
			f += 0.5*float64(θ[i])*ai - b[i]*float64(θ[i])
			if grad != nil {
				grad[i] = float32(ai - b[i])
			}
		}
		return f, nil
	}
	hv := func(θ, v, hv []float32) error {
		for i := range A {
			s := 0.0
			for j := range A {
				s += A[i][j] * float64(v[j])
			}
			hv[i] = float32(s)
		}
		return nil
	}
	θ := []float32{0, 0, 0}
	res, err := Minimize(fg, θ, &NewtonCG{Hv: hv, Radius: 10, CGTol: 1e-6}, &optimize.Settings{GradientThreshold: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	if res.MajorIterations != 1 || res.FuncEvaluations != 2 {
		t.Errorf("%d iterations, %d evaluations; want 1 and 2", res.MajorIterations, res.FuncEvaluations)
	}
	// The solution of Aθ = b: (1/18)·(1, 14, 20)·... checked by residual.
	for i := range A {
		s := -b[i]
		for j := range A {
			s += A[i][j] * float64(θ[j])
		}
		if math.Abs(s) > 1e-5 {
			t.Errorf("residual %d = %v at θ = %v", i, s, θ)
		}
	}
}

// logBarrier is f = Σ θᵢ − log θᵢ, undefined for θᵢ ≤ 0, minimum at 1;
// it counts its failed evaluations in fails.
func logBarrier(fails *int) Objective {
	return func(θ, grad []float32) (float64, error) {
		f := 0.0
		for i, v := range θ {
			if v <= 0 {
				*fails++
				return 0, fmt.Errorf("θ[%d] = %v outside the domain", i, v)
			}
			x := float64(v)
			f += x - math.Log(x)
			if grad != nil {
				grad[i] = float32(1 - 1/x)
			}
		}
		return f, nil
	}
}

func TestNewtonCGFailedEvaluationRecovered(t *testing.T) {
	// From 10 with radius 20 the first Newton step lands at θ < 0.
	fails := 0
	fg := logBarrier(&fails)
	hv := func(θ, v, hv []float32) error {
		for i := range θ {
			x := float64(θ[i])
			hv[i] = float32(float64(v[i]) / (x * x))
		}
		return nil
	}
	// Newton's line search backs off from the same failures.
	hess := func(θ []float32, h *mat.SymDense) error {
		for i := range θ {
			for j := i; j < len(θ); j++ {
				h.SetSym(i, j, 0)
			}
			x := float64(θ[i])
			h.SetSym(i, i, 1/(x*x))
		}
		return nil
	}
	for _, m := range []optimize.Method{&NewtonCG{Hv: hv, Radius: 20}, &Newton{Hessian: hess}} {
		fails = 0
		θ := []float32{10, 10}
		res, err := Minimize(fg, θ, m, &optimize.Settings{GradientThreshold: 1e-6})
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if fails == 0 {
			t.Fatalf("%T: no evaluation failed; the test does not test recovery", m)
		}
		for i, v := range θ {
			if math.Abs(float64(v)-1) > 1e-5 {
				t.Errorf("%T: θ[%d] = %v, want 1 (status %v)", m, i, v, res.Status)
			}
		}
	}

	// Every trial failing ends the run with the cause reachable.
	cause := errors.New("the solve blew up")
	calls := 0
	bad := func(θ, grad []float32) (float64, error) {
		calls++
		if calls > 1 {
			return 0, cause
		}
		return fg(θ, grad)
	}
	θ := []float32{10, 10}
	_, err := Minimize(bad, θ, &NewtonCG{Hv: hv}, nil)
	if !errors.Is(err, cause) {
		t.Fatalf("err = %v, want one wrapping %v", err, cause)
	}
	if θ[0] != 10 || θ[1] != 10 {
		t.Errorf("θ = %v, want the start kept", θ)
	}
}

func TestNewtonCGErrors(t *testing.T) {
	θ := []float32{1}
	for _, c := range []struct {
		m    *NewtonCG
		want string
	}{
		{&NewtonCG{}, "Hv is nil"},
		{&NewtonCG{Hv: rosenbrockHv, MaxCG: -1}, "MaxCG = -1"},
		{&NewtonCG{Hv: rosenbrockHv, Radius: -1}, "Radius = -1"},
		{&NewtonCG{Hv: rosenbrockHv, Eta: 0.3}, "Eta = 0.3"},
	} {
		if _, err := Minimize(rosenbrock, θ, c.m, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want one containing %q", err, c.want)
		}
	}
	hvErr := errors.New("no Hessian here")
	_, err := Minimize(rosenbrock, []float32{-1.2, 1}, &NewtonCG{Hv: func(θ, v, hv []float32) error { return hvErr }}, nil)
	if !errors.Is(err, hvErr) {
		t.Errorf("err = %v, want one wrapping %v", err, hvErr)
	}
}

// TestNewtonCGAllocatesPerRunOnly: the allocations of a run do not grow
// with its iterations, so an iteration allocates nothing.
func TestNewtonCGAllocatesPerRunOnly(t *testing.T) {
	m := &NewtonCG{Hv: rosenbrockHv, CGTol: 1e-3}
	allocs := func(iters int) float64 {
		set := &optimize.Settings{MajorIterations: iters, Converger: Float32Converge(), GradientThreshold: math.NaN()}
		return testing.AllocsPerRun(5, func() {
			θ := rosenbrockStart(20)
			if _, err := Minimize(rosenbrock, θ, m, set); err != nil {
				t.Fatal(err)
			}
		})
	}
	if a2, a20 := allocs(2), allocs(20); a20 != a2 {
		t.Errorf("a run of 20 iterations allocates %v times, one of 2 %v; want the same", a20, a2)
	}
}

// TestNewtonCGWithADHVP runs the house path: the loss written with ad ops
// through FromAD, and its Hessian-vector product from ad.HVP.
func TestNewtonCGWithADHVP(t *testing.T) {
	const n = 20
	// Rosenbrock less its constant n−1: Σ 100(y − x²)² + x² − 2x.
	f := func(p ad.Var) ad.Var {
		x, y := ad.Slice(p, 0, n-1), ad.Slice(p, 1, n)
		a := ad.Sub(y, ad.Square(x))
		return ad.Add(ad.Sum(ad.Scale(ad.Square(a), 100)), ad.Sub(ad.Sum(ad.Square(x)), ad.Scale(ad.Sum(x), 2)))
	}
	hv := func(θ, v, out []float32) error {
		r, err := ad.HVP(f, θ, v)
		copy(out, r)
		return err
	}
	// The product agrees with the hand-written one.
	θ := rosenbrockStart(n)
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i%3) - 1
	}
	want, got := make([]float32, n), make([]float32, n)
	_ = rosenbrockHv(θ, v, want)
	if err := hv(θ, v, got); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > 1e-4*math.Max(1, math.Abs(float64(want[i]))) {
			t.Fatalf("ad.HVP component %d = %v, hand-written %v", i, got[i], want[i])
		}
	}
	res, err := Minimize(FromAD(f), θ, &NewtonCG{Hv: hv, CGTol: 1e-3}, &optimize.Settings{GradientThreshold: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range θ {
		if math.Abs(float64(x)-1) > 1e-3 {
			t.Fatalf("θ[%d] = %v, want 1 (status %v after %d iterations)", i, x, res.Status, res.MajorIterations)
		}
	}
	t.Logf("%v after %d iterations, %d evaluations, %d Hv", res.Status, res.MajorIterations, res.FuncEvaluations, res.HessEvaluations)
}

// TestNewtonCGRejectedStepsReuseThePath: a rejected step is shortened
// along the CG path already computed, which does not depend on the
// radius, so it needs no product. The run must be the one that re-runs
// CG after each rejection, with fewer products.
func TestNewtonCGRejectedStepsReuseThePath(t *testing.T) {
	run := func(keep int) (*optimize.Result, []float32, int) {
		t.Helper()
		defer func(k int) { pathSegments = k }(pathSegments)
		pathSegments = keep
		var hvs int
		hv := func(θ, v, out []float32) error { hvs++; return rosenbrockHv(θ, v, out) }
		θ := rosenbrockStart(20)
		res, err := Minimize(rosenbrock, θ, &NewtonCG{Hv: hv, Radius: 100, MaxCG: 30}, &optimize.Settings{GradientThreshold: 1e-4})
		if err != nil {
			t.Fatal(err)
		}
		return res, θ, hvs
	}
	rerun, θRerun, hvRerun := run(0)
	reuse, θReuse, hvReuse := run(20)
	rejected := reuse.Stats.FuncEvaluations - reuse.Stats.MajorIterations - 1
	t.Logf("%d iterations, %d rejected steps; products %d re-running CG, %d reusing the path", reuse.Stats.MajorIterations, rejected, hvRerun, hvReuse)
	if rejected < 3 {
		t.Fatalf("%d rejected steps, want at least 3 for the test to mean something", rejected)
	}
	if reuse.Stats.MajorIterations != rerun.Stats.MajorIterations || reuse.Stats.FuncEvaluations != rerun.Stats.FuncEvaluations {
		t.Errorf("reusing the path: %d iterations, %d evaluations; re-running CG: %d, %d; want the same run",
			reuse.Stats.MajorIterations, reuse.Stats.FuncEvaluations, rerun.Stats.MajorIterations, rerun.Stats.FuncEvaluations)
	}
	for i := range θReuse {
		if math.Abs(float64(θReuse[i]-θRerun[i])) > 1e-5 {
			t.Fatalf("θ[%d] = %v reusing the path, %v re-running CG", i, θReuse[i], θRerun[i])
		}
	}
	if hvReuse >= hvRerun {
		t.Errorf("%d products reusing the path, %d re-running CG: want fewer", hvReuse, hvRerun)
	}
	if reuse.Stats.HessEvaluations != hvReuse {
		t.Errorf("Stats.HessEvaluations = %d, want the %d calls of Hv", reuse.Stats.HessEvaluations, hvReuse)
	}
}

// TestNewtonCGTruncateIsTheShorterCGStep: the step truncate cuts from the
// recorded path at a smaller radius is the step CG takes at that radius,
// and its predicted decrease is −(gᵀp + ½pᵀHp), with a product to check.
func TestNewtonCGTruncateIsTheShorterCGStep(t *testing.T) {
	const n = 20
	fresh := func(radius float64) *ncgRun {
		r := newNCGRun(&NewtonCG{Hv: rosenbrockHv, Radius: radius, MaxCG: 30, CGTol: 1e-6}, rosenbrock, &optimize.Settings{}, n)
		for i, v := range rosenbrockStart(n) {
			r.x[i] = float64(v) + 0.1*math.Sin(float64(i))
		}
		if _, err := r.eval(r.x, r.g); err != nil {
			t.Fatal(err)
		}
		return r
	}
	long := fresh(50)
	if _, _, err := long.steihaug(); err != nil {
		t.Fatal(err)
	}
	full := norm2(long.p)
	t.Logf("the CG path has %d segments, its end is %.4g from the point", long.nseg, full)
	if long.nseg < 3 {
		t.Fatalf("the CG path has %d segments, want at least 3", long.nseg)
	}
	for _, frac := range []float64{0.9, 0.5, 0.25, 0.05, 0.001} {
		radius := frac * full
		long.radius = radius
		pred, boundary, ok := long.truncate()
		if !ok || !boundary {
			t.Fatalf("radius %.4g: truncate ok %v boundary %v, want both", radius, ok, boundary)
		}
		short := fresh(radius)
		predCG, _, err := short.steihaug()
		if err != nil {
			t.Fatal(err)
		}
		for i := range long.p {
			if math.Abs(long.p[i]-short.p[i]) > 1e-9*full {
				t.Fatalf("radius %.4g: p[%d] = %v from the path, %v from CG", radius, i, long.p[i], short.p[i])
			}
		}
		if math.Abs(norm2(long.p)-radius) > 1e-9*radius {
			t.Errorf("radius %.4g: ‖p‖ = %v", radius, norm2(long.p))
		}
		// −(gᵀp + ½pᵀHp) by a product at the point.
		v32, h32 := make([]float32, n), make([]float32, n)
		x32 := make([]float32, n)
		for i := range long.p {
			v32[i], x32[i] = float32(long.p[i]), float32(long.x[i])
		}
		if err := rosenbrockHv(x32, v32, h32); err != nil {
			t.Fatal(err)
		}
		want := 0.0
		for i := range long.p {
			want -= long.g[i]*long.p[i] + 0.5*long.p[i]*float64(h32[i])
		}
		if math.Abs(pred-want) > 1e-5*math.Abs(want) || math.Abs(pred-predCG) > 1e-9*math.Abs(want) {
			t.Errorf("radius %.4g: predicted decrease %v, CG's %v, by a product %v", radius, pred, predCG, want)
		}
	}
}
