package optimisers

import (
	"iter"
	"math"
	"reflect"

	"github.com/flatkit/flatkit/internal/pkgerr"
)

// Rule is one step of an optimisation rule, written as a loop over a range of
// the flat buffer. It is the whole contract a rule must meet. The optional
// interfaces below let a rule do more, or do it faster: Fused, Global,
// Gate, Observer, Leafwise and Validator.
//
// A rule keeps Slots() state vectors. Each is laid out like θ: the state of
// θ[i] is state[k][i], so an optimiser's state shares the parameters' layout
// and can be viewed, saved and sliced by path like θ itself.
//
// The optimiser calls the methods once per trained leaf, with θ, dx and every
// state[k] sliced to that leaf's range:
//
//   - Init sets the state of a range. It is called with θ as it stands just
//     before the rule's first Apply (state vectors start at zero).
//   - Apply turns the update dx into the rule's update, in place: a modifier
//     such as ClipValue or WeightDecay rewrites dx, a descent rule such as
//     Adam replaces it by the step it wants to take. After the last rule of a
//     chain the optimiser sets θ -= dx. Apply must not write θ.
//
// t is the rule's own count of updates, 1 for its first. A rule behind
// AccumGrad runs only every n-th call, and SkipNonFinite may skip an
// update. Either way the rule sees only the updates it took part in, which
// is what bias corrections need.
//
// Apply, Fuse, Init and Observe must treat the elements of their range
// independently, unless the rule implements Leafwise. An optimiser may hand
// them any part of a leaf, say a chunk of a large leaf for another
// goroutine. It hands a Leafwise rule one whole leaf per call.
//
// Rules are values. The hyperparameters are exported fields, tagged
// `hyper:"name"` with the name PyTorch uses. A rule never changes itself
// while it runs, so one rule can serve several optimisers at once.
type Rule interface {
	Slots() int
	Init(state [][]float32, θ []float32)
	Apply(state [][]float32, θ, dx []float32, t int)
}

// Leafwise is implemented by rules whose Apply needs one whole leaf per
// call, because it looks at the leaf as a whole. ClipNorm, for one,
// rescales by the leaf's norm.
type Leafwise interface {
	Rule
	Leafwise()
}

// Fused is implemented by descent rules that can update θ directly from the
// gradient in one pass. Fuse(state, θ, g, t) has the effect of Apply with
// dx a copy of g, followed by θ -= dx, up to rounding. It does so without
// the copy and without writing g. The optimiser calls Fuse instead of
// Apply when the rule is the last one of its chain that changes the
// update. So Adam on its own is a single pass that reads θ, g, m, v and
// writes θ, m, v.
type Fused interface {
	Rule
	Fuse(state [][]float32, θ, g []float32, t int)
}

// Global is implemented by rules that need one quantity computed over every
// range they serve before they can apply to any of them, such as the global
// norm. The optimiser first folds Reduce over all ranges, with acc starting
// at 0 and the update as it stands at the rule's position in the chain. It
// then calls ApplyGlobal on each range with the total. It costs one extra
// pass over the update. Apply on its own behaves as if its range were
// everything.
type Global interface {
	Rule
	Reduce(acc float64, θ, dx []float32) float64
	ApplyGlobal(state [][]float32, θ, dx []float32, t int, total float64)
}

// Gate is implemented by rules that decide, from their count t alone,
// whether the rules after them run in this update; AccumGrad is one. When
// Pass(t) is false, the gate's Apply still runs and may absorb dx into its
// state. But no later rule runs, θ does not change, and only the rules up
// to the gate count the update.
type Gate interface {
	Rule
	Pass(t int) bool
}

// Observer is implemented by rules that watch the parameters rather than
// change the update, such as EMA. Wherever it stands in a chain, an
// optimiser calls Observe with each range of θ after that range has been
// updated, and not at all for updates that changed nothing. Its Apply, used
// when a chain is applied by hand, observes θ - dx and leaves dx alone.
type Observer interface {
	Rule
	Observe(state [][]float32, θ []float32, t int)
}

// Validator is implemented by rules that can check their hyperparameters.
// Setup calls it; every rule in this package implements it.
type Validator interface {
	Validate() error
}

// validate checks r and, inside chains, every rule in it.
func validate(r Rule) error {
	if r == nil {
		return errorf("nil rule")
	}
	if v, ok := r.(Validator); ok {
		if err := v.Validate(); err != nil {
			if !pkgerr.Of(err, prefix) {
				return errorf("%T: %w", r, err) // a user's rule: its error gets the prefix too
			}
			return err
		}
	}
	return nil
}

// hyperError reports a hyperparameter out of its domain, naming the rule, the
// field, its value and what it should be.
func hyperError(rule, field string, v float64, want string) error {
	return errorf("%s: %s = %v, want %s", rule, field, v, want)
}

// checks is a small accumulator of hyperparameter checks: the first failure
// is kept and later checks are no-ops.
type checks struct {
	rule string
	err  error
}

// nonNeg requires a finite v ≥ 0.
func (c *checks) nonNeg(field string, v float64) {
	if c.err == nil && !(v >= 0 && !math.IsInf(v, 1)) {
		c.err = hyperError(c.rule, field, v, "a finite value ≥ 0")
	}
}

// nonNegInf requires v ≥ 0, +Inf allowed (a threshold that never bites).
func (c *checks) nonNegInf(field string, v float64) {
	if c.err == nil && !(v >= 0) {
		c.err = hyperError(c.rule, field, v, "a value ≥ 0 (+Inf allowed)")
	}
}

// beta requires 0 ≤ v < 1.
func (c *checks) beta(field string, v float64) {
	if c.err == nil && !(v >= 0 && v < 1) {
		c.err = hyperError(c.rule, field, v, "0 ≤ "+field+" < 1")
	}
}

// unit requires 0 ≤ v ≤ 1.
func (c *checks) unit(field string, v float64) {
	if c.err == nil && !(v >= 0 && v <= 1) {
		c.err = hyperError(c.rule, field, v, "0 ≤ "+field+" ≤ 1")
	}
}

// hyperTag is the struct tag that names a hyperparameter for Adjust and
// schedules, e.g. `hyper:"lr"`.
const hyperTag = "hyper"

// hyperName is f's name as a hyperparameter: its hyper tag ("" when it has
// none) when f is an exported float64 field; ok is false otherwise.
func hyperName(f reflect.StructField) (name string, ok bool) {
	if f.Type.Kind() != reflect.Float64 || !f.IsExported() {
		return "", false
	}
	return f.Tag.Get(hyperTag), true
}

// namedHypers yields the name and the field of each hyperparameter of r
// that is tagged with a name, in field order; none when r is not a struct.
func namedHypers(r Rule) iter.Seq2[string, reflect.Value] {
	return func(yield func(string, reflect.Value) bool) {
		rv := reflect.ValueOf(r)
		if rv.Kind() != reflect.Struct {
			return
		}
		for i := 0; i < rv.NumField(); i++ {
			if n, ok := hyperName(rv.Type().Field(i)); ok && n != "" {
				if !yield(n, rv.Field(i)) {
					return
				}
			}
		}
	}
}

// withHyper returns a copy of r with every float64 field tagged hyper:"name"
// set to v, in r and, for chains, in every rule inside, together with the
// number of fields it set. r itself is not changed. The copy must still be
// validated; a name no rule has sets nothing.
func withHyper(r Rule, name string, v float64) (Rule, int) {
	if c, ok := r.(ChainRule); ok {
		rules := make([]Rule, len(c.Rules))
		n := 0
		for i, sub := range c.Rules {
			var k int
			rules[i], k = withHyper(sub, name, v)
			n += k
		}
		return ChainRule{Rules: rules}, n
	}
	if sr, ok := r.(ScheduledRule); ok {
		inner, n := withHyper(sr.Rule, name, v)
		sr.Rule = inner
		return sr, n
	}
	rv := reflect.ValueOf(r)
	if rv.Kind() != reflect.Struct {
		return r, 0
	}
	cp := reflect.New(rv.Type()).Elem()
	cp.Set(rv)
	n := 0
	for i := 0; i < cp.NumField(); i++ {
		f := rv.Type().Field(i)
		if hn, ok := hyperName(f); ok && hn == name {
			cp.Field(i).SetFloat(v)
			n++
		}
	}
	if n == 0 {
		return r, 0
	}
	return cp.Interface().(Rule), n
}

// hyper returns the value of the float64 field tagged hyper:"name" in r (the
// first one met, depth first in chains).
func hyper(r Rule, name string) (float64, bool) {
	if c, ok := r.(ChainRule); ok {
		for _, sub := range c.Rules {
			if v, ok := hyper(sub, name); ok {
				return v, true
			}
		}
		return 0, false
	}
	if sr, ok := r.(ScheduledRule); ok {
		return hyper(sr.Rule, name)
	}
	rv := reflect.ValueOf(r)
	if rv.Kind() != reflect.Struct {
		return 0, false
	}
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Type().Field(i)
		if hn, ok := hyperName(f); ok && hn == name {
			return rv.Field(i).Float(), true
		}
	}
	return 0, false
}

// sqrt32 is the correctly rounded float32 square root (the compiler turns it
// into one instruction).
func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// sign32 is -1, 0 or 1 by the sign of x, and NaN for NaN (torch.sign).
func sign32(x float32) float32 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x // ±0 or NaN
}

// pow is β^t for a rule's bias correction.
func pow(β float64, t int) float64 { return math.Pow(β, float64(t)) }
