package ode

// Method is an integration method: Tsit5, DP5, BS3, Vern7, RK4, the stiff
// Rosenbrock23 and Rodas5P, and BDF. Its value is stateless and safe to
// share.
// The per-solve state lives in the Integrator.
type Method interface {
	Name() string
	// info seals the interface: methods are defined in this package.
	info() methodInfo
}

// tabMethod is the part of a tableau's Method that does not depend on the
// kind of tableau: its name and its methodInfo. erkMethod embeds it.
type tabMethod struct {
	name string // the tableau's
	inf  methodInfo
}

func (m *tabMethod) Name() string     { return m.name }
func (m *tabMethod) info() methodInfo { return m.inf }
func (m *tabMethod) String() string   { return m.name }

// methodInfo is what the integrator needs to know about a method besides
// its stepper.
type methodInfo struct {
	order     int  // the order p used by the step-size controller and the initial step heuristic
	adaptive  bool // has an error estimate
	fixedOnly bool // needs FixedStep (or InitialStep): RK4
	stiff     bool // a Rosenbrock method: uses Problem.Jac
}

// stepper is the seam between the integrator and a method. The integrator
// owns time, the state vectors, step-size control, output, events and
// errors. The method owns its stage computations and caches. The explicit
// Runge–Kutta loop, erk, is one implementation. A Rosenbrock method is
// another: it keeps its Jacobian, the matrix W and its LU factors in its
// own struct. It bumps it.stats.JacEvals and it.stats.LUs, and reuses W
// across rejected attempts while h is unchanged.
//
// The call sequence of one solve is
//
//	start                              at NewIntegrator or Reinit and after every event that continues
//	attempt, attempt, …                until an attempt's (squared) error norm is ≤ 1
//	accept                             once per accepted step, before the buffers rotate
//	dense                              zero or more times for the accepted step, before the next attempt
//
// and the integrator rotates it.uPrev, it.u, it.uNew between accept and
// dense, so in dense it.uPrev is the start of the step and it.u its end.
//
// A stepper reads it.prob, it.t, it.u, it.tPrev, it.uPrev, it.n and the
// tolerances it.o.rtol and it.o.atol. It writes it.uNew in attempt, the
// dense polynomial, and the counters in it.stats. It allocates its own
// buffers once, in its constructor, and never uses it.scratch, which the
// integrator owns. An attempt rejected for a reason other than its error,
// such as a singular matrix, returns +Inf. The integrator then retries
// with h·qmin, as after a NaN. After an event, start is called with the
// state the event's Affect left in it.u.
type stepper[T Float] interface {
	// start evaluates and returns f(it.t, it.u), counted in FEvals. It
	// drops any first-same-as-last value carried over from a previous
	// step. The slice is the stepper's and is read only until the next
	// attempt.
	start(it *Integrator[T]) []T
	// attempt computes a trial step of signed size h from it.t and it.u
	// into it.uNew, without modifying it.u. It returns the square of the
	// error norm, wrmsSquare of the local error estimate, or 0 for a
	// method without one. It returns NaN or +Inf when it.uNew is not
	// finite.
	attempt(it *Integrator[T], h float64) float64
	// accept records that the last attempt, of size h, was accepted.
	accept(it *Integrator[T], h float64)
	// dense writes the polynomial in θ ∈ [0, 1] of the accepted step,
	//
	//	u(tPrev + θh) ≈ Σ_j θ^j poly[j*n:(j+1)*n],  j = 0…degree(),
	//
	// with poly[0:n] = it.uPrev. It may evaluate F, counted in FEvals.
	dense(it *Integrator[T], poly []T)
	// degree is the degree of the dense polynomial.
	degree() int
}

// stepFailer is implemented by a stepper whose attempts can fail for a
// reason of its own, such as a singular W or a non-finite Jacobian. When
// the integrator gives up after such attempts it asks for the cause. A
// non-nil error ends the solve with that Retcode and component.
type stepFailer interface {
	failure() (code Retcode, component int, cause error)
}

// stepChooser is implemented by a stepper that chooses its own step sizes
// (and orders), as BDF does. In adaptive solves the integrator then asks it
// for every step size instead of using its initial-step heuristic and its
// PI controller. It still clips the steps to TStops and T1, and the
// stepper must accept whatever size it is given.
type stepChooser[T Float] interface {
	// firstStep returns the signed size of the first step after start,
	// where f0 = F(it.t, it.u) is what start returned.
	firstStep(it *Integrator[T], f0 []T) float64
	// nextStep returns the signed size of the step after the accepted
	// attempt of size h. It is called before accept.
	nextStep(it *Integrator[T], h float64) float64
	// retryStep returns the signed size to retry after a rejected attempt
	// of size h that returned e2: above 1, NaN or +Inf.
	retryStep(it *Integrator[T], h, e2 float64) float64
	// gaveUp is asked after retryStep of an attempt whose e2 was above 1
	// and finite: a non-nil error ends the solve with that Retcode and
	// component (too many failures on one step).
	gaveUp() (code Retcode, component int, cause error)
}

// newStepper builds method m's stepper for prob's state type and dimension.
// adaptive is false under FixedStep, where no error estimate is needed. A
// new family of methods adds its case here, with a Method type that
// implements info, as the Rosenbrock methods do.
func newStepper[T Float](m Method, prob *Problem[T], adaptive bool) (stepper[T], error) {
	n := len(prob.U0)
	switch m := m.(type) {
	case *erkMethod:
		return newERK[T](m.tab, n, adaptive), nil
	case Rodas5PMethod, *Rodas5PMethod, Rosenbrock23Method, *Rosenbrock23Method:
		return newRosStepper(m, prob, adaptive)
	case BDFMethod:
		return newBDF(m, prob, adaptive)
	case *BDFMethod:
		return newBDF(*m, prob, adaptive)
	}
	return nil, errorf("method %s has no stepper", m.Name())
}
