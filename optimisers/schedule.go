package optimisers

import (
	"math"
	"slices"
	"strings"
)

// This file: schedules, and the Scheduled wrapper that drives a rule's
// hyperparameter with one.

// Schedule gives the value of a hyperparameter at each update. step is the
// 1-based count of the update being made. The optimiser asks for
// At(Step+1) just before its update number Step+1. State.Step counts the
// updates that changed θ, so behind AccumGrad(n) the schedule moves once
// per n calls.
//
// The schedules below are written in k = step − 1, the number of updates
// already made, so At(1) is the starting value. They give the same values
// as a PyTorch lr_scheduler stepped once after every optimiser step, whose
// epoch counter is k. At must be a pure function of step, cheap, and must
// not allocate: it runs in every update.
type Schedule interface {
	At(step int) float64
}

// ScheduleFunc adapts a function to a Schedule.
type ScheduleFunc func(step int) float64

// At returns f(step).
func (f ScheduleFunc) At(step int) float64 { return f(step) }

// scheduleChecker is implemented by the schedules of this package; Setup
// calls it through the Scheduled rule.
type scheduleChecker interface {
	check() error
}

type constant struct{ v float64 }

// Constant is v at every step.
func Constant(v float64) Schedule { return constant{v} }

func (c constant) At(int) float64 { return c.v }
func (c constant) check() error   { return finiteParam("Constant", "v", c.v) }

type stepDecay struct {
	v     float64
	every int
	γ     float64
}

// StepDecay is v·γ^⌊k/every⌋: v for the first `every` updates, then
// multiplied by γ every `every` updates (torch.optim.lr_scheduler.StepLR
// with step_size = every, gamma = γ).
func StepDecay(v float64, every int, γ float64) Schedule { return stepDecay{v, every, γ} }

func (s stepDecay) At(step int) float64 { return s.v * math.Pow(s.γ, float64((step-1)/s.every)) }

func (s stepDecay) check() error {
	if s.every < 1 {
		return errorf("StepDecay: every = %d, want ≥ 1", s.every)
	}
	return firstErr(finiteParam("StepDecay", "v", s.v), finiteParam("StepDecay", "γ", s.γ))
}

type exponential struct{ v, γ float64 }

// Exponential is v·γᵏ (torch.optim.lr_scheduler.ExponentialLR).
func Exponential(v, γ float64) Schedule { return exponential{v, γ} }

func (s exponential) At(step int) float64 { return s.v * math.Pow(s.γ, float64(step-1)) }

func (s exponential) check() error {
	return firstErr(finiteParam("Exponential", "v", s.v), finiteParam("Exponential", "γ", s.γ))
}

type cosine struct {
	v, floor float64
	n        int
}

// Cosine anneals from v to floor over n updates along half a cosine, and
// stays at floor after:
//
//	floor + (v − floor)·(1 + cos(πk/n))/2
//
// It is torch.optim.lr_scheduler.CosineAnnealingLR with T_max = n and
// eta_min = floor, except that PyTorch's would rise again for k > n.
func Cosine(v, floor float64, n int) Schedule { return cosine{v, floor, n} }

func (s cosine) At(step int) float64 { return cosineAt(s.v, s.floor, step-1, s.n) }

func cosineAt(v, floor float64, k, n int) float64 {
	if k >= n {
		return floor
	}
	return floor + (v-floor)*(1+math.Cos(math.Pi*float64(k)/float64(n)))/2
}

func (s cosine) check() error {
	if s.n < 1 {
		return errorf("Cosine: n = %d, want ≥ 1", s.n)
	}
	return firstErr(finiteParam("Cosine", "v", s.v), finiteParam("Cosine", "floor", s.floor))
}

type linear struct {
	from, to float64
	n        int
}

// Linear goes from `from` to `to` in a straight line over n updates, and
// stays at `to` after:
//
//	from + (to − from)·k/n
//
// It is PyTorch's LinearLR, with values instead of factors.
func Linear(from, to float64, n int) Schedule { return linear{from, to, n} }

func (s linear) At(step int) float64 {
	k := step - 1
	if k >= s.n {
		return s.to
	}
	return s.from + (s.to-s.from)*float64(k)/float64(s.n)
}

func (s linear) check() error {
	if s.n < 1 {
		return errorf("Linear: n = %d, want ≥ 1", s.n)
	}
	return firstErr(finiteParam("Linear", "from", s.from), finiteParam("Linear", "to", s.to))
}

type warmup struct {
	peak float64
	n    int
}

// LinearWarmup rises linearly to peak over the first n updates,
// peak·step/n, so that the first update uses peak/n (never 0) and update n
// uses peak; it stays at peak after.
func LinearWarmup(peak float64, n int) Schedule { return warmup{peak, n} }

func (s warmup) At(step int) float64 {
	if step >= s.n {
		return s.peak
	}
	return s.peak * float64(step) / float64(s.n)
}

func (s warmup) check() error {
	if s.n < 1 {
		return errorf("LinearWarmup: n = %d, want ≥ 1", s.n)
	}
	return finiteParam("LinearWarmup", "peak", s.peak)
}

type warmupCosine struct {
	peak, floor   float64
	warmup, total int
}

// WarmupCosine is a linear warm-up to peak over the first `warmup` updates
// (peak·step/warmup, as LinearWarmup) followed by Cosine from peak to floor,
// reached at update `total`, and floor after:
//
//	step ≤ warmup:          peak·step/warmup
//	warmup < step < total:  floor + (peak − floor)·(1 + cos(π(step − warmup)/(total − warmup)))/2
//	step ≥ total:           floor
//
// warmup = 0 is a plain cosine from peak (at step 0) to floor.
func WarmupCosine(peak, floor float64, warmup, total int) Schedule {
	return warmupCosine{peak, floor, warmup, total}
}

func (s warmupCosine) At(step int) float64 {
	if step <= s.warmup {
		return s.peak * float64(step) / float64(s.warmup)
	}
	return cosineAt(s.peak, s.floor, step-s.warmup, s.total-s.warmup)
}

func (s warmupCosine) check() error {
	if s.warmup < 0 || s.total <= s.warmup {
		return errorf("WarmupCosine: warmup = %d, total = %d, want 0 ≤ warmup < total", s.warmup, s.total)
	}
	return firstErr(finiteParam("WarmupCosine", "peak", s.peak), finiteParam("WarmupCosine", "floor", s.floor))
}

type joined struct {
	parts      []Schedule
	boundaries []int
}

// Join runs schedules one after the other (optax's join_schedules):
// schedules[0] for steps 1 … boundaries[0], schedules[1] for the steps up to
// boundaries[1], and so on, the last one for ever after. Each part counts
// its own steps from 1: part i sees step − boundaries[i−1]. There must be
// one boundary fewer than schedules, strictly increasing and ≥ 1.
//
//	// 100 updates of warm-up to 1e-3, then a step decay by 0.5 every 1000
//	optimisers.Join([]optimisers.Schedule{
//		optimisers.LinearWarmup(1e-3, 100),
//		optimisers.StepDecay(1e-3, 1000, 0.5),
//	}, []int{100})
func Join(schedules []Schedule, boundaries []int) Schedule {
	return joined{slices.Clone(schedules), slices.Clone(boundaries)}
}

func (s joined) At(step int) float64 {
	start := 0
	for i, b := range s.boundaries {
		if step <= b {
			return s.parts[i].At(step - start)
		}
		start = b
	}
	return s.parts[len(s.parts)-1].At(step - start)
}

func (s joined) check() error {
	if len(s.parts) == 0 || len(s.boundaries) != len(s.parts)-1 {
		return errorf("Join: %d schedules and %d boundaries, want one boundary fewer than schedules (at least one schedule)", len(s.parts), len(s.boundaries))
	}
	for i, b := range s.boundaries {
		if b < 1 || i > 0 && b <= s.boundaries[i-1] {
			return errorf("Join: boundaries %v, want strictly increasing values ≥ 1", s.boundaries)
		}
	}
	for i, p := range s.parts {
		if err := checkSchedule(p); err != nil {
			return errorf("Join: schedule %d: %w", i, err)
		}
	}
	return nil
}

// checkSchedule checks a schedule's own parameters, where it can.
func checkSchedule(s Schedule) error {
	if s == nil {
		return errorf("nil schedule")
	}
	if c, ok := s.(scheduleChecker); ok {
		return c.check()
	}
	return nil
}

func finiteParam(sched, name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return errorf("%s: %s = %v, want a finite value", sched, name, v)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ScheduledRule drives the hyperparameter Name of every rule inside Rule
// with Schedule. Name is a `hyper` tag, such as "lr". Under an optimiser,
// before each update, the hyperparameter is set to Schedule.At(Step+1) in
// each of those rules, without touching their state. The rule's own value
// of Name is ignored. Wrappers may nest, say a schedule for "lr" around a
// chain holding one for "weight_decay". Where two schedule the same name,
// the inner one wins.
//
// A value the rule does not accept, such as a negative rate or NaN, makes
// Update return an error naming the step, and changes nothing. So does a
// value that would change the rule's state slots, such as RMSProp's
// momentum through zero.
// Adjust refuses to set a hyperparameter that a schedule drives.
//
// By hand, Apply uses its t as the step and copies the rule to set the
// value, so it allocates; under an optimiser nothing allocates.
type ScheduledRule struct {
	Rule     Rule
	Name     string
	Schedule Schedule
}

// Scheduled drives the hyperparameter name of the rules inside r with s:
//
//	optimisers.Scheduled(optimisers.Adam(0), "lr", optimisers.WarmupCosine(1e-3, 1e-5, 500, 10_000))
func Scheduled(r Rule, name string, s Schedule) ScheduledRule {
	return ScheduledRule{Rule: r, Name: name, Schedule: s}
}

// Validate checks the rule, the schedule, that some rule inside has the
// hyperparameter, and the rule with the schedule's first value.
func (r ScheduledRule) Validate() error {
	if r.Rule == nil {
		return errorf("Scheduled %q: nil rule", r.Name)
	}
	if err := validate(r.Rule); err != nil {
		return err
	}
	if err := checkSchedule(r.Schedule); err != nil {
		return errorf("Scheduled %q: %w", r.Name, err)
	}
	if _, ok := hyper(r.Rule, r.Name); !ok {
		names := sortedUnique(hyperNames(nil, r.Rule))
		return errorf("Scheduled %q: no rule inside has a hyperparameter %q (it has: %s)", r.Name, r.Name, strings.Join(names, ", "))
	}
	first, _ := withHyper(r.Rule, r.Name, r.Schedule.At(1))
	if err := validate(first); err != nil {
		return errorf("Scheduled %q at step 1: %w", r.Name, err)
	}
	if first.Slots() != r.Rule.Slots() {
		return errorf("Scheduled %q at step 1: the value %v changes the rule's state from %d slots to %d; set the rule up with a value of the same kind",
			r.Name, r.Schedule.At(1), r.Rule.Slots(), first.Slots())
	}
	return nil
}

// Slots is the rule's.
func (r ScheduledRule) Slots() int { return r.Rule.Slots() }

// Init is the rule's.
func (r ScheduledRule) Init(state [][]float32, θ []float32) { r.Rule.Init(state, θ) }

// Apply applies the rule with the hyperparameter at its value for step t.
func (r ScheduledRule) Apply(state [][]float32, θ, dx []float32, t int) {
	rule, _ := withHyper(r.Rule, r.Name, r.Schedule.At(t))
	rule.Apply(state, θ, dx, t)
}
