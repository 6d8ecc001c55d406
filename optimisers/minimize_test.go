package optimisers

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/optimize"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// minRosenbrockStart is the standard start (-1.2, 1, -1.2, 1, …) in n dimensions.
func minRosenbrockStart(n int) []float32 {
	θ := make([]float32, n)
	for i := range θ {
		θ[i] = 1
		if i%2 == 0 {
			θ[i] = -1.2
		}
	}
	return θ
}

// minRosenbrock64 is the n-D Rosenbrock function Σ 100(x[i+1] − x[i]²)² +
// (1 − x[i])², evaluated in float64 at the float32 point.
func minRosenbrock64(θ, grad []float32) float64 {
	n := len(θ)
	f := 0.0
	for i := 0; i < n-1; i++ {
		x, y := float64(θ[i]), float64(θ[i+1])
		f += 100*(y-x*x)*(y-x*x) + (1-x)*(1-x)
	}
	if grad == nil {
		return f
	}
	for i := range n {
		x := float64(θ[i])
		g := 0.0
		if i < n-1 {
			y := float64(θ[i+1])
			g += -400*x*(y-x*x) - 2*(1-x)
		}
		if i > 0 {
			w := float64(θ[i-1])
			g += 200 * (x - w*w)
		}
		grad[i] = float32(g)
	}
	return f
}

// minPlain makes an Objective of a loss that cannot fail.
func minPlain(f func(θ, grad []float32) float64) Objective {
	return func(θ, grad []float32) (float64, error) { return f(θ, grad), nil }
}

// minRosenbrockAD is the same function written with ad ops (float32 throughout).
func minRosenbrockAD(p ad.Var) ad.Var {
	n := p.Size()
	x := ad.View(p, 0, n-1)
	y := ad.View(p, 1, n-1)
	one := p.Tape().Scalar(1)
	return ad.Sum(ad.Add(
		ad.Scale(ad.Square(ad.Sub(y, ad.Square(x))), 100),
		ad.Square(ad.Sub(one, x))))
}

// minMaxErr returns max |θ[i] − want[i]|.
func minMaxErr(θ []float32, want []float64) float64 {
	e := 0.0
	for i, v := range θ {
		e = math.Max(e, math.Abs(float64(v)-want[i]))
	}
	return e
}

func minOnes(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	return w
}

func TestMinimizeRosenbrockLBFGS(t *testing.T) {
	fgAD := FromAD(minRosenbrockAD)
	for _, c := range []struct {
		name string
		fg   Objective
	}{
		{"plain Go, float64 loss", minPlain(minRosenbrock64)},
		{"ad via FromAD, float32", fgAD},
	} {
		t.Run(c.name, func(t *testing.T) {
			θ := minRosenbrockStart(10)
			// gonum's default gradient tolerance (1e-12) is beyond float32;
			// 1e-4 is what the float32 gradient resolves near the optimum.
			res, err := Minimize(c.fg, θ, &optimize.LBFGS{}, &optimize.Settings{GradientThreshold: 1e-4})
			if err != nil {
				t.Fatalf("Minimize: %v", err)
			}
			if res.Status != optimize.GradientThreshold {
				t.Errorf("status %v; want GradientThreshold", res.Status)
			}
			e := minMaxErr(θ, minOnes(10))
			t.Logf("max |θ[i] − 1| = %.3g after %d iterations, %d evaluations, f = %.3g", e, res.MajorIterations, res.FuncEvaluations, res.F)
			if e > 1e-4 {
				t.Errorf("θ = %v; want every coordinate within 1e-4 of 1 (max error %g)", θ, e)
			}
			for i, v := range res.X {
				if float32(v) != θ[i] {
					t.Fatalf("θ[%d] = %v, res.X[%d] = %v: θ must hold the result", i, θ[i], i, v)
				}
			}
		})
	}
}

// minQuadratic is ½(x − c)ᵀA(x − c) with A symmetric positive definite.
type minQuadratic struct {
	a     [][]float64
	c     []float64
	calls int
}

func newMinQuadratic(n int) *minQuadratic {
	q := &minQuadratic{a: make([][]float64, n), c: make([]float64, n)}
	m := make([][]float64, n) // A = MᵀM + I, M fixed and dense
	for i := range m {
		m[i] = make([]float64, n)
		for j := range m[i] {
			m[i][j] = math.Sin(float64(3*i+7*j+1)) * 1.5
		}
	}
	for i := range n {
		q.a[i] = make([]float64, n)
		for j := range n {
			s := 0.0
			for k := range n {
				s += m[k][i] * m[k][j]
			}
			if i == j {
				s++
			}
			q.a[i][j] = s
		}
		q.c[i] = float64(i)*0.5 - 1
	}
	return q
}

func (q *minQuadratic) fg(θ, grad []float32) float64 {
	q.calls++
	f := 0.0
	for i := range θ {
		g := 0.0
		for j := range θ {
			g += q.a[i][j] * (float64(θ[j]) - q.c[j])
		}
		f += 0.5 * (float64(θ[i]) - q.c[i]) * g
		if grad != nil {
			grad[i] = float32(g)
		}
	}
	return f
}

func TestMinimizeQuadratic(t *testing.T) {
	for _, c := range []struct {
		name   string
		method optimize.Method
	}{
		{"nil (LBFGS)", nil},
		{"LBFGS", &optimize.LBFGS{}},
		{"BFGS", &optimize.BFGS{}},
		{"CG", &optimize.CG{}},
		{"GradientDescent", &optimize.GradientDescent{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := newMinQuadratic(6)
			θ := make([]float32, 6)
			res, err := Minimize(minPlain(q.fg), θ, c.method, &optimize.Settings{GradientThreshold: 1e-5})
			if err != nil {
				t.Fatalf("Minimize: %v", err)
			}
			if e := minMaxErr(θ, q.c); e > 1e-4 {
				t.Errorf("θ = %v; want %v (max error %g)", θ, q.c, e)
			}
			// The loss and the gradient at a point come from one call of fg.
			if q.calls != res.FuncEvaluations {
				t.Errorf("fg called %d times for %d loss and %d gradient evaluations; want one call per point",
					q.calls, res.FuncEvaluations, res.GradEvaluations)
			}
		})
	}
}

func TestMinimizeNelderMead(t *testing.T) {
	// A rotated, shifted 2-D bowl with a quartic term; minimum at (1, −2).
	var nonNilGrad int
	fg := func(θ, grad []float32) float64 {
		if grad != nil {
			nonNilGrad++
		}
		x, y := float64(θ[0])-1, float64(θ[1])+2
		return x*x + 4*y*y + x*y + x*x*x*x
	}
	θ := []float32{-3, 3}
	res, err := Minimize(minPlain(fg), θ, &optimize.NelderMead{}, nil)
	if err != nil {
		t.Fatalf("Minimize: %v", err)
	}
	if nonNilGrad != 0 {
		t.Errorf("NelderMead: fg got a non-nil grad %d times; want always nil", nonNilGrad)
	}
	if e := minMaxErr(θ, []float64{1, -2}); e > 1e-4 {
		t.Errorf("θ = %v; want (1, −2) (max error %g)", θ, e)
	}
	t.Logf("status %v, %d evaluations, θ = %v", res.Status, res.FuncEvaluations, θ)

	// FromAD's objective takes a nil grad too, and then skips the backward sweep.
	fgAD := FromAD(func(p ad.Var) ad.Var {
		d := ad.Sub(p, p.Tape().Const(flat.Tensor{Shape: []int{2}, Data: []float32{1, -2}}))
		return ad.Sum(ad.Mul(ad.Square(d), p.Tape().Const(flat.Tensor{Shape: []int{2}, Data: []float32{1, 4}})))
	})
	θ = []float32{-3, 3}
	if _, err := Minimize(fgAD, θ, &optimize.NelderMead{}, nil); err != nil {
		t.Fatalf("Minimize(FromAD): %v", err)
	}
	if e := minMaxErr(θ, []float64{1, -2}); e > 1e-4 {
		t.Errorf("FromAD: θ = %v; want (1, −2) (max error %g)", θ, e)
	}
}

func TestMinimizeLeastSquares(t *testing.T) {
	// Noise-free exponential decay y = a·exp(−k·t) + c, fitted with ad ops.
	const a, k, c = minExpA, minExpK, minExpC
	fg := FromAD(minExpFit())
	θ := []float32{1, 1, 0}
	// A float32 loss near its minimum (f ≈ 1e-11) has gradient rounding
	// noise near 1e-6: a threshold there is at the mercy of summation order
	// and ends in a failed line search, so ask for 1e-4 (θ is then right
	// to about 4e-6).
	res, err := Minimize(fg, θ, nil, &optimize.Settings{GradientThreshold: 1e-4})
	if err != nil {
		t.Fatalf("Minimize: %v", err)
	}
	e := minMaxErr(θ, []float64{a, k, c})
	t.Logf("θ = %v, max error %.3g, f = %.3g, %d iterations", θ, e, res.F, res.MajorIterations)
	if e > 1e-4 {
		t.Errorf("θ = %v; want (a, k, c) = (%v, %v, %v) within 1e-4 (max error %g)", θ, a, k, c, e)
	}
}

func TestMinimizeErrors(t *testing.T) {
	quad := minPlain(func(θ, grad []float32) float64 { return newMinQuadratic(len(θ)).fg(θ, grad) })
	for _, c := range []struct {
		name     string
		fg       Objective
		θ        []float32
		method   optimize.Method
		settings *optimize.Settings
		want     string
	}{
		{"nil fg", nil, []float32{1}, nil, nil, "fg is nil"},
		{"empty θ", quad, []float32{}, nil, nil, "θ is empty, want at least one parameter"},
		{"NaN in θ", quad, []float32{1, float32(math.NaN())}, nil, nil, "θ[1] is NaN"},
		{"Inf in θ", quad, []float32{float32(math.Inf(-1))}, nil, nil, "θ[0] is -Inf"},
		{"concurrent", quad, []float32{1}, &optimize.GuessAndCheck{}, &optimize.Settings{Concurrent: 4}, "Concurrent is 4"},
		{"needs a Hessian", quad, []float32{1}, &optimize.Newton{}, nil, "*optimize.Newton cannot run"},
	} {
		t.Run(c.name, func(t *testing.T) {
			θ0 := slices.Clone(c.θ)
			res, err := Minimize(c.fg, c.θ, c.method, c.settings)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v; want one containing %q", err, c.want)
			}
			if res != nil {
				t.Errorf("result %+v; want nil", res)
			}
			if !slices.EqualFunc(c.θ, θ0, func(a, b float32) bool { return a == b || a != a && b != b }) {
				t.Errorf("θ changed to %v", c.θ)
			}
		})
	}

	t.Run("NaN at the start", func(t *testing.T) {
		θ := []float32{1, 2}
		_, err := Minimize(minPlain(func(θ, grad []float32) float64 { return math.NaN() }), θ, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "the objective failed at the start (evaluation 1): the loss is NaN") {
			t.Errorf("error %v; want the NaN named", err)
		}
		if !slices.Equal(θ, []float32{1, 2}) {
			t.Errorf("θ = %v; want unchanged", θ)
		}
	})

	t.Run("one NaN later is an infeasible point", func(t *testing.T) {
		θ := minRosenbrockStart(4)
		calls := 0
		fg := func(θ, grad []float32) float64 {
			if calls++; calls == 30 {
				return math.NaN()
			}
			return minRosenbrock64(θ, grad)
		}
		res, err := Minimize(minPlain(fg), θ, nil, nil)
		if err != nil {
			t.Fatalf("error %v; want the run to step back from the NaN and converge", err)
		}
		if e := minMaxErr(θ, minOnes(4)); e > 1e-2 {
			t.Errorf("θ = %v (status %v); want the minimum at ones", θ, res.Status)
		}
	})

	t.Run("non-finite gradient", func(t *testing.T) {
		θ := []float32{1, 2, 3}
		fg := func(θ, grad []float32) float64 {
			for i := range grad {
				grad[i] = θ[i]
			}
			grad[2] = float32(math.Inf(1))
			return 1
		}
		_, err := Minimize(minPlain(fg), θ, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "at the start (evaluation 1): the gradient is +Inf at index 2") {
			t.Errorf("error %v; want the Inf named with its index", err)
		}
	})

	t.Run("iteration limit keeps progress", func(t *testing.T) {
		θ := minRosenbrockStart(10)
		f0 := minRosenbrock64(θ, nil)
		res, err := Minimize(minPlain(minRosenbrock64), θ, nil, &optimize.Settings{MajorIterations: 5})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != optimize.IterationLimit {
			t.Errorf("status %v; want IterationLimit", res.Status)
		}
		if f := minRosenbrock64(θ, nil); !(f < f0) || float32(res.X[0]) != θ[0] {
			t.Errorf("f(θ) = %v (start %v); want θ at the non-converged result", f, f0)
		}
	})
}

// minFailure is an error type an objective returns, for errors.As.
type minFailure struct{ eval int }

func (e *minFailure) Error() string { return fmt.Sprintf("solver diverged at evaluation %d", e.eval) }

// An objective's error at the start stops the run at once; errors that go
// on stop it after MaxConsecutiveFailures evaluations. Either way the
// error comes back as Minimize's, its causes reachable with errors.Is and
// errors.As, and fg is not called again.
func TestMinimizeObjectiveError(t *testing.T) {
	errStart := errors.New("no data at the start")
	t.Run("at the start", func(t *testing.T) {
		θ := []float32{1, 2}
		calls := 0
		fg := func(θ, grad []float32) (float64, error) { calls++; return 0, errStart }
		res, err := Minimize(fg, θ, nil, nil)
		if !errors.Is(err, errStart) {
			t.Fatalf("error %v; want one wrapping %v", err, errStart)
		}
		if want := "optimisers: Minimize: the objective failed at the start (evaluation 1): no data at the start"; err.Error() != want {
			t.Errorf("error %q; want %q", err, want)
		}
		if calls != 1 {
			t.Errorf("fg called %d times; want 1 (the run stops at the first error)", calls)
		}
		if res == nil || res.Status != optimize.Failure {
			t.Errorf("result %+v; want status Failure", res)
		}
		if !slices.Equal(θ, []float32{1, 2}) {
			t.Errorf("θ = %v; want unchanged", θ)
		}
	})
	for _, m := range []struct {
		name   string
		method optimize.Method
	}{{"LBFGS", nil}, {"NelderMead", &optimize.NelderMead{}}} {
		t.Run("later, "+m.name, func(t *testing.T) {
			θ := minRosenbrockStart(4)
			f0 := minRosenbrock64(θ, nil)
			calls := 0
			fg := func(θ, grad []float32) (float64, error) {
				if calls++; calls >= 30 {
					return 0, &minFailure{calls}
				}
				return minRosenbrock64(θ, grad), nil
			}
			res, err := Minimize(fg, θ, m.method, nil)
			var mf *minFailure
			if !errors.As(err, &mf) || mf.eval != 30 {
				t.Fatalf("error %v; want one wrapping *minFailure of evaluation 30", err)
			}
			last := 30 + MaxConsecutiveFailures - 1
			for _, want := range []string{
				fmt.Sprintf("failed at %d evaluations in a row (30 to %d)", MaxConsecutiveFailures, last),
				"MaxConsecutiveFailures",
				"the first failure, evaluation 30: solver diverged at evaluation 30",
				fmt.Sprintf("the last, evaluation %d: solver diverged at evaluation %d", last, last),
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if calls != last {
				t.Errorf("fg called %d times; want %d (none after the error)", calls, last)
			}
			minKeptProgress(t, θ, res, f0)
		})
	}
}

// minKeptProgress checks that a run of the Rosenbrock function from a start
// with loss f0, ended by a failure, left its best point before the failure
// in θ and in res.
func minKeptProgress(t *testing.T, θ []float32, res *optimize.Result, f0 float64) {
	t.Helper()
	if res == nil || math.IsNaN(res.F) {
		t.Fatalf("result %+v; want the best point before the failure", res)
	}
	for i, v := range res.X {
		if θ[i] != float32(v) {
			t.Fatalf("θ = %v; want res.X = %v", θ, res.X)
		}
	}
	if f := minRosenbrock64(θ, nil); !(f < f0) {
		t.Errorf("f(θ) = %v; want below the start's %v", f, f0)
	}
}

// nil settings are the defaults: the same run as the zero Settings, and
// Minimize's Float32Converge in place of gonum's converger.
func TestMinimizeNilSettings(t *testing.T) {
	θa, θb := minRosenbrockStart(10), minRosenbrockStart(10)
	ra, erra := Minimize(minPlain(minRosenbrock64), θa, nil, nil)
	zero := &optimize.Settings{}
	rb, errb := Minimize(minPlain(minRosenbrock64), θb, nil, zero)
	if erra != nil || errb != nil {
		t.Fatalf("errors %v (nil settings), %v (zero settings); want nil", erra, errb)
	}
	if !slices.Equal(θa, θb) || ra.Status != rb.Status || ra.FuncEvaluations != rb.FuncEvaluations {
		t.Errorf("nil settings: θ = %v, status %v, %d evaluations; zero settings: θ = %v, status %v, %d evaluations; want the same run",
			θa, ra.Status, ra.FuncEvaluations, θb, rb.Status, rb.FuncEvaluations)
	}
	if *zero != (optimize.Settings{}) {
		t.Errorf("Minimize changed the caller's zero Settings to %+v", *zero)
	}
	// gonum's own default converger (no decrease of 1e-10 in 100
	// iterations) would not stop this run with Float32Converged.
	if ra.Status != Float32Converged {
		t.Errorf("status %v with nil settings; want Float32Converged (Minimize's defaults)", ra.Status)
	}
}

// With default settings, float32 rounding ends these runs in a failed line
// search at the optimum: Minimize reports Float32Converged with a nil error
// (before, gonum's "linesearch: failed to converge" came back as an error).
func TestMinimizeFloat32ConvergedAtOptimum(t *testing.T) {
	fgAD := FromAD(minRosenbrockAD)
	for _, c := range []struct {
		name string
		fg   Objective
		n    int
	}{
		{"Rosenbrock 10-D, float64 loss", minPlain(minRosenbrock64), 10},
		{"Rosenbrock 10-D, FromAD", fgAD, 10},
		{"Rosenbrock 20-D, float64 loss", minPlain(minRosenbrock64), 20},
		{"Rosenbrock 20-D, FromAD", fgAD, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			θ := minRosenbrockStart(c.n)
			res, err := Minimize(c.fg, θ, nil, nil)
			if err != nil {
				t.Fatalf("error %v; want nil at the optimum", err)
			}
			if res.Status != Float32Converged {
				t.Errorf("status %v; want Float32Converged", res.Status)
			}
			if e := minMaxErr(θ, minOnes(c.n)); e > 1e-5 {
				t.Errorf("max |θ[i] − 1| = %g; want ≤ 1e-5", e)
			}
		})
	}

	// The least-squares fit of TestMinimizeLeastSquares, with no settings.
	fg := FromAD(minExpFit())
	θ := []float32{1, 1, 0}
	res, err := Minimize(fg, θ, nil, nil)
	if err != nil {
		t.Fatalf("least squares: error %v; want nil", err)
	}
	if e := minMaxErr(θ, []float64{minExpA, minExpK, minExpC}); e > 1e-5 {
		t.Errorf("least squares: θ = %v (status %v); want (%v, %v, %v) within 1e-5", θ, res.Status, minExpA, minExpK, minExpC)
	}
	t.Logf("least squares: status %v, θ = %v", res.Status, θ)
}

// The noise-free exponential decay y = a·exp(−k·t) + c the least-squares
// tests fit, sampled at minExpM points t = 0, 0.125, ….
const minExpA, minExpK, minExpC, minExpM = 2.0, 0.7, 0.5, 40

// minExpFit returns the least-squares loss of the fit of
// (a, k, c) = (p[0], p[1], p[2]) to the samples.
func minExpFit() func(p ad.Var) ad.Var {
	const m = minExpM
	ts := make([]float32, m)
	ys := make([]float32, m)
	for i := range m {
		ts[i] = float32(i) * 0.125
		ys[i] = float32(minExpA*math.Exp(-minExpK*float64(ts[i])) + minExpC)
	}
	return func(p ad.Var) ad.Var {
		tp := p.Tape()
		tv := tp.Const(flat.Tensor{Shape: []int{m}, Data: ts})
		yv := tp.Const(flat.Tensor{Shape: []int{m}, Data: ys})
		pa, pk, pc := ad.View(p, 0), ad.View(p, 1), ad.View(p, 2)
		pred := ad.Add(ad.Mul(pa, ad.Exp(ad.Neg(ad.Mul(pk, tv)))), pc)
		return ad.Sum(ad.Square(ad.Sub(pred, yv)))
	}
}

// A line search that fails far from an optimum (here: the gradient has the
// wrong sign) stays an error, gonum's, with the gradient sizes added.
func TestMinimizeLineSearchFailureFarFromOptimumStaysError(t *testing.T) {
	wrong := func(θ, grad []float32) float64 {
		f := minRosenbrock64(θ, grad)
		for i := range grad {
			grad[i] = -grad[i]
		}
		return f
	}
	θ := minRosenbrockStart(10)
	res, err := Minimize(minPlain(wrong), θ, nil, nil)
	if err == nil || !(errors.Is(err, optimize.ErrLinesearcherFailure) || errors.Is(err, optimize.ErrNoProgress)) {
		t.Fatalf("error %v; want gonum's line-search error", err)
	}
	if !strings.Contains(err.Error(), "far from an optimum") {
		t.Errorf("error %q does not say it is far from an optimum", err)
	}
	if res.Status == Float32Converged {
		t.Errorf("status Float32Converged for a wrong gradient")
	}
}

// A caller's Converger is kept, and the caller's Settings are not changed.
func TestMinimizeKeepsCallersSettings(t *testing.T) {
	set := &optimize.Settings{GradientThreshold: 1e-4}
	θ := minRosenbrockStart(10)
	if _, err := Minimize(minPlain(minRosenbrock64), θ, nil, set); err != nil {
		t.Fatal(err)
	}
	if set.Converger != nil {
		t.Errorf("Minimize set the caller's Converger to %v", set.Converger)
	}
	never := &optimize.Settings{Converger: optimize.NeverTerminate{}, MajorIterations: 7}
	res, err := Minimize(minPlain(minRosenbrock64), minRosenbrockStart(10), nil, never)
	if err != nil || res.Status != optimize.IterationLimit {
		t.Errorf("with NeverTerminate and 7 iterations: status %v, error %v; want IterationLimit", res.Status, err)
	}
}

func ExampleMinimize() {
	// Fit y = a·exp(−k·t) + c to samples, with the loss written in ad ops.
	ts := []float32{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5}
	ys := make([]float32, len(ts))
	for i, t := range ts {
		ys[i] = float32(2*math.Exp(-0.7*float64(t)) + 0.5)
	}
	loss := func(p ad.Var) ad.Var {
		tp := p.Tape()
		t := tp.Const(flat.Tensor{Shape: []int{len(ts)}, Data: ts})
		y := tp.Const(flat.Tensor{Shape: []int{len(ys)}, Data: ys})
		a, k, c := ad.View(p, 0), ad.View(p, 1), ad.View(p, 2)
		pred := ad.Add(ad.Mul(a, ad.Exp(ad.Neg(ad.Mul(k, t)))), c)
		return ad.Sum(ad.Square(ad.Sub(pred, y)))
	}
	θ := []float32{1, 1, 0} // a, k, c
	_, err := Minimize(FromAD(loss), θ, &optimize.LBFGS{}, &optimize.Settings{GradientThreshold: 1e-6})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("a=%.4f k=%.4f c=%.4f\n", θ[0], θ[1], θ[2])
	// Output: a=2.0000 k=0.7000 c=0.5000
}

func ExampleMinimize_float32() {
	// The 10-D Rosenbrock function in float32 ad ops, with no settings:
	// float32 rounding ends L-BFGS's line search at the optimum, which
	// Minimize reports as Float32Converged with a nil error.
	rosenbrock := func(p ad.Var) ad.Var {
		n := p.Size()
		x, y := ad.View(p, 0, n-1), ad.View(p, 1, n-1)
		one := p.Tape().Scalar(1)
		return ad.Sum(ad.Add(ad.Scale(ad.Square(ad.Sub(y, ad.Square(x))), 100), ad.Square(ad.Sub(one, x))))
	}
	θ := []float32{-1.2, 1, -1.2, 1, -1.2, 1, -1.2, 1, -1.2, 1}
	res, err := Minimize(FromAD(rosenbrock), θ, nil, nil)
	fmt.Println(res.Status, err)
	fmt.Printf("%.4f\n", θ)
	// Output:
	// Float32Converged <nil>
	// [1.0000 1.0000 1.0000 1.0000 1.0000 1.0000 1.0000 1.0000 1.0000 1.0000]
}
