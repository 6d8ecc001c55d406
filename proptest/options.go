package proptest

import "github.com/flatkit/flatkit/internal/funcopt"

// The options of a derivative check are typed, so that an option that does
// not apply to a check does not compile. Option fits every check. FDOption
// fits the checks against finite differences: CheckGrad, CheckJVP and
// CheckHVP. TransposeOption fits CheckTranspose only. Tolerances are
// options of a check, never package variables.

// Option is an option of every derivative check: Directions and FullUpTo,
// which set the directions it runs along.
type Option func(*checkConfig)

// FDOption is an option of the checks against finite differences only:
// Steps and Tol.
type FDOption func(*checkConfig)

// TransposeOption is an option of CheckTranspose only: TransposeTol and
// Exact.
type TransposeOption func(*checkConfig)

// FDCheckOption is an option of CheckGrad, CheckJVP and CheckHVP: an
// Option or an FDOption.
type FDCheckOption interface {
	applier
	fdCheckOption()
}

// TransposeCheckOption is an option of CheckTranspose: an Option or a
// TransposeOption.
type TransposeCheckOption interface {
	applier
	transposeCheckOption()
}

// applier is what every option interface has: how it sets the check.
type applier interface{ apply(*checkConfig) }

// Which checks each kind of option applies to.
var (
	_ FDCheckOption        = Option(nil)
	_ TransposeCheckOption = Option(nil)
	_ FDCheckOption        = FDOption(nil)
	_ TransposeCheckOption = TransposeOption(nil)
)

func (o Option) apply(c *checkConfig)          { funcopt.Call(o, c) }
func (o FDOption) apply(c *checkConfig)        { funcopt.Call(o, c) }
func (o TransposeOption) apply(c *checkConfig) { funcopt.Call(o, c) }

func (Option) fdCheckOption()                 {}
func (Option) transposeCheckOption()          {}
func (FDOption) fdCheckOption()               {}
func (TransposeOption) transposeCheckOption() {}

type checkConfig struct {
	steps      []float32
	rel, abs   float64
	dirs       int
	full       int
	exact      bool    // CheckTranspose: dyadic directions, equality
	trel, tabs float64 // CheckTranspose's tolerance
}

// Defaults of the derivative checks; see the options.
const (
	DefaultRelTol     = 2e-2
	DefaultAbsTol     = 2e-3
	DefaultDirections = 4
	DefaultFullUpTo   = 16

	// CheckTranspose's default tolerance (TransposeTol).
	DefaultTransposeRelTol = 1e-4
	DefaultTransposeAbsTol = 1e-6
)

// defaultSteps are the finite-difference steps tried, largest first.
var defaultSteps = []float32{1e-2, 3e-3}

// Steps sets the finite-difference steps tried, largest first. The default
// is 1e-2 and 3e-3. A derivative passes if it agrees with the central
// difference at any of them. So a function whose curvature spoils one step,
// or whose rounding spoils the other, is still checked fairly. It also
// passes if it agrees with the Richardson extrapolation of the first two.
// The extrapolation cancels the h² error that a large third derivative
// along the direction leaves at both.
func Steps(h ...float32) FDOption {
	return func(c *checkConfig) { c.steps = append([]float32(nil), h...) }
}

// Tol sets the tolerance of the comparisons; the default is 2e-2 and 2e-3.
// |ad − fd| must be within rel·(|ad| + |fd|) + abs·scale, where scale is 1
// plus the size of the values involved.
func Tol(rel, abs float64) FDOption {
	return func(c *checkConfig) { c.rel, c.abs = rel, abs }
}

// Directions sets how many random directions are checked when θ is larger
// than FullUpTo. The default is 4.
func Directions(n int) Option {
	return func(c *checkConfig) { c.dirs = n }
}

// FullUpTo sets the largest θ checked along every coordinate direction; the
// default is 16. Up to it, each component of the gradient is compared on
// its own, as is each column of the Jacobian or Hessian. Above it the
// check runs along random directions. They catch an error spread over many
// components, but may miss one confined to a single component of a large
// θ. Pass FullUpTo(len(θ)) to check every component.
func FullUpTo(n int) Option {
	return func(c *checkConfig) { c.full = n }
}

// TransposeTol sets CheckTranspose's tolerance; the default is 1e-4 and
// 1e-6. |⟨J v, u⟩ − ⟨v, Jᵀ u⟩| must be within rel·scale + abs. scale is
// the size of the terms summed: Σ|(J v)_i u_i| + Σ|v_i (Jᵀ u)_i|.
func TransposeTol(rel, abs float64) TransposeOption {
	return func(c *checkConfig) { c.trel, c.tabs = rel, abs }
}

// Exact makes CheckTranspose demand ⟨J v, u⟩ = ⟨v, Jᵀ u⟩ exactly. It suits
// ops whose derivatives only copy, gather, scale by powers of two and add,
// or multiply a few such numbers. The random directions u are then dyadic:
// multiples of 1/8 in [−8, 8]. So are the random v, above FullUpTo. With a
// dyadic θ both sides are then computed without rounding, and any
// difference is a wrong rule, however small.
func Exact() TransposeOption {
	return func(c *checkConfig) { c.exact = true }
}

// configure applies opts to the defaults; a nil option is skipped.
func configure[O applier](opts []O) checkConfig {
	c := checkConfig{steps: defaultSteps, rel: DefaultRelTol, abs: DefaultAbsTol, dirs: DefaultDirections, full: DefaultFullUpTo,
		trel: DefaultTransposeRelTol, tabs: DefaultTransposeAbsTol}
	for _, o := range opts {
		if any(o) != nil {
			o.apply(&c)
		}
	}
	if len(c.steps) == 0 {
		c.steps = defaultSteps
	}
	c.dirs = max(c.dirs, 1)
	return c
}
