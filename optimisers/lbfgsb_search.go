package optimisers

import (
	"math"

	"gonum.org/v1/gonum/optimize"
)

// search looks along d from x for a step that satisfies the strong Wolfe
// conditions with L-BFGS-B's constants: a bracketing phase, then zooming
// with safeguarded cubic interpolation (Nocedal and Wright, Numerical
// Optimization, algorithms 3.5 and 3.6). The first trial step and the
// largest step are L-BFGS-B's. A failed evaluation halves the step toward
// the last acceptable one. When the evaluations run out, the best
// acceptable point found, one of sufficient decrease, is taken.
//
// On success the point is in xt, gt and its loss in r.f. A status other
// than NotTerminated is a limit of the settings, reached in the search.
func (r *lbRun) search() (ok bool, stop optimize.Status) {
	f0, dg0 := r.f, dot(r.g, r.d)
	stpmax, stp := r.steps()
	aLo, fLo, dgLo := 0.0, f0, dg0
	aHi, fHi, dgHi := math.Inf(1), 0.0, 0.0
	hiFailed := false
	xl := r.x // the point at aLo
	a := stp
	for range r.maxLS {
		same := true
		for i, v := range r.x {
			t := float64(float32(math.Min(math.Max(v+a*r.d[i], r.lo[i]), r.hi[i])))
			r.xt[i] = t
			same = same && t == xl[i]
		}
		if same {
			break // float32 cannot tell the step from the best one
		}
		ft, err := r.eval(r.xt, r.gt)
		if st := r.limit(); st != optimize.NotTerminated {
			return false, st
		}
		if err != nil {
			r.fails++
			r.lastFail = errorf("evaluation %d, step %.3g of iteration %d: %w", r.evals, a, r.iter+1, err)
			aHi, hiFailed = a, true
			a = aLo + 0.5*(a-aLo)
			continue
		}
		dgt := dot(r.gt, r.d)
		if ft > f0+lbFtol*a*dg0 || ft >= fLo {
			aHi, fHi, dgHi, hiFailed = a, ft, dgt, false
		} else {
			if math.Abs(dgt) <= -lbGtol*dg0 {
				r.f = ft
				return true, optimize.NotTerminated
			}
			if dgt*(aHi-aLo) >= 0 || math.IsInf(aHi, 1) && dgt >= 0 {
				aHi, fHi, dgHi, hiFailed = aLo, fLo, dgLo, false
			}
			aLo, fLo, dgLo = a, ft, dgt
			copy(r.xl, r.xt)
			copy(r.gl, r.gt)
			xl = r.xl
			if math.IsInf(aHi, 1) {
				if a >= stpmax {
					break // at the largest step, still going down
				}
				a = math.Min(4*a, stpmax)
				continue
			}
		}
		a = lbInterpolate(aLo, fLo, dgLo, aHi, fHi, dgHi, hiFailed)
	}
	if aLo == 0 {
		return false, optimize.NotTerminated
	}
	copy(r.xt, r.xl)
	copy(r.gt, r.gl)
	r.f = fLo
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

// lbInterpolate returns the next trial step between aLo and aHi: the
// minimiser of the cubic through both ends' values and slopes, kept at
// least a tenth of the interval from either end; the midpoint when the
// cubic has no minimiser there or the aHi end failed to evaluate.
func lbInterpolate(aLo, fLo, dgLo, aHi, fHi, dgHi float64, hiFailed bool) float64 {
	mid := aLo + 0.5*(aHi-aLo)
	if hiFailed {
		return mid
	}
	d1 := dgLo + dgHi - 3*(fLo-fHi)/(aLo-aHi)
	disc := d1*d1 - dgLo*dgHi
	if !(disc >= 0) {
		return mid
	}
	d2 := math.Copysign(math.Sqrt(disc), aHi-aLo)
	a := aHi - (aHi-aLo)*(dgHi+d2-d1)/(dgHi-dgLo+2*d2)
	lo, hi := math.Min(aLo, aHi), math.Max(aLo, aHi)
	w := hi - lo
	if !(a >= lo+0.1*w && a <= hi-0.1*w) {
		return mid
	}
	return a
}
