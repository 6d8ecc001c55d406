package proptest

import (
	"fmt"
	"math"
	"strings"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// CheckHv checks a user's Hessian-vector product hv at θ against the
// user's gradient grad, for products written by hand or through a solver
// (an ODE adjoint, say) rather than with ad, which CheckHVP checks. Along
// each direction u it compares H·u from hv with central differences of
// grad along u, extrapolated (Richardson) as CheckHVP's are, to the same
// tolerance; then it checks that the products are symmetric,
// ⟨H·u, v⟩ = ⟨u, H·v⟩ for every pair of directions, relative to the
// terms summed, to the looser of CheckHVP's tolerance for θ's precision
// and the differences' (Tol): a product through a solver is symmetric
// only to its accuracy. The directions are the unit vectors when θ
// is small (FullUpTo), else random ones (Directions); Steps and Tol set
// the differences as for CheckGrad. θ is float32 or float64, and grad and
// hv take that precision.
//
// grad writes the gradient at θ into g; hv writes H(θ)·v into out. Neither
// may keep its arguments. An error of either fails the check at once.
// A wrong product fails with the direction and component that disagree
// (TestCheckHvCatchesWrongProducts holds a product scaled by 1.01, caught
// in float32 with SharpTol, and a transposed one).
func CheckHv[F flat.Float](t T, grad func(θ, g []F) error, hv func(θ, v, out []F) error, θ []F, opts ...FDCheckOption) {
	t.Helper()
	num := numericOf[F]()
	c := configure(num, opts)
	n := len(θ)
	if n == 0 || grad == nil || hv == nil {
		t.Fatalf("CheckHv: want a non-empty θ and non-nil grad and hv, have len(θ) = %d", n)
		return
	}
	x, g := make([]F, n), make([]F, n)
	c.eval = fdEvaluator{unit: c.eval.unit, at: func(_ func(ad.Var) ad.Var, θ, d []float64, s float64) ([]float64, error) {
		for i := range x {
			x[i] = F(θ[i] + s*d[i])
		}
		if err := grad(x, g); err != nil {
			return nil, fmt.Errorf("grad at θ + %g·u: %w", s, err)
		}
		return widen(g), nil
	}}
	θ64 := widen(θ)
	ps := c.fdProbes(θ64, 31)
	v, out := make([]F, n), make([]F, n)
	hus := make([][]float64, len(ps))
	scale := 0.0
	for k := range ps {
		d := ps[k].d
		for i := range d {
			d[i] = num.round(d[i]) // hv sees u in θ's precision; so do the differences
			v[i] = F(d[i])
		}
		copy(x, θ)
		if err := hv(x, v, out); err != nil {
			t.Fatalf("CheckHv: hv %s: %v", ps[k].label, err)
			return
		}
		hus[k] = widen(out)
		scale = math.Max(scale, absMax64(hus[k]))
	}
	var dis disagreements
	for k, p := range ps {
		rep, err := c.compare(nil, θ64, p.d, hus[k], scale)
		if err != nil {
			t.Fatalf("CheckHv: %v", err)
			return
		}
		if rep != "" {
			rep = strings.Replace(rep, "AD ", "hv ", 1)
			dis.add(fmt.Sprintf("H·u %s disagrees with finite differences of the gradient: %s", p.label, rep))
		}
	}
	if rep := dis.report(len(ps)); rep != "" {
		t.Errorf("CheckHv: %s", rep)
		return
	}
	// A product through a solver is symmetric only to its accuracy,
	// which the differences held to c.rel.
	symRel := max(num.symRel, c.rel)
	for a := range ps {
		for b := a + 1; b < len(ps); b++ {
			x, y := dot64(hus[a], ps[b].d), dot64(ps[a].d, hus[b])
			if tol := symRel*(absDot64(hus[a], ps[b].d)+absDot64(ps[a].d, hus[b])) + num.symAbs; !(math.Abs(x-y) <= tol) {
				t.Errorf("CheckHv: Hessian not symmetric: ⟨H u, v⟩ = %.12g, ⟨u, H v⟩ = %.12g (tolerance %.3g), u %s, v %s", x, y, tol, ps[a].label, ps[b].label)
				return
			}
		}
	}
}
