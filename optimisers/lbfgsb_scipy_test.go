package optimisers

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"gonum.org/v1/gonum/optimize"
)

// scipyLBFGSB is testdata/scipy_lbfgsb.json, written by
// testdata/scipy_lbfgsb.py with Debian's python3-scipy (the format is in
// the script's docstring).
type scipyLBFGSB struct {
	SciPy    string `json:"scipy"`
	Problems []struct {
		Name   string      `json:"name"`
		Lower  []float64   `json:"lower"`
		Upper  []float64   `json:"upper"`
		X0     []float64   `json:"x0"`
		A      [][]float64 `json:"a"`
		B      []float64   `json:"b"`
		X      []float64   `json:"x"`
		F      float64     `json:"f"`
		Active []int       `json:"active"`
		Trace  [][]float64 `json:"trace"`
	} `json:"problems"`
}

// lsqObjective is ½‖Aθ − b‖² in float64 at the float32 point.
func lsqObjective(a [][]float64, b []float64) Objective {
	r := make([]float64, len(b))
	return func(θ, grad []float32) (float64, error) {
		f := 0.0
		for i, row := range a {
			v := -b[i]
			for j, aij := range row {
				v += aij * float64(θ[j])
			}
			r[i] = v
			f += 0.5 * v * v
		}
		if grad != nil {
			for j := range grad {
				g := 0.0
				for i, row := range a {
					g += row[j] * r[i]
				}
				grad[j] = float32(g)
			}
		}
		return f, nil
	}
}

// TestLBFGSBMatchesSciPy solves SciPy's bound-constrained problems and
// compares the solutions. The tolerance of θ[i] is 1e-6 plus one float32
// ulp of the reference, 2⁻²³·|x[i]|: the run ends at float32 points, and a
// bound is rounded inward to float32.
func TestLBFGSBMatchesSciPy(t *testing.T) {
	raw, err := os.ReadFile("testdata/scipy_lbfgsb.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref scipyLBFGSB
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Problems) != 3 {
		t.Fatalf("%d problems in the fixture, want 3", len(ref.Problems))
	}
	for _, p := range ref.Problems {
		t.Run(p.Name, func(t *testing.T) {
			var fg Objective
			switch p.Name {
			case "rosenbrock20":
				fg = minPlain(minRosenbrock64)
			case "lsq":
				fg = lsqObjective(p.A, p.B)
			case "driver1":
				fg = minPlain(lbDriver1)
			default:
				t.Fatalf("unknown problem %q", p.Name)
			}
			θ := make([]float32, len(p.X0))
			for i, v := range p.X0 {
				θ[i] = float32(v)
			}
			// Stop on float32's resolution alone: no projected-gradient
			// threshold and no Converger, as SciPy ran with tiny tolerances.
			rec := &lbTrace{}
			set := &optimize.Settings{GradientThreshold: math.NaN(), Converger: optimize.NeverTerminate{}, Recorder: rec}
			res, err := Minimize(fg, θ, &LBFGSB{Bounds: Bounds{Lower: p.Lower, Upper: p.Upper}}, set)
			if err != nil {
				t.Fatalf("Minimize: %v", err)
			}
			worst := 0.0
			for i, want := range p.X {
				tol := 1e-6 + math.Abs(want)*0x1p-23
				e := math.Abs(float64(θ[i]) - want)
				worst = math.Max(worst, e)
				if e > tol {
					t.Errorf("θ[%d] = %.9g, SciPy %.9g: off by %.3g, want within %.3g", i, θ[i], want, e, tol)
				}
			}
			for _, i := range p.Active {
				if float64(θ[i]) != roundUp32(p.Lower[i]) && float64(θ[i]) != roundDown32(p.Upper[i]) {
					t.Errorf("θ[%d] = %.9g is not at its bound [%g, %g], as SciPy's is", i, θ[i], p.Lower[i], p.Upper[i])
				}
			}
			t.Logf("SciPy %s: max |θ − x| = %.3g; f = %.12g (SciPy %.12g); %v after %d iterations, %d evaluations",
				ref.SciPy, worst, res.F, p.F, res.Status, res.MajorIterations, res.FuncEvaluations)
			// The path: the same algorithm takes the same steps, up to
			// float32 rounding of the iterates, which grows along the path.
			if len(rec.xs) < len(p.Trace) {
				t.Fatalf("%d iterates recorded, want at least %d", len(rec.xs), len(p.Trace))
			}
			for k, want := range p.Trace {
				e := 0.0
				for i, v := range want {
					e = math.Max(e, math.Abs(rec.xs[k][i]-v)/(1+math.Abs(v)))
				}
				t.Logf("iterate %d: max relative difference from SciPy's %.3g", k+1, e)
				if e > 1e-6 {
					t.Errorf("iterate %d differs from SciPy's by %.3g (relative), want ≤ 1e-6", k+1, e)
				}
			}
		})
	}
}

// lbTrace records the iterates of the major iterations.
type lbTrace struct{ xs [][]float64 }

func (r *lbTrace) Init() error { return nil }

func (r *lbTrace) Record(loc *optimize.Location, op optimize.Operation, _ *optimize.Stats) error {
	if op == optimize.MajorIteration {
		r.xs = append(r.xs, append([]float64(nil), loc.X...))
	}
	return nil
}

// lbDriver1 is the example of L-BFGS-B's distribution:
// 0.25 (θ₀ − 1)² + 4 Σᵢ₌₁ (θᵢ − θᵢ₋₁²)², in float64 at the float32 point.
func lbDriver1(θ, grad []float32) float64 {
	x0 := float64(θ[0])
	f := 0.25 * (x0 - 1) * (x0 - 1)
	if grad != nil {
		clear(grad)
		grad[0] = float32(0.5 * (x0 - 1))
	}
	for i := 1; i < len(θ); i++ {
		p, x := float64(θ[i-1]), float64(θ[i])
		d := x - p*p
		f += 4 * d * d
		if grad != nil {
			grad[i-1] += float32(-16 * p * d)
			grad[i] += float32(8 * d)
		}
	}
	return f
}
