package optimisers

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/flatkit/flatkit/layout"
)

type lsqParams struct {
	Intercept []float32 `flat:"shape=1"`
	Slope     []float32
}

// TestLaplaceLeastSquares: for y = Xβ + ε, ε ~ N(0, σ²), the negative
// log-likelihood's Hessian is XᵀX/σ², and the covariance is σ²(XᵀX)⁻¹
// exactly.
func TestLaplaceLeastSquares(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 1))
	const m, σ = 40, 0.3
	X := mat.NewDense(m, 3, nil)
	for i := range m {
		X.Set(i, 0, 1)
		X.Set(i, 1, rng.NormFloat64())
		X.Set(i, 2, rng.NormFloat64()+0.5*X.At(i, 1))
	}
	var xtx mat.SymDense
	xtx.SymOuterK(1, X.T())
	h := mat.NewSymDense(3, nil)
	h.ScaleSym(1/(σ*σ), &xtx)

	lay, err := layout.Of(&lsqParams{Slope: make([]float32, 2)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLaplace(h, lay, 0)
	if err != nil {
		t.Fatal(err)
	}
	var inv mat.Dense
	if err := inv.Inverse(&xtx); err != nil {
		t.Fatal(err)
	}
	inv.Scale(σ*σ, &inv)
	for i := range 3 {
		for j := range 3 {
			if got, want := l.Cov.At(i, j), inv.At(i, j); math.Abs(got-want) > 1e-12*math.Abs(inv.At(i, i)) {
				t.Errorf("Cov(%d, %d) = %v, want σ²(XᵀX)⁻¹ = %v", i, j, got, want)
			}
		}
	}
	if l.Warning() != "" || len(l.Null) != 0 {
		t.Errorf("warning %q for a full-rank design", l.Warning())
	}
	se, err := l.StdErrOf(l.Names[1][:strings.IndexByte(l.Names[1], '[')])
	if err != nil {
		t.Fatal(err)
	}
	if len(se) != 2 || math.Abs(se[1]-math.Sqrt(inv.At(2, 2))) > 1e-12 {
		t.Errorf("standard errors of the slope %v, want √diag σ²(XᵀX)⁻¹ = %v", se, math.Sqrt(inv.At(2, 2)))
	}
	t.Logf("names %v, standard errors %v", l.Names, l.StdErr)
}

type abcParams struct {
	A []float32 `flat:"shape=1"`
	B []float32 `flat:"shape=1"`
	C []float32 `flat:"shape=1"`
}

// TestLaplaceProductNonIdentifiable: y = a·b·x + c·x² sees a and b only
// through their product, so at (a, b) the Hessian is singular along
// (a, −b) and the warning names both.
func TestLaplaceProductNonIdentifiable(t *testing.T) {
	lay, err := layout.Of(&abcParams{})
	if err != nil {
		t.Fatal(err)
	}
	xs := []float64{0.5, 1, 1.5, 2, 3}
	θ := []float32{2, 1.5, 0.7}
	// Gauss–Newton Hessian of ½Σ r², exact at zero residual: JᵀJ.
	J := mat.NewDense(len(xs), 3, nil)
	a, b := float64(θ[0]), float64(θ[1])
	for i, x := range xs {
		J.Set(i, 0, b*x)
		J.Set(i, 1, a*x)
		J.Set(i, 2, x*x)
	}
	var h mat.SymDense
	h.SymOuterK(1, J.T())
	l, err := NewLaplace(&h, lay, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Null) != 1 {
		t.Fatalf("%d null directions, want 1; eigenvalues %v", len(l.Null), l.Eigenvalues)
	}
	d := l.Null[0]
	if len(d.Leading) != 2 {
		t.Fatalf("leading %v, want a and b", d.Leading)
	}
	// The null vector ∝ (a, −b, 0) = (0.8, −0.6, 0): a leads.
	if d.Leading[0].Index != 0 || d.Leading[1].Index != 1 || d.Leading[0].Weight*d.Leading[1].Weight >= 0 {
		t.Errorf("leading %v, want a then b with opposite signs", d.Leading)
	}
	w := l.Warning()
	for _, name := range []string{l.Names[0], l.Names[1]} {
		if !strings.Contains(w, name) {
			t.Errorf("warning %q does not name %q", w, name)
		}
	}
	if strings.Contains(w, l.Names[2]) {
		t.Errorf("warning %q names %q, which is determined", w, l.Names[2])
	}
	if !math.IsInf(l.StdErr[0], 1) || !math.IsInf(l.StdErr[1], 1) || math.IsInf(l.StdErr[2], 0) {
		t.Errorf("standard errors %v, want +Inf, +Inf, finite", l.StdErr)
	}
	t.Log(w)
}

func TestLaplaceErrors(t *testing.T) {
	for _, c := range []struct {
		h    mat.Matrix
		want string
	}{
		{mat.NewDense(2, 3, nil), "2×3, want a square"},
		{mat.NewDense(2, 2, []float64{1, 0.5, 0.4, 1}), "not symmetric"},
		{mat.NewDense(2, 2, []float64{1, 0, 0, -1}), "indefinite: eigenvalue -1"},
		{mat.NewDense(2, 2, []float64{1, 0, 0, math.NaN()}), "entry (1, 1) is NaN"},
	} {
		if _, err := NewLaplace(c.h, nil, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want one containing %q", err, c.want)
		}
	}
	lay, _ := layout.Of(&abcParams{})
	if _, err := NewLaplace(mat.NewDiagDense(2, []float64{1, 1}), lay, 0); err == nil || !strings.Contains(err.Error(), "3 elements") {
		t.Errorf("err = %v, want a size mismatch", err)
	}
}

func TestHessianFromHv(t *testing.T) {
	θ := []float32{-1.2, 1, 0.5}
	h, asym, err := HessianFromHv(θ, rosenbrockHv)
	if err != nil {
		t.Fatal(err)
	}
	if asym != 0 {
		t.Errorf("asymmetry %v, want 0", asym)
	}
	x, y := -1.2, 1.0
	if got, want := h.At(0, 0), 1200*float64(float32(x))*float64(float32(x))-400*y+2; math.Abs(got-want) > 1e-3 {
		t.Errorf("H(0, 0) = %v, want %v", got, want)
	}
	if got := h.At(0, 2); got != 0 {
		t.Errorf("H(0, 2) = %v, want 0", got)
	}
	_, asym, _ = HessianFromHv(θ, func(θ, v, hv []float32) error {
		hv[0], hv[1], hv[2] = v[0]+2*v[1], v[1], v[2]
		return nil
	})
	if asym < 0.5 {
		t.Errorf("asymmetry %v for a non-symmetric product, want 1", asym)
	}
}

// TestLaplaceNearlySingular: with a little data noise the product model's
// Hessian is not exactly singular; a threshold above its smallest relative
// eigenvalue still names the combination, and the default one does not.
func TestLaplaceNearlySingular(t *testing.T) {
	lay, err := layout.Of(&abcParams{})
	if err != nil {
		t.Fatal(err)
	}
	// JᵀJ of the product model plus a small residual term along a.
	h := mat.NewSymDense(3, []float64{
		1.5*1.5*7.5 + 1e-4, 1.5 * 2 * 7.5, 1.5 * 18,
		1.5 * 2 * 7.5, 2 * 2 * 7.5, 2 * 18,
		1.5 * 18, 2 * 18, 98.5,
	})
	l, err := NewLaplace(h, lay, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Null) != 1 || l.Null[0].Eigenvalue <= 0 {
		t.Fatalf("null directions %+v, want one with a small positive eigenvalue", l.Null)
	}
	if w := l.Warning(); !strings.Contains(w, "A") || !strings.Contains(w, "B") {
		t.Errorf("warning %q, want A and B named", w)
	}
	l, err = NewLaplace(h, lay, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Null) != 0 || math.IsInf(l.StdErr[0], 0) {
		t.Errorf("null directions %+v and standard errors %v at the default threshold, want none and finite", l.Null, l.StdErr)
	}
}
