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
	gradAbs    float64     // abs for CheckGrad's comparisons
	num        *numeric    // θ's precision
	eval       fdEvaluator // how the finite differences evaluate f
	dirs       int
	full       int
	exact      bool    // CheckTranspose: dyadic directions, equality
	trel, tabs float64 // CheckTranspose's tolerance
}

// Defaults of the derivative checks of a float32 θ; see the options.
const (
	DefaultRelTol     = 2e-2 // float32; SharpTol's is 1e-3
	DefaultAbsTol     = 2e-3 // of CheckJVP and CheckHVP
	DefaultGradAbsTol = 1e-4 // of CheckGrad
	DefaultDirections = 4
	DefaultFullUpTo   = 16

	// CheckTranspose's default tolerance (TransposeTol).
	DefaultTransposeRelTol = 1e-4
	DefaultTransposeAbsTol = 1e-6
)

// Default tolerances of the derivative checks of a float64 θ; see Tol and
// TransposeTol.
const (
	DefaultRelTol64     = 1e-7
	DefaultAbsTol64     = 2e-7 // of CheckJVP and CheckHVP
	DefaultGradAbsTol64 = 1e-8 // of CheckGrad

	DefaultTransposeRelTol64 = 1e-10
	DefaultTransposeAbsTol64 = 1e-12
)

// defaultSteps are the finite-difference steps of a float32 θ, largest
// first: powers of two, so that the points θ ± h·d are exact.
var defaultSteps = []float32{0x1p-5, 0x1p-6, 0x1p-7}

// defaultSteps64 are those of a float64 θ: smaller, since f is rounded
// far less.
var defaultSteps64 = []float32{0x1p-8, 0x1p-9, 0x1p-10}

// Steps sets the finite-difference steps, largest first. The default is
// 2⁻⁵, 2⁻⁶ and 2⁻⁷ for a float32 θ, and 2⁻⁸, 2⁻⁹ and 2⁻¹⁰ for a float64 θ,
// whose f is rounded far less. A step is how far the largest component of
// the direction moves θ: each direction is scaled by a power of two to make
// its largest component between 1/2 and 1. The check takes central
// differences at every step, in float64, and extrapolates them to step 0
// (Richardson): two steps cancel the h² error, three the h⁴ error too. Of
// the extrapolations of runs of consecutive steps, it takes the one whose
// error it estimates least. The estimate is how far that extrapolation is
// from those of fewer steps, plus the rounding of f. A step that crosses a
// kink spoils the runs that hold it, but not the others. Two noise probes,
// at an eighth and a thirty-second of the smallest step, measure the
// rounding of f. The points of steps that are powers of two are exact in
// θ's precision. A single step has no estimate of its truncation error:
// give it a Tol that allows it.
func Steps(h ...float32) FDOption {
	return func(c *checkConfig) { c.steps = append([]float32(nil), h...) }
}

// Tol sets the tolerance of the comparisons with finite differences. The
// defaults for a float32 θ are DefaultRelTol and DefaultAbsTol (CheckJVP,
// CheckHVP) or DefaultGradAbsTol (CheckGrad); for a float64 θ,
// DefaultRelTol64 and DefaultAbsTol64 or DefaultGradAbsTol64. |ad − fd|
// must be within rel·(|ad| + |fd|) + 2·err + abs·scale, where err is the
// estimated error of fd (see Steps). For CheckGrad, ad is ⟨∇f, d⟩ and scale
// is Σ|∂f/∂θᵢ·dᵢ|, the size of the terms it sums. For CheckJVP and
// CheckHVP, ad is one component of J·d or H·d, and scale is the largest of
// them: a small component is rounded relative to the largest, and float32
// second derivatives are rounded by more than first ones. The defaults
// catch a derivative wrong by 1 % (in its largest components) wherever the
// differences are accurate to a few parts in ten thousand, as they are for
// smooth functions of moderate size in float32
// (TestCheckersCatchRulesWrongByOnePercent). The float64 defaults catch one
// wrong by 1e-6 (TestCheckersCatchRulesWrongByOneIn1e6), and right rules of
// smooth float64 functions pass at Tol(1e-8, 1e-8)
// (TestCheckersPassRightRules64).
// SharpTol is a float32 tolerance that catches a rule wrong by 1 %
// (TestCheckersCatchRulesWrongByOnePercent): relative 1e-3 with the
// default absolute terms. It is not the default because on some right
// rules whose derivatives are far smaller than f's terms (a BatchNorm
// with γ near 0, a LogSumExp weight far below the max) the estimate of
// the differences' error falls short and it raises false alarms; use it
// on functions of moderate conditioning.
func SharpTol() FDOption {
	return func(c *checkConfig) { c.rel = 1e-3 }
}

func Tol(rel, abs float64) FDOption {
	return func(c *checkConfig) { c.rel, c.abs, c.gradAbs = rel, abs, abs }
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
// 1e-6 for a float32 θ, 1e-10 and 1e-12 for a float64 one.
// |⟨J v, u⟩ − ⟨v, Jᵀ u⟩| must be within rel·scale + abs. scale is the size
// of the terms summed: Σ|(J v)_i u_i| + Σ|v_i (Jᵀ u)_i|.
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

// configure applies opts to the defaults of the precision num; a nil
// option is skipped.
func configure[O applier](num *numeric, opts []O) checkConfig {
	c := checkConfig{steps: num.steps, num: num, eval: num.eval, rel: DefaultRelTol, abs: DefaultAbsTol, gradAbs: DefaultGradAbsTol, dirs: DefaultDirections, full: DefaultFullUpTo,
		trel: DefaultTransposeRelTol, tabs: DefaultTransposeAbsTol}
	if num == &num64 {
		c.rel, c.abs, c.gradAbs = DefaultRelTol64, DefaultAbsTol64, DefaultGradAbsTol64
		c.trel, c.tabs = DefaultTransposeRelTol64, DefaultTransposeAbsTol64
	}
	for _, o := range opts {
		if any(o) != nil {
			o.apply(&c)
		}
	}
	if len(c.steps) == 0 {
		c.steps = num.steps
	}
	c.dirs = max(c.dirs, 1)
	return c
}
