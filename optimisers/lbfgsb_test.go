package optimisers

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/optimize"
)

// lbProjGrad returns max |P(θ − g) − θ| for the bounds b.
func lbProjGrad(θ []float32, g []float64, b Bounds) float64 {
	pg := 0.0
	for i, v := range θ {
		x := float64(v)
		p := math.Min(math.Max(x-g[i], b.Lower[i]), b.Upper[i])
		pg = math.Max(pg, math.Abs(p-x))
	}
	return pg
}

func lbBox(n int, lo, hi float64) Bounds {
	b := Bounds{Lower: make([]float64, n), Upper: make([]float64, n)}
	for i := range n {
		b.Lower[i], b.Upper[i] = lo, hi
	}
	return b
}

// TestLBFGSBInactiveBoundsIsLBFGS: with bounds that hold no active
// constraint at the optimum, and with no bounds at all, LBFGSB finds the
// same minimum as gonum's unbounded LBFGS.
func TestLBFGSBInactiveBoundsIsLBFGS(t *testing.T) {
	const n = 10
	fg := minPlain(minRosenbrock64)
	ref := minRosenbrockStart(n)
	if _, err := Minimize(fg, ref, &optimize.LBFGS{}, &optimize.Settings{GradientThreshold: 1e-4}); err != nil {
		t.Fatalf("LBFGS: %v", err)
	}
	for _, c := range []struct {
		name string
		b    Bounds
	}{
		{"no bounds", Bounds{}},
		{"box [-5, 5]", lbBox(n, -5, 5)},
		{"lower only", Bounds{Lower: lbBox(n, -3, 0).Lower}},
	} {
		t.Run(c.name, func(t *testing.T) {
			θ := minRosenbrockStart(n)
			res, err := Minimize(fg, θ, &LBFGSB{Bounds: c.b}, &optimize.Settings{GradientThreshold: 1e-4})
			if err != nil {
				t.Fatalf("Minimize: %v", err)
			}
			e := minMaxErr(θ, minOnes(n))
			d := 0.0
			for i := range θ {
				d = math.Max(d, math.Abs(float64(θ[i]-ref[i])))
			}
			t.Logf("%v after %d iterations, %d evaluations; max |θ − 1| = %.3g, max |θ − θ_LBFGS| = %.3g", res.Status, res.MajorIterations, res.FuncEvaluations, e, d)
			if e > 1e-4 || d > 1e-4 {
				t.Errorf("θ = %v; want within 1e-4 of 1 and of LBFGS's %v", θ, ref)
			}
		})
	}
}

// lbCorner is Σ (θᵢ − cᵢ)² + 0.1 Σ (θᵢ − θᵢ₊₁)² with cᵢ = ±10: in the box
// [−1, 1]ⁿ its minimum is the corner θᵢ = sign(cᵢ), where the gradient
// still points out of the box in every coordinate.
func lbCorner(θ, grad []float32) float64 {
	n := len(θ)
	f := 0.0
	for i := range n {
		c := 10.0
		if i%2 == 1 {
			c = -10
		}
		x := float64(θ[i])
		f += (x - c) * (x - c)
		g := 2 * (x - c)
		if i+1 < n {
			d := x - float64(θ[i+1])
			f += 0.1 * d * d
			g += 0.2 * d
		}
		if i > 0 {
			g -= 0.2 * (float64(θ[i-1]) - x)
		}
		if grad != nil {
			grad[i] = float32(g)
		}
	}
	return f
}

// TestLBFGSBCornerProjectedGradient: the optimum is a corner of the box.
// The run stops on the projected gradient, which is zero there, although
// the full gradient is about 20 in every coordinate; and it reaches the
// corner exactly.
func TestLBFGSBCornerProjectedGradient(t *testing.T) {
	const n = 6
	b := lbBox(n, -1, 1)
	θ := []float32{0.3, 0.2, -0.5, 0.9, 0, 0.1}
	res, err := Minimize(minPlain(lbCorner), θ, &LBFGSB{Bounds: b}, nil)
	if err != nil {
		t.Fatalf("Minimize: %v", err)
	}
	if res.Status != optimize.GradientThreshold {
		t.Errorf("status %v, want GradientThreshold", res.Status)
	}
	for i, v := range θ {
		want := float32(1)
		if i%2 == 1 {
			want = -1
		}
		if v != want {
			t.Errorf("θ[%d] = %v, want the corner %v", i, v, want)
		}
	}
	gmin := math.Inf(1)
	for _, g := range res.Gradient {
		gmin = math.Min(gmin, math.Abs(g))
	}
	if pg := lbProjGrad(θ, res.Gradient, b); pg != 0 || gmin < 15 {
		t.Errorf("projected gradient %g, smallest |gradient| %g; want 0 and a full gradient above 15 in every coordinate", pg, gmin)
	}
	t.Logf("%d iterations, %d evaluations", res.MajorIterations, res.FuncEvaluations)
}

// TestLBFGSBProjectedGradientThreshold: a run that stops on
// GradientThreshold has its projected gradient below the threshold, with
// bounds active and the full gradient far from zero.
func TestLBFGSBProjectedGradientThreshold(t *testing.T) {
	const n = 8
	b := lbBox(n, -2, 0.7) // the optimum (1, …, 1) is outside: θ[n-1] and others stop at 0.7
	for _, thr := range []float64{1e-2, 1e-3, 1e-4} {
		θ := minRosenbrockStart(n)
		res, err := Minimize(minPlain(minRosenbrock64), θ, &LBFGSB{Bounds: b}, &optimize.Settings{GradientThreshold: thr})
		if err != nil {
			t.Fatalf("threshold %g: %v", thr, err)
		}
		pg := lbProjGrad(θ, res.Gradient, b)
		gmax := 0.0
		for _, g := range res.Gradient {
			gmax = math.Max(gmax, math.Abs(g))
		}
		t.Logf("threshold %g: %v after %d iterations; projected gradient %.3g, full gradient %.3g", thr, res.Status, res.MajorIterations, pg, gmax)
		if res.Status != optimize.GradientThreshold || pg > thr || gmax < 0.1 {
			t.Errorf("threshold %g: status %v, projected gradient %g, full %g; want GradientThreshold, ≤ %g, and a full gradient not small", thr, res.Status, pg, gmax, thr)
		}
	}
}

// TestLBFGSBStartProjected: a start outside the bounds is projected onto
// them; the objective never sees a point outside.
func TestLBFGSBStartProjected(t *testing.T) {
	b := Bounds{Lower: []float64{0, 0.1}, Upper: []float64{1, 0.3}}
	outside := 0
	fg := func(θ, grad []float32) (float64, error) {
		for i, v := range θ {
			if float64(v) < roundUp32(b.Lower[i]) || float64(v) > roundDown32(b.Upper[i]) {
				outside++
			}
		}
		x, y := float64(θ[0]), float64(θ[1])
		grad[0], grad[1] = float32(2*(x-2)), float32(2*(y+1))
		return (x-2)*(x-2) + (y+1)*(y+1), nil
	}
	θ := []float32{-3, 7}
	res, err := Minimize(fg, θ, &LBFGSB{Bounds: b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if outside > 0 {
		t.Errorf("the objective saw %d points outside the bounds, want none", outside)
	}
	if θ[0] != 1 || float64(θ[1]) != roundUp32(0.1) {
		t.Errorf("θ = %v, want [1 %v] (the upper corner in x, the lower bound in y)", θ, float32(0.1))
	}
	if res.Status != optimize.GradientThreshold {
		t.Errorf("status %v, want GradientThreshold", res.Status)
	}
}

var errLBBlowUp = errors.New("the solve blew up")

// TestLBFGSBRecoversFromFailedEvaluation: the objective fails for θ₀ < 0.5,
// a region the bound θ₀ ≥ 0 does not exclude, as a solve blows up past a
// parameter boundary. The first step lands there; the line search shrinks
// it and the run converges to the optimum (1, −2).
func TestLBFGSBRecoversFromFailedEvaluation(t *testing.T) {
	for _, how := range []string{"error", "NaN", "+Inf", "NaN gradient"} {
		t.Run(how, func(t *testing.T) {
			fails := 0
			fg := func(θ, grad []float32) (float64, error) {
				x, y := float64(θ[0]), float64(θ[1])
				f := (x-1)*(x-1) + 3*(y+2)*(y+2)
				grad[0], grad[1] = float32(2*(x-1)), float32(6*(y+2))
				if x < 0.5 {
					fails++
					switch how {
					case "error":
						return 0, errLBBlowUp
					case "NaN":
						return math.NaN(), nil
					case "+Inf":
						return math.Inf(1), nil
					default:
						grad[1] = float32(math.NaN())
					}
				}
				return f, nil
			}
			θ := []float32{10, 5}
			b := Bounds{Lower: []float64{0, -20}, Upper: []float64{20, 20}} // boxed: the first trial is the full step
			res, err := Minimize(fg, θ, &LBFGSB{Bounds: b}, nil)
			if err != nil {
				t.Fatalf("Minimize: %v", err)
			}
			if fails == 0 {
				t.Fatal("no evaluation failed: the test does not test recovery")
			}
			if math.Abs(float64(θ[0])-1) > 1e-5 || math.Abs(float64(θ[1])+2) > 1e-5 {
				t.Errorf("θ = %v, want (1, −2)", θ)
			}
			t.Logf("%d failed evaluations; %v after %d iterations, %d evaluations", fails, res.Status, res.MajorIterations, res.FuncEvaluations)
		})
	}
}

// TestLBFGSBFailureKeepsCause: an objective that fails everywhere but at
// the start ends the run with an error that wraps its cause; θ keeps the
// start. A failure at the start is an error at once, with θ unchanged.
func TestLBFGSBFailureKeepsCause(t *testing.T) {
	start := []float32{3, 4}
	fg := func(θ, grad []float32) (float64, error) {
		if θ[0] != start[0] || θ[1] != start[1] {
			return 0, errLBBlowUp
		}
		grad[0], grad[1] = 1, 1
		return 1, nil
	}
	θ := append([]float32(nil), start...)
	res, err := Minimize(fg, θ, &LBFGSB{}, nil)
	if !errors.Is(err, errLBBlowUp) {
		t.Fatalf("err = %v, want one wrapping the objective's error", err)
	}
	if res == nil || res.Status != optimize.Failure || res.FuncEvaluations != 21 {
		t.Errorf("result %+v, want Failure after 1 + 20 evaluations (the start and one search; the memory is empty, so no refresh)", res)
	}
	if !strings.Contains(err.Error(), "20 of its evaluations failed") {
		t.Errorf("err = %q, want the count of failed evaluations", err)
	}
	if θ[0] != start[0] || θ[1] != start[1] {
		t.Errorf("θ = %v, want the start %v", θ, start)
	}
	t.Log(err)

	bad := func(θ, grad []float32) (float64, error) { return 0, errLBBlowUp }
	θ = append([]float32(nil), start...)
	_, err = Minimize(bad, θ, &LBFGSB{}, nil)
	if !errors.Is(err, errLBBlowUp) || !strings.Contains(err.Error(), "at the start") {
		t.Errorf("err = %v, want the objective's error at the start", err)
	}
	if θ[0] != start[0] || θ[1] != start[1] {
		t.Errorf("θ = %v after a failed start, want it unchanged", θ)
	}
}

// TestLBFGSBErrors: settings and bounds that cannot run.
func TestLBFGSBErrors(t *testing.T) {
	fg := minPlain(minRosenbrock64)
	for _, c := range []struct {
		name string
		m    *LBFGSB
		set  *optimize.Settings
		want string
	}{
		{"short Lower", &LBFGSB{Bounds: Bounds{Lower: []float64{0}}}, nil, "Bounds.Lower has 1 entries, want len(θ) = 3"},
		{"long Upper", &LBFGSB{Bounds: Bounds{Upper: make([]float64, 4)}}, nil, "Bounds.Upper has 4 entries, want len(θ) = 3"},
		{"Lo > Hi", &LBFGSB{Bounds: Bounds{Lower: []float64{0, 2, 0}, Upper: []float64{1, 1, 1}}}, nil, "θ[1]: interval [2, 1] has Lo > Hi"},
		{"NaN", &LBFGSB{Bounds: Bounds{Lower: []float64{0, math.NaN(), 0}}}, nil, "θ[1]: interval [NaN, +Inf] has a NaN end"},
		{"no float32 inside", &LBFGSB{Bounds: Bounds{Lower: []float64{0, 0.1, 0}, Upper: []float64{1, 0.1, 1}}}, nil, "θ[1]: [0.1, 0.1] holds no finite float32 value"},
		{"empty", &LBFGSB{Bounds: Bounds{Lower: []float64{0, math.Inf(1), 0}}}, nil, "holds no number"},
		{"Memory", &LBFGSB{Memory: -1}, nil, "LBFGSB.Memory = -1"},
		{"MaxLineSearch", &LBFGSB{MaxLineSearch: -2}, nil, "LBFGSB.MaxLineSearch = -2"},
		{"InitValues", &LBFGSB{}, &optimize.Settings{InitValues: &optimize.Location{}}, "Settings.InitValues"},
	} {
		θ := []float32{0.5, 0.5, 0.5}
		res, err := Minimize(fg, θ, c.m, c.set)
		if err == nil || !strings.Contains(err.Error(), c.want) || res != nil {
			t.Errorf("%s: res %v, err %v; want a nil result and an error containing %q", c.name, res, err, c.want)
		}
		if θ[0] != 0.5 {
			t.Errorf("%s: θ changed to %v", c.name, θ)
		}
	}
	// A nil *LBFGSB is the zero value.
	if _, err := Minimize(fg, []float32{0.5, 0.5, 0.5}, (*LBFGSB)(nil), &optimize.Settings{MajorIterations: 2}); err != nil {
		t.Errorf("a nil *LBFGSB: %v", err)
	}
	// A bound exactly at a float32 value is kept; an interval of one
	// float32 value fixes the variable.
	θ := []float32{0.5, 0.5, 0.5}
	one := float64(float32(0.1))
	if _, err := Minimize(fg, θ, &LBFGSB{Bounds: Bounds{Lower: []float64{-1, one, -1}, Upper: []float64{2, one, 2}}}, nil); err != nil || θ[1] != float32(0.1) {
		t.Errorf("a fixed variable: θ = %v, err %v; want θ[1] = 0.1", θ, err)
	}
	// gonum's own Minimize refuses LBFGSB: it panics with Uses' error.
	func() {
		defer func() {
			r := recover()
			if err, _ := r.(error); !errors.Is(err, errOwnLoop) && !strings.Contains(fmt.Sprint(r), errOwnLoop.Error()) {
				t.Errorf("gonum's Minimize with LBFGSB: recovered %v, want errOwnLoop", r)
			}
		}()
		optimize.Minimize(optimize.Problem{Func: func([]float64) float64 { return 0 }}, []float64{1}, nil, &LBFGSB{})
	}()
}

// TestLBFGSBLimits: the settings' limits stop the run with gonum's
// statuses, and θ holds the last iterate.
func TestLBFGSBLimits(t *testing.T) {
	fg := minPlain(minRosenbrock64)
	b := lbBox(10, -2, 2)
	θ := minRosenbrockStart(10)
	res, err := Minimize(fg, θ, &LBFGSB{Bounds: b}, &optimize.Settings{MajorIterations: 3})
	if err != nil || res.Status != optimize.IterationLimit || res.MajorIterations != 3 {
		t.Errorf("MajorIterations 3: %v, %v after %d iterations; want IterationLimit after 3", err, res.Status, res.MajorIterations)
	}
	for i, v := range res.X {
		if float32(v) != θ[i] {
			t.Fatalf("θ[%d] = %v, res.X %v", i, θ[i], v)
		}
	}
	θ = minRosenbrockStart(10)
	res, err = Minimize(fg, θ, &LBFGSB{Bounds: b}, &optimize.Settings{FuncEvaluations: 7})
	if err != nil || res.Status != optimize.FunctionEvaluationLimit || res.FuncEvaluations != 7 {
		t.Errorf("FuncEvaluations 7: %v, %v after %d evaluations; want FunctionEvaluationLimit after 7", err, res.Status, res.FuncEvaluations)
	}
}

// TestLBFGSBAllocs: allocations do not grow with the number of
// iterations: a run allocates its buffers once.
func TestLBFGSBAllocs(t *testing.T) {
	fg := minPlain(minRosenbrock64)
	b := lbBox(20, -2, 0.9)
	run := func(iters int) float64 {
		return testing.AllocsPerRun(5, func() {
			θ := minRosenbrockStart(20)
			res, err := Minimize(fg, θ, &LBFGSB{Bounds: b}, &optimize.Settings{MajorIterations: iters, GradientThreshold: math.NaN()})
			if err != nil || res.MajorIterations != iters {
				t.Fatalf("%d iterations: %v after %d", iters, err, res.MajorIterations)
			}
		})
	}
	few, many := run(3), run(25)
	if many != few {
		t.Errorf("a run of 3 iterations allocates %v times, of 25 %v; want the same", few, many)
	}
}

// BenchmarkMinimizeRosenbrock20 runs the 20-D Rosenbrock function from the
// standard start to a projected gradient of 1e-4: unbounded by gonum's
// LBFGS and by LBFGSB, and by LBFGSB in the box [−2, 0.9]²⁰.
func BenchmarkMinimizeRosenbrock20(b *testing.B) {
	fg := minPlain(minRosenbrock64)
	for _, c := range []struct {
		name string
		m    func() optimize.Method
	}{
		{"LBFGS", func() optimize.Method { return &optimize.LBFGS{} }},
		{"LBFGSB/unbounded", func() optimize.Method { return &LBFGSB{} }},
		{"LBFGSB/box", func() optimize.Method { return &LBFGSB{Bounds: lbBox(20, -2, 0.9)} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			evals := 0
			for b.Loop() {
				θ := minRosenbrockStart(20)
				res, err := Minimize(fg, θ, c.m(), &optimize.Settings{GradientThreshold: 1e-4})
				if err != nil {
					b.Fatal(err)
				}
				evals = res.FuncEvaluations
			}
			b.ReportMetric(float64(evals), "evals")
		})
	}
}
