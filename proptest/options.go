package proptest

import "github.com/flatkit/flatkit/internal/funcopt"

// Option adjusts a derivative check: CheckGrad, CheckJVP, CheckTranspose or
// CheckHVP. It sets the check's finite-difference steps, its tolerance or
// its directions. Tolerances are options of a check, never package
// variables. An option that does not apply to the check it is given to is
// a fatal error naming both. Steps and Tol apply to the finite-difference
// checks: CheckGrad, CheckJVP and CheckHVP. TransposeTol and Exact apply
// to CheckTranspose only. Directions and FullUpTo apply to every check.
type Option func(*checkConfig)

// optScope is the checks an option applies to, when not all of them:
// optFD for the finite-difference checks, optTranspose for CheckTranspose.
type optScope uint8

const (
	optFD optScope = 1 << iota
	optTranspose
)

type checkConfig struct {
	steps      []float32
	rel, abs   float64
	dirs       int
	full       int
	exact      bool    // CheckTranspose: dyadic directions, equality
	trel, tabs float64 // CheckTranspose's tolerance
	// the first option given that applies to the finite-difference
	// checks only, and to CheckTranspose only
	fdOnly, transposeOnly string
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
func Steps(h ...float32) Option {
	return func(c *checkConfig) { c.mark(optFD, "Steps"); c.steps = append([]float32(nil), h...) }
}

// Tol sets the tolerance of the comparisons; the default is 2e-2 and 2e-3.
// |ad − fd| must be within rel·(|ad| + |fd|) + abs·scale, where scale is 1
// plus the size of the values involved.
func Tol(rel, abs float64) Option {
	return func(c *checkConfig) { c.mark(optFD, "Tol"); c.rel, c.abs = rel, abs }
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
func TransposeTol(rel, abs float64) Option {
	return func(c *checkConfig) { c.mark(optTranspose, "TransposeTol"); c.trel, c.tabs = rel, abs }
}

// Exact makes CheckTranspose demand ⟨J v, u⟩ = ⟨v, Jᵀ u⟩ exactly. It suits
// ops whose derivatives only copy, gather, scale by powers of two and add,
// or multiply a few such numbers. The random directions u are then dyadic:
// multiples of 1/8 in [−8, 8]. So are the random v, above FullUpTo. With a
// dyadic θ both sides are then computed without rounding, and any
// difference is a wrong rule, however small. It applies to CheckTranspose
// only.
func Exact() Option {
	return func(c *checkConfig) { c.mark(optTranspose, "Exact"); c.exact = true }
}

// mark records the option name of the given scope, if it is the first.
func (c *checkConfig) mark(s optScope, name string) {
	switch {
	case s == optFD && c.fdOnly == "":
		c.fdOnly = name
	case s == optTranspose && c.transposeOnly == "":
		c.transposeOnly = name
	}
}

// configure applies opts for the check named check. The check accepts the
// options of scope allow and those of every check. An option of another
// scope is a fatal error.
func configure(t T, check string, allow optScope, opts []Option) checkConfig {
	t.Helper()
	c := configureAll(opts)
	switch {
	case c.fdOnly != "" && allow&optFD == 0:
		t.Fatalf("%s: option %s applies to CheckGrad, CheckJVP and CheckHVP only", check, c.fdOnly)
	case c.transposeOnly != "" && allow&optTranspose == 0:
		t.Fatalf("%s: option %s applies to CheckTranspose only", check, c.transposeOnly)
	}
	return c
}

func configureAll(opts []Option) checkConfig {
	c := checkConfig{steps: defaultSteps, rel: DefaultRelTol, abs: DefaultAbsTol, dirs: DefaultDirections, full: DefaultFullUpTo,
		trel: DefaultTransposeRelTol, tabs: DefaultTransposeAbsTol}
	funcopt.Apply(&c, opts)
	if len(c.steps) == 0 {
		c.steps = defaultSteps
	}
	c.dirs = max(c.dirs, 1)
	return c
}
