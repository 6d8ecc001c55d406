package ode

import "math"

// Step-size control. The controller is the PI controller of Hairer and
// Wanner, sections II.4 and IV.2, as OrdinaryDiffEq uses it. With the error
// norm e_n of the accepted step and e_{n−1} of the previous accepted one,
//
//	h_new = h · clamp(safety · e_n^(−β1) · e_{n−1}^(β2), qmin, qmax)
//
// with β1 = 0.7/p and β2 = 0.4/p for a method of order p. The other
// constants are safety 0.9, qmin 0.2 and qmax 10; e_{n−1} starts at 1e-4.
// A rejected step retries with h·max(qmin, safety·e^−β1), and the step
// after a rejection may not grow. Non-finite attempts retry with h·qmin.
// Ten in a row, or a dt underflow right after one, end the solve with
// NonFinite. A stepper that chooses its own steps, BDF, implements
// stepChooser; the integrator then asks it for the first step, the next
// and the retries, and uses none of the above.
const (
	ctlSafety   = 0.9
	ctlQmin     = 0.2
	ctlQmax     = 10.0
	ctlErrOld0  = 1e-4
	ctlBeta1    = 0.7
	ctlBeta2    = 0.4
	maxNonFinit = 10
)

// log2ErrOld0 is log2(ctlErrOld0); the controller keeps log2 of e_{n−1}.
var log2ErrOld0 = math.Log2(ctlErrOld0)

// wrmsNorm is the weighted RMS norm of an error vector e between the states
// u0 and u1: sqrt(mean((e_i / (atol + rtol·max(|u0_i|, |u1_i|)))²)),
// accumulated in float64. It is NaN when u1 or e is not finite.
func wrmsNorm[T Float](e, u0, u1 []T, o *options) float64 {
	return math.Sqrt(wrmsSquare(e, u0, u1, o))
}

// wrmsSquare is wrmsNorm squared, what a stepper's attempt returns: the
// step-size controller takes its logarithm, so the square root would only
// lengthen the chain from one step to the next. Every method measures its
// error with it, so that all measure error alike.
func wrmsSquare[T Float](e, u0, u1 []T, o *options) float64 {
	if o.perComponent() {
		return wrmsSquareVec(e, u0, u1, o.atolv, o.rtolv)
	}
	atol, rtol := o.atol, o.rtol
	var acc, bad float64
	n := len(e)
	u0, u1 = u0[:n], u1[:n]
	for i, v := range e {
		a, b := float64(u0[i]), float64(u1[i])
		if a < 0 {
			a = -a
		}
		if b < 0 {
			b = -b
		}
		r := float64(v) / (atol + rtol*max(a, b))
		acc += r * r
		bad += b * 0 // NaN unless u1[i] is finite
	}
	// The reciprocal does not wait for the sum; a division would.
	return acc*(1/float64(n)) + bad
}

// wrmsSquareVec is wrmsSquare with per-component tolerances. A component
// with an infinite atol is left out: its weight is 0 and it does not
// count in the mean, so that the steps are those the other components
// choose (it is still checked for NaN).
func wrmsSquareVec[T Float](e, u0, u1 []T, atolv, rtolv []float64) float64 {
	var acc, bad float64
	n := len(e)
	u0, u1, atolv, rtolv = u0[:n], u1[:n], atolv[:n], rtolv[:n]
	ctl := 0
	for i, v := range e {
		a, b := math.Abs(float64(u0[i])), math.Abs(float64(u1[i]))
		if atolv[i] <= math.MaxFloat64 {
			ctl++
		}
		if b > a { // max(a, b) but for NaN, which bad catches
			a = b
		}
		r := float64(v) / (atolv[i] + rtolv[i]*a)
		acc += r * r
		bad += b*0 + float64(v)*0
	}
	return acc*(1/float64(max(ctl, 1))) + bad
}

// finiteCheck is 0 when every component of u is finite, NaN otherwise.
func finiteCheck[T Float](u []T) float64 {
	var bad float64
	for _, v := range u {
		bad += float64(v) * 0
	}
	return bad
}

// firstNonFinite returns the index of the first NaN or ±Inf in u, or -1.
func firstNonFinite[T Float](u []T) int {
	for i, v := range u {
		f := float64(v)
		if f-f != 0 {
			return i
		}
	}
	return -1
}

// initialStep is Hairer's starting step heuristic from Hairer, Nørsett and
// Wanner I, section II.4. With the weighted norms d0 = ‖u0‖ and d1 = ‖f0‖,
// h0 = 0.01·d0/d1, an Euler step to u1 = u0 + h0·f0 and
// d2 = ‖f(u1) − f0‖/h0, it takes
//
//	h = min(100·h0, (0.01/max(d1, d2))^(1/(p+1))).
//
// It costs one evaluation of F. A stepper that chooses its own steps
// (stepChooser) gives the first step instead.
func (it *Integrator[T]) initialStep(f0 []T) float64 {
	if ch, ok := it.st.(stepChooser[T]); ok {
		return ch.firstStep(it, f0)
	}
	span := math.Abs(it.t1 - it.t0)
	u0 := it.u
	var d0, d1 float64
	for i, v := range u0 {
		atol, rtol := it.o.tolAt(i)
		sc := atol + rtol*math.Abs(float64(v))
		a, b := float64(v)/sc, float64(f0[i])/sc
		d0 += a * a
		d1 += b * b
	}
	n := float64(len(u0))
	d0, d1 = math.Sqrt(d0/n), math.Sqrt(d1/n)
	h0 := 1e-6
	if d0 >= 1e-5 && d1 >= 1e-5 {
		h0 = 0.01 * d0 / d1
	}
	h0 = min(h0, span)
	u1, f1 := it.uNew, it.scratch
	hT := T(it.dir * h0)
	for i, v := range u0 {
		u1[i] = v + hT*f0[i]
	}
	it.prob.F(f1, u1, it.prob.P, it.t+it.dir*h0)
	it.stats.FEvals++
	var d2 float64
	for i, v := range u0 {
		atol, rtol := it.o.tolAt(i)
		sc := atol + rtol*math.Abs(float64(v))
		d := float64(f1[i]-f0[i]) / sc
		d2 += d * d
	}
	d2 = math.Sqrt(d2/n) / h0
	var h1 float64
	if m := max(d1, d2); m <= 1e-15 || m != m {
		h1 = max(1e-6, h0*1e-3)
	} else {
		h1 = math.Pow(0.01/m, 1/float64(it.order+1))
	}
	h := min(100*h0, h1, span)
	if !(h > 0) {
		h = min(1e-6, span)
	}
	// Never below what the step loop would call an underflow (a state
	// near 0 with a tiny atol can make h0 ~ 1e-16 at t0 ≠ 0).
	h = min(max(h, 1024*eps*math.Abs(it.t)), span)
	return it.dir * h
}

// controlAccept returns the next step size after an accepted step of
// signed size h whose attempt returned the squared error norm e2. It
// updates the controller memory.
func (it *Integrator[T]) controlAccept(h, e2 float64) float64 {
	if !it.adaptive {
		if it.fixed > 0 {
			// A step shortened to land on a stop must not become the
			// fixed step: the next one is the full size again.
			return it.dir * it.fixed
		}
		return h
	}
	if ch, ok := it.st.(stepChooser[T]); ok {
		return ch.nextStep(it, h)
	}
	// The chain from e to the next step's size is what the next step
	// waits for: one multiplication at the end, h·g, rather than two
	// divisions by the safety factor and by h/q.
	var g float64 // h_new = h · g
	if e2 == 0 {
		g = ctlQmax
	} else {
		le := 0.5 * log2Fast(e2) // log2 e
		g = ctlSafety * exp2Fast(it.beta2*it.logErrOld-it.beta1*le)
		g = min(max(g, ctlQmin), ctlQmax)
		it.logErrOld = max(le, log2ErrOld0)
	}
	if e2 == 0 {
		it.logErrOld = log2ErrOld0
	}
	if it.rejectedLast && g > 1 {
		g = 1
	}
	return h * g
}

// controlReject returns the step size to retry after a rejected step with
// squared error norm e2: above 1, or NaN or +Inf for a non-finite
// attempt, which retries with h·qmin.
func (it *Integrator[T]) controlReject(h, e2 float64) float64 {
	if ch, ok := it.st.(stepChooser[T]); ok {
		return ch.retryStep(it, h, e2)
	}
	if !(e2 <= math.MaxFloat64) {
		return h * ctlQmin
	}
	g := ctlSafety * exp2Fast(-0.5*it.beta1*log2Fast(e2))
	return h * max(g, ctlQmin)
}
