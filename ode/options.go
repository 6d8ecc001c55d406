package ode

import (
	"fmt"
	"math"
	"slices"

	"github.com/flatkit/flatkit/internal/funcopt"
)

// The options of a call are typed, so that an option that does not apply
// to a call does not compile; the package doc's Options section has the
// table of kinds and calls.

// Option is an option of every call: a tolerance, a step-size or step-count
// setting.
type Option func(*options)

// SaveOption is an option of the solves only: which states are saved.
type SaveOption func(*options)

// WorkersOption is Workers: how many goroutines run an ensemble's shards.
type WorkersOption func(*options)

// BatchOption is an option of the ensemble gradients only: which
// trajectories are differentiated and what is kept of each.
type BatchOption func(*options)

// SolveOption is an option of Solve, NewIntegrator and SolveShard. Every
// SolveOption is an EnsembleSolveOption.
type SolveOption interface {
	EnsembleSolveOption
	solveOption()
}

// EnsembleSolveOption is an option of Ensemble.Solve.
type EnsembleSolveOption interface {
	applier
	ensembleSolveOption()
}

// GradientOption is an option of Gradient and NewGradientSolver. Every
// GradientOption is a GradientShardOption.
type GradientOption interface {
	GradientShardOption
	gradientOption()
}

// GradientShardOption is an option of GradientShard. Every
// GradientShardOption is an EnsembleGradientOption.
type GradientShardOption interface {
	EnsembleGradientOption
	gradientShardOption()
}

// EnsembleGradientOption is an option of Ensemble.Gradient.
type EnsembleGradientOption interface {
	applier
	ensembleGradientOption()
}

// applier is what every option interface has: how it sets the options.
type applier interface{ apply(*options) }

// Which calls each kind of option applies to.
var (
	_ SolveOption    = Option(nil)
	_ GradientOption = Option(nil)
	_ SolveOption    = SaveOption(nil)

	_ EnsembleSolveOption    = WorkersOption(nil)
	_ EnsembleGradientOption = WorkersOption(nil)
	_ GradientShardOption    = BatchOption(nil)
)

func (o Option) apply(c *options)        { funcopt.Call(o, c) }
func (o SaveOption) apply(c *options)    { funcopt.Call(o, c) }
func (o WorkersOption) apply(c *options) { funcopt.Call(o, c) }
func (o BatchOption) apply(c *options)   { funcopt.Call(o, c) }

func (Option) solveOption()                   {}
func (Option) ensembleSolveOption()           {}
func (Option) gradientOption()                {}
func (Option) gradientShardOption()           {}
func (Option) ensembleGradientOption()        {}
func (SaveOption) solveOption()               {}
func (SaveOption) ensembleSolveOption()       {}
func (WorkersOption) ensembleSolveOption()    {}
func (WorkersOption) ensembleGradientOption() {}
func (BatchOption) gradientShardOption()      {}
func (BatchOption) ensembleGradientOption()   {}

// OptionsFor returns common options as options of the call that takes O,
// so that a stored list of Options passes to any call. O must be one of the
// option interfaces, such as SolveOption. Another O is a bug: OptionsFor
// panics.
//
//	res, err := ens.Solve(ctx, m, append(ode.OptionsFor[ode.EnsembleSolveOption](opts), ode.Workers(4))...)
func OptionsFor[O any](opts []Option) []O {
	if _, ok := any(Option(nil)).(O); !ok {
		var o O
		panic(fmt.Sprintf("ode: OptionsFor[%s]: want one of the option interfaces, such as SolveOption", fmt.Sprintf("%T", &o)[1:]))
	}
	out := make([]O, len(opts))
	for i, o := range opts {
		out[i] = any(o).(O)
	}
	return out
}

type options struct {
	rtol, atol float64
	atolv      []float64 // per-component absolute tolerances, or nil (TolPerComponent)
	rtolv      []float64 // per-component relative tolerances, or nil (internal: augmented systems)
	saveAt     []float64 // sorted ascending copy
	saveAtSet  bool
	dense      bool
	everyStep  bool
	maxSteps   int
	tstops     []float64 // sorted ascending copy
	dt0        float64
	fixed      float64
	workers    int // Workers (ensemble_options.go); 0: not given (GOMAXPROCS)
	// A gradient's, from the Sensitivity's fields (sens_options.go).
	adjTol, quadTol Tolerance // the backward solve's and the quadratures'; zero: the forward ones
	finiteDiff      bool      // JVP and VJP by finite differences where the Problem has none
	// The ensemble gradients' (ensemble_options.go).
	indices    []int // Indices: the trajectories asked for, in order
	indicesSet bool
	perU0      bool  // PerTrajectoryU0
	err        error // first invalid option
}

// Default values of the options.
const (
	DefaultRelTol   = 1e-6
	DefaultAbsTol   = 1e-8
	DefaultMaxSteps = 100000
)

func defaultOptions() options {
	return options{rtol: DefaultRelTol, atol: DefaultAbsTol, maxSteps: DefaultMaxSteps}
}

// parseOptions applies opts to the defaults; a nil option is skipped.
func parseOptions[O applier](opts []O) (options, error) {
	o := defaultOptions()
	for _, op := range opts {
		if any(op) != nil {
			op.apply(&o)
		}
	}
	return o, o.err
}

func (o *options) fail(format string, args ...any) {
	if o.err == nil {
		o.err = errorf(""+format, args...)
	}
}

// Tol sets the relative and absolute error tolerances of adaptive methods;
// the defaults are 1e-6 and 1e-8. A step is accepted when the RMS over the
// components of err_i / w_i is at most 1, with the weight
//
//	w_i = abs + rel·max(|u_i before|, |u_i after|).
//
// rel must be ≥ 0 and abs > 0: a zero abs divides by zero wherever a
// component is 0. With a float32 state, rel much below 1e-6 cannot be met
// and ends in dt underflow.
func Tol(rel, abs float64) Option {
	return func(o *options) {
		if !(rel >= 0) || !(abs > 0) || math.IsInf(rel, 0) || math.IsInf(abs, 0) {
			o.fail("Tol(%g, %g): want finite rel ≥ 0 and abs > 0", rel, abs)
			return
		}
		o.rtol, o.atol = rel, abs
	}
}

// TolPerComponent is Tol with one absolute tolerance per component of the
// state; len(abs) must equal the dimension. It suits states whose
// components live on different scales, such as Robertson's y2 ~ 1e-5
// beside y1 ~ 1. An abs of +Inf leaves that component out of the error
// control.
func TolPerComponent(rel float64, abs []float64) Option {
	c := slices.Clone(abs)
	return func(o *options) {
		if !(rel >= 0) || math.IsInf(rel, 0) {
			o.fail("TolPerComponent(%g, …): want a finite rel ≥ 0", rel)
			return
		}
		if len(c) == 0 {
			o.fail("TolPerComponent: abs is empty, want one tolerance per component")
			return
		}
		for i, a := range c {
			if !(a > 0) {
				o.fail("TolPerComponent: abs[%d] = %g, want abs > 0", i, a)
				return
			}
		}
		o.rtol, o.atolv = rel, c
		o.atol = slices.Min(c)
	}
}

// tolAt returns the absolute and relative tolerance of component i.
func (o *options) tolAt(i int) (atol, rtol float64) {
	atol, rtol = o.atol, o.rtol
	if o.atolv != nil {
		atol = o.atolv[i]
	}
	if o.rtolv != nil {
		rtol = o.rtolv[i]
	}
	return atol, rtol
}

// perComponent reports whether the tolerances differ between components.
func (o *options) perComponent() bool { return o.atolv != nil || o.rtolv != nil }

// SaveAt saves the state exactly at the times ts, evaluated through the
// method's dense interpolant; steps are never shortened for them. With
// SaveAt the start and the end are saved only if listed. SaveAt() with no
// times saves nothing, and the final state stays readable from an
// Integrator. Times must lie in the span. Their order does not matter:
// they are saved in the order of integration.
func SaveAt(ts ...float64) SaveOption {
	c := sortedTimes(ts)
	return func(o *options) {
		if o.finiteTimes("SaveAt", c) {
			o.saveAt, o.saveAtSet = c, true
		}
	}
}

// Dense keeps every step's interpolation polynomial so that Solution.At can
// evaluate the solution anywhere in the span.
func Dense() SaveOption { return func(o *options) { o.dense = true } }

// SaveEveryStep saves the start and the state after every accepted step.
// At an event it saves the state at the event time before and after
// Affect.
func SaveEveryStep() SaveOption { return func(o *options) { o.everyStep = true } }

// MaxSteps bounds the number of step attempts of one solve, accepted and
// rejected; the default is 100000. Reaching it ends the solve with Retcode
// MaxStepsReached.
func MaxSteps(n int) Option {
	return func(o *options) {
		if n <= 0 {
			o.fail("MaxSteps(%d): want n > 0", n)
			return
		}
		o.maxSteps = n
	}
}

// TStops makes the integrator land exactly on the times ts, shortening
// steps to hit them. Times outside the span are ignored.
func TStops(ts ...float64) Option {
	c := sortedTimes(ts)
	return func(o *options) {
		if o.finiteTimes("TStops", c) {
			o.tstops = c
		}
	}
}

// InitialStep sets the size of the first step. Its sign is ignored: the
// direction is that of the span. Without it, adaptive methods pick the
// first step with Hairer's heuristic from Hairer, Nørsett and Wanner I,
// section II.4.
func InitialStep(dt float64) Option {
	return func(o *options) {
		if dt, ok := o.stepSize("InitialStep", dt); ok {
			o.dt0 = dt
		}
	}
}

// FixedStep turns adaptivity off: every step has size |dt|, except that
// steps are shortened to land on TStops and T1. RK4 requires it, or
// InitialStep, which RK4 then uses as the fixed step.
func FixedStep(dt float64) Option {
	return func(o *options) {
		if dt, ok := o.stepSize("FixedStep", dt); ok {
			o.fixed = dt
		}
	}
}

// sortedTimes is a sorted copy of ts, made when the option is, so that the
// caller may reuse ts.
func sortedTimes(ts []float64) []float64 {
	c := slices.Clone(ts)
	slices.Sort(c)
	return c
}

// finiteTimes reports whether every time of ts is finite, failing the
// option name otherwise.
func (o *options) finiteTimes(name string, ts []float64) bool {
	for _, t := range ts {
		if math.IsNaN(t) || math.IsInf(t, 0) {
			o.fail("%s: time %g is not finite, want finite times", name, t)
			return false
		}
	}
	return true
}

// stepSize is |dt| and true if that is finite and not 0; otherwise it fails
// the option name.
func (o *options) stepSize(name string, dt float64) (float64, bool) {
	dt = math.Abs(dt)
	if !(dt > 0) || math.IsInf(dt, 0) {
		o.fail("%s(%g): want a finite dt ≠ 0", name, dt)
		return 0, false
	}
	return dt, true
}
