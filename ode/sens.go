package ode

// Sensitivity is a way of differentiating a solve: ForwardSensitivity,
// InterpolatingAdjoint, BacksolveAdjoint or DiscreteAdjoint. Which
// derivative products of F each needs:
//
//	ForwardSensitivity    Problem.JVP
//	InterpolatingAdjoint  Problem.VJP
//	BacksolveAdjoint      Problem.VJP
//	DiscreteAdjoint       Problem.VJP
//
// With a stiff method (Rosenbrock23, Rodas5P) the Jacobian of the system
// integrated is built from Problem.Jac (or from the products) as the
// method's doc says. A missing product is an error naming it, unless the
// method's FiniteDiff field is set: then it is taken by central
// differences.
//
// A method's settings are fields of its value, zero meaning the default:
// Checkpoints, the tolerances AdjointTol and QuadTol (see Tolerance), and
// FiniteDiff.
type Sensitivity interface {
	Name() string
	settings() sensSettings // seals the interface: methods are defined in this package
}

// ForwardSensitivity solves the sensitivity equations s_k' = ∂F/∂u·s_k +
// ∂F/∂θ_k with the state, one column per parameter and per component of
// u0 (CVODES's simultaneous corrector, SciMLSensitivity's
// ForwardSensitivity). Cost grows with len(p)+n; the choice for small
// problems. It also gives the sensitivity matrices at the save times
// (GradientResult.Sens).
//
// The sensitivities' right-hand side takes one JVP per column, or, when
// the problem has a VJP and 2n ≤ len(p)+n, n VJPs (the rows of [∂F/∂u
// ∂F/∂p]) and the small dense product ∂F/∂u·S: a VJP is taken to cost at
// most two JVPs (a neural ODE with 2 states and 252 parameters: 2 VJPs
// instead of 254 JVPs per evaluation). When the problem has both Jac and
// ParamJac, those rows come from them instead (no JVP needed).
//
// With the sensitivities in the error control a higher-order pair often
// pays: Lotka-Volterra's 14 states at rtol 1e-6 take 84 Vern7 steps
// against 176 Tsit5 ones (bench sens).
//
// The sensitivities are in the step-size control, those of parameter p_k
// with the state's absolute tolerance divided by |p_k| (CVODES's pbar
// scaling; by 1 where p_k = 0), those of u0 with the state's, unless
// NoErrorControl. With a stiff method the Jacobian of the
// whole system is block lower triangular: its diagonal blocks are J (from
// Problem.Jac, else from n JVPs), its coupling blocks ∂(J·s_k)/∂u are
// forward differences of the sensitivity right-hand side in u (exact for
// F quadratic in u, else first-order accurate in √ε; Rodas5P then behaves
// as with a finite-difference Jacobian). Per Jacobian that is n
// evaluations of the sensitivity right-hand side and a dense LU of size
// n·(1+len(p)+n).
type ForwardSensitivity struct {
	// NoErrorControl leaves the sensitivities out of the step-size
	// control (CVODES's errconS = false): fewer steps, less accurate
	// gradients.
	NoErrorControl bool
	// QuadTol is the quadratures' tolerance (zero: the forward solve's).
	QuadTol Tolerance
	// FiniteDiff takes a missing Problem.JVP by finite differences.
	FiniteDiff bool
}

// InterpolatingAdjoint solves the adjoint λ' = −(∂F/∂u)ᵀλ − ∂g/∂uᵀ and the
// parameter quadrature μ' = −(∂F/∂p)ᵀλ − ∂g/∂pᵀ backwards from T1 to T0,
// reading the forward state from the forward solve's dense output, with
// λ jumping by dL/du(t_i) at each save time. Its cost grows with n and
// len(p) only through products with F's Jacobian: the default for many
// parameters (SciMLSensitivity's InterpolatingAdjoint, CVODES's adjoint).
// With a stiff method the backward system's Jacobian is exact: [−Jᵀ 0;
// −(∂F/∂p)ᵀ 0], from n VJPs (a dense LU of size n+len(p)).
type InterpolatingAdjoint struct {
	// Checkpoints, if > 0, bounds memory: instead of every step's dense
	// output, the forward solve keeps at most Checkpoints states (every
	// k-th step, k doubling as the budget fills, so the step count need
	// not be known) and the times and sizes of its steps (three float64
	// per step), and each segment between two is solved again with dense
	// output when the backward pass first reads it, on the forward
	// solve's own steps without error control (two segments held at a
	// time): the same dense output and backward steps as without
	// checkpoints, hence the same gradient, in O(Checkpoints + two
	// segments) states, for one more forward pass at the cost of its
	// steps alone.
	Checkpoints int
	// AdjointTol and QuadTol are the backward solve's and the
	// quadratures' tolerances (zero: the forward solve's).
	AdjointTol, QuadTol Tolerance
	// FiniteDiff takes a missing Problem.VJP by finite differences.
	FiniteDiff bool
}

// BacksolveAdjoint solves the state backwards together with the adjoint,
// [u, λ, μ] from T1 to T0, keeping nothing of the forward solve but the
// states at the save times (where u is reset to the forward value). It
// needs the least memory, but integrating u backwards is unstable where
// the forward problem is stiff or dissipative: on Robertson it fails
// (see the tests) with an error from the backward solve. Use it only as
// an explicit choice, on problems known to be reversible.
type BacksolveAdjoint struct {
	// AdjointTol and QuadTol are the backward solve's and the
	// quadratures' tolerances (zero: the forward solve's).
	AdjointTol, QuadTol Tolerance
	// FiniteDiff takes a missing Problem.VJP by finite differences.
	FiniteDiff bool
}

// DiscreteAdjoint is reverse mode through the steps the forward solve
// took, with the step sizes held as constants: the exact gradient of the
// computed discrete solution (interpolation at the save times included),
// to rounding — the reference the other methods are tested against. It
// supports the explicit Runge–Kutta methods.
type DiscreteAdjoint struct {
	// Checkpoints, if > 0, bounds memory: at most Checkpoints step
	// starts are kept (every k-th, k doubling as the budget fills) and
	// each segment's steps are recomputed from its checkpoint in the
	// reverse pass. The times and sizes of all steps are kept (two
	// float64 per step). 0 keeps every step's start state and its stages
	// but the last (s·n values per step for an s-stage method), so that
	// the reverse pass evaluates no F on steps without a save time inside.
	Checkpoints int
	// QuadTol is the quadratures' tolerance (zero: the forward solve's).
	QuadTol Tolerance
	// FiniteDiff takes a missing Problem.VJP by finite differences.
	FiniteDiff bool
}

func (ForwardSensitivity) Name() string   { return "ForwardSensitivity" }
func (InterpolatingAdjoint) Name() string { return "InterpolatingAdjoint" }
func (BacksolveAdjoint) Name() string     { return "BacksolveAdjoint" }
func (DiscreteAdjoint) Name() string      { return "DiscreteAdjoint" }

func (s ForwardSensitivity) settings() sensSettings {
	return sensSettings{quadTol: s.QuadTol, finiteDiff: s.FiniteDiff}
}

func (s InterpolatingAdjoint) settings() sensSettings {
	return sensSettings{adjTol: s.AdjointTol, quadTol: s.QuadTol, finiteDiff: s.FiniteDiff}
}

func (s BacksolveAdjoint) settings() sensSettings {
	return sensSettings{adjTol: s.AdjointTol, quadTol: s.QuadTol, finiteDiff: s.FiniteDiff}
}

func (s DiscreteAdjoint) settings() sensSettings {
	return sensSettings{quadTol: s.QuadTol, finiteDiff: s.FiniteDiff}
}

// ForwardSensitivityLimit is the number of parameters plus states below
// which a nil Sensitivity means ForwardSensitivity (SciMLSensitivity's
// rule of thumb); at or above it, InterpolatingAdjoint.
const ForwardSensitivityLimit = 100
