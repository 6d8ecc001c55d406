package optimisers

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/optimize"
)

// search looks along d from x for a step that satisfies the strong Wolfe
// conditions, with the line search L-BFGS-B uses: Moré and Thuente's
// (gonum's MoreThuente, a port of MINPACK-2's dcsrch) with L-BFGS-B's
// constants. The first trial step and the largest step are L-BFGS-B's.
//
// A failed evaluation at step a restarts the search from x with a/2 as
// both its first and its largest step. When the evaluations run out, or
// the search's interval becomes too narrow, the acceptable point of
// lowest loss seen, one of sufficient decrease, is taken, as dcsrch's
// warnings end L-BFGS-B's search at its best step.
//
// On success the point is in xt, gt and its loss in r.f. A status other
// than NotTerminated is a limit of the settings, reached in the search.
func (r *lbRun) search() (ok bool, stop optimize.Status) {
	f0, dg0 := r.f, dot(r.g, r.d)
	stpmax, a := r.steps()
	mt := &r.mt
	*mt = optimize.MoreThuente{DecreaseFactor: lbFtol, CurvatureFactor: lbGtol, StepTolerance: lbXtol, MaximumStep: stpmax}
	mt.Init(f0, dg0, a)
	a = math.Min(a, stpmax)
	best, fBest := false, f0
	for range r.maxLS {
		same := true
		for i, v := range r.x {
			t := float64(float32(math.Min(math.Max(v+a*r.d[i], r.lo[i]), r.hi[i])))
			r.xt[i] = t
			same = same && t == v
		}
		if same {
			break // float32 cannot tell the step from no step
		}
		ft, err := r.eval(r.xt, r.gt)
		if st := r.limit(); st != optimize.NotTerminated {
			return false, st
		}
		if err != nil {
			r.fails++
			r.lastFail = errorf("evaluation %d, step %.3g of iteration %d: %w", r.evals, a, r.iter+1, err)
			a *= 0.5
			*mt = optimize.MoreThuente{DecreaseFactor: lbFtol, CurvatureFactor: lbGtol, StepTolerance: lbXtol, MaximumStep: a}
			mt.Init(f0, dg0, a)
			continue
		}
		dgt := dot(r.gt, r.d)
		if ft <= f0+lbFtol*a*dg0 && ft < fBest {
			best, fBest = true, ft
			copy(r.xl, r.xt)
			copy(r.gl, r.gt)
		}
		op, next, err := mt.Iterate(ft, dgt)
		if err == nil && op == optimize.MajorIteration || errors.Is(err, optimize.ErrLinesearcherBound) {
			r.f = ft // the strong Wolfe conditions hold, or the largest step decreases enough
			return true, optimize.NotTerminated
		}
		if err != nil {
			break // the interval is too narrow
		}
		a = next
	}
	if !best {
		return false, optimize.NotTerminated
	}
	copy(r.xt, r.xl)
	copy(r.gt, r.gl)
	r.f = fBest
	return true, optimize.NotTerminated
}

// steps returns L-BFGS-B's largest step and first trial step along d. With
// no finite bound the largest is lbBig. With bounds it is 1 at the first
// iteration and after that the step to the nearest bound along d, which is
// at least 1 because x + d is inside the bounds. The first trial is 1,
// except at the first iteration when some variable lacks a bound on either
// side: 1/‖d‖₂ then, so that the first step has length 1.
func (r *lbRun) steps() (stpmax, stp float64) {
	bounded, boxed := false, true
	stpmax = lbBig
	for i, di := range r.d {
		loF, hiF := !math.IsInf(r.lo[i], -1), !math.IsInf(r.hi[i], 1)
		bounded = bounded || loF || hiF
		boxed = boxed && loF && hiF
		switch {
		case di < 0 && loF:
			stpmax = math.Min(stpmax, (r.lo[i]-r.x[i])/di)
		case di > 0 && hiF:
			stpmax = math.Min(stpmax, (r.hi[i]-r.x[i])/di)
		}
	}
	if bounded {
		stpmax = math.Max(stpmax, 1)
		if r.iter == 0 {
			stpmax = 1
		}
	} else {
		stpmax = lbBig
	}
	stp = 1
	if r.iter == 0 && !boxed {
		stp = math.Min(1/math.Sqrt(dot(r.d, r.d)), stpmax)
	}
	return stpmax, stp
}
