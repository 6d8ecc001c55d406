package proptest

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/flatkit/flatkit/internal/funcopt"
	"github.com/flatkit/flatkit/ode"
)

// CheckHybridGradient checks the gradient of loss through a solve of a
// hybrid problem, one with Events or Schedules, with method m: every
// sensitivity method that supports prob and m (ForwardSensitivity with
// prob.JVP; InterpolatingAdjoint, with and without Checkpoints,
// GaussAdjoint, and DiscreteAdjoint for an m other than BDF, with
// prob.VJP) against central
// differences of the solve, coordinate by coordinate in p and u0 (not u0
// when U0From is set).
//
// The differences are of adaptive solves at rtol 1e-12 (1e-7 for float32)
// with steps landing on the save times, extrapolated from steps δ and δ/2
// (Richardson), δ shrinking by 4 while the estimate still moves by more
// than a tenth of the tolerance; δ starts as for CheckODEGradient. The
// methods solve at rtol ODETol (default 1e-10 for float64, 1e-6 for float32) and must agree
// with the differences within ODEFDTol (default 1e-6, 3e-3 for float32),
// relative to the largest gradient component, as ‖a − b‖∞ ≤
// tol·max(‖b‖∞, 1e-2).
//
// The loss of the solve jumps where an event time crosses a save time, and
// bends where it passes another firing, so a coordinate along which a
// perturbed solve fires a different number of times before some save
// time than the unperturbed one, or its events and doses in another
// order, is tried again
// with steps 16, 256 and 4096 times smaller; if they all cross, it is
// left out of the comparison and reported (with t's Logf, if it has one), not failed; if
// every coordinate was left out, that is a fatal error: nothing was
// checked.
// loss must not have a running cost nor an End, and every save time must be
// reached (no terminating firing before one).
func CheckHybridGradient[F ode.Float](t T, prob ode.Problem[F], m ode.Method, loss ode.Loss[F], opts ...ODEOption) {
	t.Helper()
	ctx := context.Background()
	isF32 := F(1)+F(0x1p-30) == F(1)
	c := funcopt.Collect(opts)
	tol, fdTol, fdRtol := 1e-10, 1e-6, 1e-12
	if isF32 {
		tol, fdTol, fdRtol = 1e-6, 3e-3, 1e-7
	}
	tol, fdTol = orDefault(c.tol, tol), orDefault(c.fdTol, fdTol)
	if loss.Running != nil || loss.End != nil {
		t.Fatalf("CheckHybridGradient: loss has a running cost or an End; want a loss of the saved states alone (Point or Saved)")
		return
	}
	logf := func(format string, args ...any) {
		t.Helper()
		if l, ok := t.(interface{ Logf(string, ...any) }); ok {
			l.Logf(format, args...)
		}
	}
	ts := slices.Clone(loss.At)
	slices.Sort(ts)
	if prob.T1 < prob.T0 {
		slices.Reverse(ts)
	}
	h := &hybridFD[F]{prob: prob, m: m, loss: loss, ts: ts,
		opts: []ode.SolveOption{ode.Tol(fdRtol, fdRtol/100), ode.TStops(ts...), ode.SaveAt(ts...)}}
	for _, o := range c.opts {
		if so, ok := o.(ode.SolveOption); ok {
			h.opts = append(h.opts, so)
		}
	}
	_, sig0, err := h.value(ctx, prob)
	if err != nil {
		t.Fatalf("CheckHybridGradient: the unperturbed solve: %v", err)
		return
	}

	// The differences, coordinate by coordinate; nil for those left out.
	np := len(prob.P)
	nu := len(prob.U0)
	if prob.U0From != nil {
		nu = 0
	}
	fd := make([]float64, np+nu)
	skip := make([]bool, np+nu)
	names := make([]string, np+nu)
	var failed error
	// R(δ) = (4D(δ/2) − D(δ))/3 of the central differences D, with the
	// steps actually taken. Near an event the loss bends sharply, so δ
	// shrinks by 4 while R changes by more than a tenth of the tolerance
	// and less than at the shrink before (once the change grows, the
	// solves' rounding has taken over and the last R is kept).
	rich := func(at func(δ float64) (float64, float64), δ float64) float64 {
		var d [2]float64
		for k, s := range []float64{δ, δ / 2} {
			lp, a := at(s)
			lm, b := at(-s)
			d[k] = (lp - lm) / (a - b)
		}
		return richardson(d[0], d[1], 2)
	}
	diff := func(i int, at func(δ float64) (float64, float64), δ float64) {
		r := rich(at, δ)
		change := math.Inf(1)
		for range 5 {
			δ /= 4
			next := rich(at, δ)
			c := math.Abs(next - r)
			if c >= change {
				break
			}
			r, change = next, c
			if c <= fdTol/10*max(math.Abs(r), 1e-2) {
				break
			}
		}
		fd[i] = r
	}
	for i := range fd {
		pr := prob
		p, u0 := slices.Clone(prob.P), slices.Clone(prob.U0)
		pr.P, pr.U0 = p, u0
		crossed := ""
		value := func() float64 {
			v, sig, err := h.value(ctx, pr)
			if err != nil && failed == nil {
				failed = fmt.Errorf("a perturbed solve (%s): %w", names[i], err)
			}
			if crossed == "" && !slices.Equal(sig, sig0) {
				crossed = fmt.Sprintf("firings before each save time %v, then in all, then which fired in turn (event j, schedule −1−k): %v unperturbed, %v perturbed", ts, sig0, sig)
			}
			return v
		}
		var at func(δ float64) (float64, float64)
		var δ float64
		if i < np {
			names[i] = fmt.Sprintf("p[%d]", i)
			at, δ = along(p, i, value), paramStep(p[i], isF32)
		} else {
			j := i - np
			names[i] = fmt.Sprintf("u0[%d]", j)
			δ = 0x1p-10 * max(math.Abs(float64(u0[j])), 1)
			if isF32 {
				δ = 0x1p-6 * max(math.Abs(float64(u0[j])), 1)
			}
			at = along(u0, j, value)
		}
		// A firing close to a save time crosses it under the first
		// steps; smaller steps may not move it that far.
		for range 4 {
			crossed = ""
			diff(i, at, δ)
			if crossed == "" {
				break
			}
			δ /= 16
		}
		if crossed != "" {
			skip[i] = true
			logf("CheckHybridGradient: %s left out: an event time crosses a save time or passes another firing between the perturbed solves (%s)", names[i], crossed)
		}
	}
	if failed != nil {
		t.Fatalf("CheckHybridGradient: %v", failed)
		return
	}
	if !slices.Contains(skip, false) {
		t.Fatalf("CheckHybridGradient: every coordinate was left out (event times cross save times or pass other firings): nothing was checked")
		return
	}

	type method struct {
		name string
		s    ode.Sensitivity
	}
	var methods []method
	if prob.JVP != nil {
		methods = append(methods, method{"ForwardSensitivity", ode.ForwardSensitivity{}})
	}
	if prob.VJP != nil {
		methods = append(methods, method{"InterpolatingAdjoint", ode.InterpolatingAdjoint{}},
			method{"InterpolatingAdjoint (4 checkpoints)", ode.InterpolatingAdjoint{Checkpoints: 4}},
			method{"GaussAdjoint", ode.GaussAdjoint{}})
		if hasDiscreteAdjoint(m) {
			methods = append(methods, method{"DiscreteAdjoint", ode.DiscreteAdjoint{}})
		}
	}
	solveOpts := append([]ode.GradientOption{ode.Tol(tol, tol/100), ode.TStops(ts...)}, c.opts...)
	checked := 0
	for _, s := range methods {
		g, err := ode.Gradient(ctx, prob, m, loss, s.s, solveOpts...)
		if err != nil {
			t.Errorf("CheckHybridGradient: %s with %s: %v", s.name, m.Name(), err)
			continue
		}
		checked++
		v := flatGrad(g)[:np+nu]
		var got, want []float64
		for i := range fd {
			if !skip[i] {
				got, want = append(got, v[i]), append(want, fd[i])
			}
		}
		if e := relInf(got, want); !(e <= fdTol) {
			t.Errorf("CheckHybridGradient: %s (%s, rtol %g) and central differences of the solve differ by %.3g relative (> %g):\n  %s %v\n  differences %v\n  coordinates %v (left out: %v)",
				s.name, m.Name(), tol, e, fdTol, s.name, v, fd, names, skipped(names, skip))
		}
	}
	if checked == 0 {
		t.Fatalf("CheckHybridGradient: no sensitivity method differentiates through this problem's events and schedules with %s (JVP set: %v, VJP set: %v): nothing was checked",
			m.Name(), prob.JVP != nil, prob.VJP != nil)
	}
}

func skipped(names []string, skip []bool) []string {
	var s []string
	for i, n := range names {
		if skip[i] {
			s = append(s, n)
		}
	}
	return s
}

// hybridFD evaluates the loss of a solve, with the firings' signature.
type hybridFD[F ode.Float] struct {
	prob ode.Problem[F]
	m    ode.Method
	loss ode.Loss[F]
	ts   []float64
	opts []ode.SolveOption // the tolerance, TStops and SaveAt at ts, and the user's
}

// value solves pr at the differences' tolerance and returns the loss and
// the signature of its firings: how many distinct firing times came
// before each save time (a firing at a save time counts as after it, as
// the saved state is the one before), then their total.
func (h *hybridFD[F]) value(ctx context.Context, pr ode.Problem[F]) (float64, []int, error) {
	var fired []float64
	var order []int // which event (j) or schedule (−1−k) fired, in turn
	note := func(t float64, id int) {
		if len(fired) == 0 || fired[len(fired)-1] != t {
			fired = append(fired, t)
		}
		order = append(order, id)
	}
	pr.Events = slices.Clone(pr.Events)
	for j := range pr.Events {
		ev := &pr.Events[j]
		switch eff, aff := ev.Effect, ev.Affect; {
		case eff != nil:
			ev.Effect = func(u []F, p []float32, t float64) bool { note(t, j); return eff(u, p, t) }
		case aff != nil:
			ev.Affect = func(u []F, t float64) bool { note(t, j); return aff(u, t) }
		default:
			ev.Effect = func([]F, []float32, float64) bool { return true }
		}
	}
	pr.Schedules = slices.Clone(pr.Schedules)
	for k := range pr.Schedules {
		s := &pr.Schedules[k]
		eff := s.Effect
		s.Effect = func(u []F, p []float32, t float64) bool { note(t, -1-k); return eff(u, p, t) }
	}
	sol, err := ode.Solve(ctx, pr, h.m, h.opts...)
	if err != nil {
		return math.NaN(), nil, err
	}
	if len(sol.U) != len(h.ts) {
		return math.NaN(), nil, fmt.Errorf("the solve saved %d states for %d save times, want all (a terminating firing before one?)", len(sol.U), len(h.ts))
	}
	slices.Sort(fired)
	fired = slices.Compact(fired)
	sig := make([]int, len(h.ts)+1)
	for i, s := range h.ts {
		for _, f := range fired {
			if (pr.T1 >= pr.T0 && f < s) || (pr.T1 < pr.T0 && f > s) {
				sig[i]++
			}
		}
	}
	sig[len(h.ts)] = len(fired)
	// An event that passes a dose swaps their effects: the loss bends
	// there as where a firing passes a save time.
	sig = append(sig, order...)
	var v float64
	switch {
	case h.loss.Saved != nil:
		dl := make([][]F, len(sol.U))
		for i := range dl {
			dl[i] = make([]F, len(sol.U[i]))
		}
		v = h.loss.Saved(sol.T, sol.U, dl)
	case h.loss.Point != nil:
		dl := make([]F, len(pr.U0))
		for i, u := range sol.U {
			clear(dl)
			v += h.loss.Point(i, sol.T[i], u, dl)
		}
	}
	if h.loss.Err != nil {
		if err := h.loss.Err(); err != nil {
			return math.NaN(), nil, err
		}
	}
	return v, sig, nil
}
