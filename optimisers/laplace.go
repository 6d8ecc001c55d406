package optimisers

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/flatkit/flatkit/layout"
)

// Laplace is the Gaussian approximation of a posterior, or the asymptotic
// distribution of a maximum-likelihood fit, at an optimum θ̂: θ ~
// N(θ̂, H⁻¹), H the Hessian of the negative log-likelihood at θ̂ (the
// observed Fisher information). Make one with NewLaplace.
//
// Directions in which H is nearly singular are not determined by the data:
// a combination of parameters that the likelihood does not see, such as two
// rates that enter only as their product. Null lists them. The covariance
// is then the pseudo-inverse over the determined directions, and every
// parameter that takes part in a null direction has an infinite standard
// error.
type Laplace struct {
	// Names names each element of θ by layout path: "k" for a scalar leaf,
	// "w[3]" for element 3 of a larger one, "θ[i]" without a layout.
	Names []string
	// Cov is the covariance H⁻¹ (the pseudo-inverse when Null is not
	// empty).
	Cov *mat.SymDense
	// StdErr is the square root of Cov's diagonal, +Inf for an element with
	// a component in a null direction.
	StdErr []float64
	// Eigenvalues are H's, ascending.
	Eigenvalues []float64
	// Null holds the near-null directions, smallest eigenvalue first.
	Null []NullDirection

	lay *layout.Layout
}

// NullDirection is an eigenvector of the Hessian whose eigenvalue is below
// the relative threshold: a parameter combination the data do not pin down.
type NullDirection struct {
	Eigenvalue float64
	// Vector is the unit eigenvector over θ.
	Vector []float64
	// Leading are the elements with the largest components, largest first:
	// every element whose component is at least a tenth of the largest.
	Leading []Component
}

// Component is one element's weight in a NullDirection.
type Component struct {
	Name   string
	Index  int
	Weight float64
}

// LaplaceRTol is NewLaplace's default relative threshold: an eigenvalue
// below LaplaceRTol·λmax in magnitude is near-null. It is about the square
// root of float64's epsilon, the accuracy of a Hessian built from
// differences or from float32 products is worse, so pass a larger one for
// those.
const LaplaceRTol = 1e-8

// NewLaplace returns the Laplace approximation for the Hessian h of a
// negative log-likelihood at its minimum. h must be square and symmetric
// to a relative 1e-6 of its largest entry (it is symmetrised before use);
// lay, when not nil, names the elements and must have lay.Len() = h's size.
// rtol is the relative threshold for near-null eigenvalues; zero means
// LaplaceRTol. An eigenvalue below −rtol·λmax means h is not at a minimum,
// and is an error that names the leading parameters of its eigenvector.
// The inverse is taken through the symmetric eigen-decomposition, so a
// singular h yields Null directions rather than an error.
func NewLaplace(h mat.Matrix, lay *layout.Layout, rtol float64) (*Laplace, error) {
	if h == nil {
		return nil, errorf("NewLaplace: the Hessian is nil")
	}
	r, c := h.Dims()
	switch {
	case r != c:
		return nil, errorf("NewLaplace: the Hessian is %d×%d, want a square matrix", r, c)
	case r == 0:
		return nil, errorf("NewLaplace: the Hessian is empty")
	case lay != nil && lay.Len() != r:
		return nil, errorf("NewLaplace: the Hessian is %d×%d but the layout has %d elements", r, r, lay.Len())
	case rtol < 0 || math.IsNaN(rtol) || rtol >= 1:
		return nil, errorf("NewLaplace: rtol = %v, want 0 ≤ rtol < 1 (0 means %g)", rtol, LaplaceRTol)
	}
	if rtol == 0 {
		rtol = LaplaceRTol
	}
	n := r
	big := 0.0
	for i := range n {
		for j := range n {
			v := h.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, errorf("NewLaplace: the Hessian's entry (%d, %d) is %v, want finite values", i, j, v)
			}
			big = math.Max(big, math.Abs(v))
		}
	}
	sym := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			a, b := h.At(i, j), h.At(j, i)
			if math.Abs(a-b) > 1e-6*big {
				return nil, errorf("NewLaplace: the Hessian is not symmetric: (%d, %d) = %g but (%d, %d) = %g, want equal to 1e-6 of the largest entry %g", i, j, a, j, i, b, big)
			}
			sym.SetSym(i, j, (a+b)/2)
		}
	}
	l := &Laplace{Names: elementNames(lay, n), lay: lay}
	var eig mat.EigenSym
	if !eig.Factorize(sym, true) {
		return nil, errorf("NewLaplace: the eigen-decomposition of the %d×%d Hessian did not converge", n, n)
	}
	l.Eigenvalues = eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	λmax := math.Max(math.Abs(l.Eigenvalues[0]), math.Abs(l.Eigenvalues[n-1]))
	if λmax == 0 {
		λmax = 1
	}
	cut := rtol * λmax
	if λ := l.Eigenvalues[0]; λ < -cut {
		d := l.direction(λ, mat.Col(nil, 0, &vecs))
		return nil, errorf("NewLaplace: the Hessian is indefinite: eigenvalue %g (λmax %g) along %s; want a minimum, where every eigenvalue is ≥ 0", λ, λmax, d.describe())
	}
	l.Cov = mat.NewSymDense(n, nil)
	l.StdErr = make([]float64, n)
	inNull := make([]bool, n)
	for k, λ := range l.Eigenvalues {
		u := mat.Col(nil, k, &vecs)
		if λ <= cut {
			l.Null = append(l.Null, l.direction(λ, u))
			for i, v := range u {
				if v*v >= 1e-6 {
					inNull[i] = true
				}
			}
			continue
		}
		for i := range n {
			for j := i; j < n; j++ {
				l.Cov.SetSym(i, j, l.Cov.At(i, j)+u[i]*u[j]/λ)
			}
		}
	}
	for i := range n {
		l.StdErr[i] = math.Sqrt(l.Cov.At(i, i))
		if inNull[i] {
			l.StdErr[i] = math.Inf(1)
		}
	}
	return l, nil
}

// direction describes the eigenvector u of eigenvalue λ.
func (l *Laplace) direction(λ float64, u []float64) NullDirection {
	d := NullDirection{Eigenvalue: λ, Vector: u}
	top := 0.0
	for _, v := range u {
		top = math.Max(top, math.Abs(v))
	}
	for i, v := range u {
		if math.Abs(v) >= top/10 {
			d.Leading = append(d.Leading, Component{Name: l.Names[i], Index: i, Weight: v})
		}
	}
	sort.SliceStable(d.Leading, func(a, b int) bool { return math.Abs(d.Leading[a].Weight) > math.Abs(d.Leading[b].Weight) })
	return d
}

// describe writes the combination, as "0.707·a − 0.707·b".
func (d NullDirection) describe() string {
	var b strings.Builder
	for k, c := range d.Leading {
		w := c.Weight
		switch {
		case k == 0 && w < 0:
			b.WriteString("−")
		case k > 0 && w < 0:
			b.WriteString(" − ")
		case k > 0:
			b.WriteString(" + ")
		}
		fmt.Fprintf(&b, "%.3g·%s", math.Abs(w), c.Name)
	}
	return b.String()
}

// Warning returns "" when every direction is determined, and otherwise a
// sentence naming each near-null combination of parameters.
func (l *Laplace) Warning() string {
	if len(l.Null) == 0 {
		return ""
	}
	parts := make([]string, len(l.Null))
	for k, d := range l.Null {
		parts[k] = fmt.Sprintf("%s (eigenvalue %.3g)", d.describe(), d.Eigenvalue)
	}
	return fmt.Sprintf("the data do not determine %d parameter combination(s): %s; their parameters have infinite standard errors",
		len(l.Null), strings.Join(parts, "; "))
}

// StdErrOf returns the standard errors of the leaf or subtree at path, in
// the order of θ. It needs the layout given to NewLaplace.
func (l *Laplace) StdErrOf(path string) ([]float64, error) {
	if l.lay == nil {
		return nil, errorf("Laplace.StdErrOf(%q): NewLaplace was given no layout", path)
	}
	lo, hi, err := l.lay.Range(path)
	if err != nil {
		return nil, errorf("Laplace.StdErrOf: %w", err)
	}
	return l.StdErr[lo:hi], nil
}

// elementNames names θ's n elements by lay's paths.
func elementNames(lay *layout.Layout, n int) []string {
	names := make([]string, n)
	if lay == nil {
		for i := range names {
			names[i] = fmt.Sprintf("θ[%d]", i)
		}
		return names
	}
	for _, lf := range lay.Leaves() {
		size := lf.Size()
		for k := range size {
			if size == 1 {
				names[lf.Offset] = lf.Path
			} else {
				names[lf.Offset+k] = fmt.Sprintf("%s[%d]", lf.Path, k)
			}
		}
	}
	return names
}

// HessianFromHv builds the n×n Hessian at θ from n products with the unit
// vectors, hv the form NewtonCG takes. It returns the symmetrised matrix
// ½(H + Hᵀ) and the asymmetry max|Hᵢⱼ − Hⱼᵢ| / max|Hᵢⱼ| before, which is
// rounding for a right hv and large for a wrong one.
func HessianFromHv(θ []float32, hv func(θ, v, hv []float32) error) (*mat.SymDense, float64, error) {
	n := len(θ)
	if n == 0 || hv == nil {
		return nil, 0, errorf("HessianFromHv: want a non-empty θ and a non-nil hv, have len(θ) = %d", n)
	}
	h := mat.NewSymDense(n, nil)
	asym, err := newHvScratch(n).hessian(θ, hv, h)
	if err != nil {
		return nil, 0, err
	}
	return h, asym, nil
}
