package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/flatkit/flatkit/ode"
)

// The scaling lines of stiffsens (-stiffsens-scale): issue 28's claims
// that the adjoint gradient's cost grows like the number of states and
// not with the number of parameters. For each N of -stiffsens-scalen
// (250, 500, 1000, 2000), BDF's InterpolatingAdjoint (band) of the same
// loss with p = (A, B, 50α), and again with -stiffsens-dummy (100) more
// parameters that F reads (stiffprob.NewBruss1DParamsExtra: they add
// 1e-12·u_0·Σ p_k to u_0', so the steps do not change and only the
// parameters' cost shows). Each line carries us_per_state (the median ÷
// 2N), x_first_per_state (÷ the smallest N's), and the dummy lines
// x_3_params (time ÷ the 3-parameter gradient's at that N) and
// rel_diff_3_params (the relative difference of their gradients, as
// max_rel_err measures it: the dummy terms only). max_rel_err is against the peer's tight adjoint when
// SUNDIALS is installed, else absent: central differences above N = 200
// take too long. The forward solve's line comes first at each N.

// stiffSensScaleMethod is the method of the scaling lines.
var stiffSensScaleMethod = stiffSensMethods[0] // BDF

// parseInts parses "250,500" into numbers, each at least 1.
func parseInts(s string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("want positive grid sizes separated by commas, got %q", s)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// runStiffSensScale emits the scaling lines.
func (b *bencher) runStiffSensScale(ctx context.Context, peer *stiffSensPeer) error {
	ns, err := parseInts(stiffSensOpt.scaleN)
	if err != nil {
		return fmt.Errorf("-stiffsens-scalen: %w", err)
	}
	dummy := stiffSensOpt.dummy
	if dummy < 0 {
		return fmt.Errorf("-stiffsens-dummy = %d, want ≥ 0", dummy)
	}
	if b.opt.quick {
		ns, dummy = []int{stiffSensQuickN, 2 * stiffSensQuickN}, 3
	}
	m := stiffSensScaleMethod
	s := ode.InterpolatingAdjoint{}
	first := 0.0
	for _, n := range ns {
		var ref *stiffSensRef
		if peer != nil {
			if ref, err = b.stiffSensRefLine(ctx, n, peer); err != nil {
				return fmt.Errorf("N=%d: %w", n, err)
			}
		}
		base := fmt.Sprintf("bruss1d N=%d scaling ", n)
		_, r, err := b.stiffSensSolve(stiffSensProblem(n, "band", 0), m.name, m.method, "band")
		if err != nil {
			return fmt.Errorf("N=%d: %w", n, err)
		}
		r.Case = base + "forward solve " + m.name + " band"
		b.emitStiffSens(r)
		var three stiffSensResult
		for _, extra := range []int{0, dummy} {
			prob := stiffSensProblem(n, "band", extra)
			r := b.stiffSensGradient(ctx, prob, m.name, m.method, s, "band", ref)
			r.Params = len(prob.P)
			r.Case = fmt.Sprintf("%s%s band %s, %d parameters", base, m.name, r.Sensitivity, r.Params)
			if r.Unit == "skipped" {
				b.emitStiffSens(r)
				return fmt.Errorf("N=%d: %s", n, r.Skipped)
			}
			per := r.Median * 1e3 / float64(2*n)
			if first == 0 {
				first = per
			}
			r.UsPerState, r.VsFirst = ptr(round3(per)), ptr(round3(per/first))
			if extra == 0 {
				three = r
			} else {
				r.VsThree = ptr(round3(r.Median / three.Median))
				e, _, _ := stiffSensErrors(&stiffSensRef{Theta: three.grad[:3], U0: three.grad[3:]}, r.grad[:3], r.grad[3:])
				r.RelDiff3 = ptr(e)
			}
			b.emitStiffSens(r)
			if dummy == 0 {
				break
			}
		}
	}
	return nil
}
