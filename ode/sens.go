package ode

// Sensitivity is a way of differentiating a solve: ForwardSensitivity,
// InterpolatingAdjoint, GaussAdjoint, BacksolveAdjoint or
// DiscreteAdjoint. Which derivative products of F each needs:
//
//	ForwardSensitivity    Problem.JVP
//	InterpolatingAdjoint  Problem.VJP
//	GaussAdjoint          Problem.VJP
//	BacksolveAdjoint      Problem.VJP
//	DiscreteAdjoint       Problem.VJP
//
// With a stiff method such as Rodas5P, the Jacobian of the system
// integrated is built from Problem.Jac or from the products, as the
// method's doc says. A missing product is an error naming it, unless the
// method's FiniteDiff field is set: then it is taken by central
// differences. ∂F/∂u·v takes 2 evaluations of F, with the step
// ∛ε·max(1, ‖u‖∞) along v/‖v‖∞ in the state's precision; ∂F/∂p takes 2
// per parameter, each stepped in float32 by ∛ε₃₂·max(|p_k|, 1) ≈
// 4.9e-3·max(|p_k|, 1) on a private copy of p. The error is about ε^(2/3)
// relative plus the truncation, δ²/6·|∂³F/∂p_k³|: exact to rounding when F
// is linear in p, as mass-action kinetics are. TestFiniteDiffProducts
// holds the figures.
//
// A method's settings are fields of its value, zero meaning the default:
// Checkpoints, the Tolerance fields AdjointTol and QuadTol, and FiniteDiff.
type Sensitivity interface {
	Name() string
	settings() sensSettings // seals the interface: methods are defined in this package
}

// ForwardSensitivity solves the sensitivity equations
//
//	s_k' = ∂F/∂u·s_k + ∂F/∂θ_k
//
// with the state, one column per parameter and per component of u0, as
// CVODES's forward sensitivities and SciMLSensitivity's
// ForwardSensitivity do. Its cost grows with np+n for np parameters, so it is
// the choice for small problems. It also gives the sensitivity matrices at
// the save times, in GradientResult.Sens.
//
// The sensitivities' right-hand side takes one JVP per column. When the
// problem has a VJP and 2n ≤ np+n, it takes n VJPs instead, the rows of
// [∂F/∂u ∂F/∂p], and the small dense product ∂F/∂u·S. A VJP is taken to
// cost at most two JVPs. So a neural ODE with 2 states and 252 parameters
// takes 2 VJPs per evaluation instead of 254 JVPs. When the problem has
// both Jac and ParamJac, those rows come from them and no JVP is needed.
//
// With the sensitivities in the error control a higher-order pair often
// pays: bench sens compares Vern7 with Tsit5 on Lotka-Volterra.
//
// The sensitivities are in the step-size control unless NoErrorControl is
// set. Those of u0 take the state's absolute tolerance. Those of parameter
// p_k take it divided by |p_k|, or by 1 where p_k = 0: CVODES's pbar
// scaling.
//
// With a stiff method the Jacobian of the whole system is block lower
// triangular. Its diagonal blocks are J, from Problem.Jac or else from n
// JVPs. Its coupling blocks ∂(J·s_k)/∂u are forward differences of the
// sensitivity right-hand side in u. They are exact for F quadratic in u,
// else first-order accurate in √ε; Rodas5P then behaves as with a
// finite-difference Jacobian.
//
// BDF uses CVODES's staggered corrector (CV_STAGGERED) whenever the
// problem has Problem.JVP or Problem.Jac (JVP with GMRES), in every
// structure: each step converges Newton's iteration on the state alone,
// then solves the sensitivities, linear in them at the converged state,
// with the state's factorisation (or its GMRES and preconditioner), once
// or twice per step, and tests them for convergence in their own weights
// (also under NoErrorControl, which leaves them out of the error test
// only). A step whose sensitivities do not converge is retried with h/4.
// The error test is one norm over the state and the sensitivities.
//
// With a band, sparse or matrix-free Problem.JacStructure, J is kept in
// that structure and I − c·J is factored once (or GMRES run) for all the
// blocks, each solved with the state's factorisation; a Rosenbrock
// method adds the coupling blocks' products to its solves, one
// difference of the system's right-hand side per solve. Otherwise (a
// Rosenbrock method with a dense structure, or BDF without JVP and Jac)
// the whole system's Jacobian is formed: n evaluations of the
// sensitivity right-hand side per Jacobian and a dense LU of size
// n·(1+np+n), for small problems only.
type ForwardSensitivity struct {
	// NoErrorControl leaves the sensitivities out of the step-size
	// control, as CVODES's errconS = false does: fewer steps, less
	// accurate gradients.
	NoErrorControl bool
	// QuadTol is the quadratures' tolerance; zero means the forward
	// solve's.
	QuadTol Tolerance
	// FiniteDiff takes a missing Problem.JVP by finite differences.
	FiniteDiff bool
}

// InterpolatingAdjoint solves the adjoint and the parameter quadrature
//
//	λ' = −(∂F/∂u)ᵀλ − ∂g/∂uᵀ,   μ' = −(∂F/∂p)ᵀλ − ∂g/∂pᵀ
//
// backwards from T1 to T0. It reads the forward state from the forward
// solve's dense output, and λ jumps by dL/du(t_i) at each save time. Its
// cost grows with n and the number of parameters only through products
// with F's Jacobian. It is the default for many parameters, as
// SciMLSensitivity's InterpolatingAdjoint and CVODES's adjoint are.
//
// With a stiff method the backward solve runs in the transposed structure
// of Problem.JacStructure: a band's bandwidths swapped, a sparse pattern
// transposed, matrix-free by GMRES on −Jᵀ·v from one VJP per product,
// with the method's linear solver (a band preconditioner's bandwidths
// swapped). −Jᵀ comes from Problem.Jac, gathered from its storage, else
// from coloured VJPs (n for a dense J). μ is integrated beside λ with the
// QuadTol tolerances but is not in the factorisation: each solve adds
// μ's rows by one VJP, exactly, so the method keeps its order on μ. The
// forward pass solves the problem in its own structure, a running cost's
// integral beside it in the same way (its row by a difference of the
// running cost in a Rosenbrock solve); that needs Problem.Jac or
// Problem.JVP, else the forward pass with a running cost is dense.
type InterpolatingAdjoint struct {
	// Checkpoints, if > 0, bounds memory. Instead of every step's dense
	// output, the forward solve keeps at most Checkpoints states and the
	// times and sizes of its steps, three float64 per step. It keeps
	// every k-th step, k doubling as the budget fills, so the step count
	// need not be known. The backward pass solves each segment between
	// two checkpoints again when it first reads it. The replay runs on
	// the forward solve's own steps without error control, and holds two
	// segments at a time. So it gives the same dense output, backward
	// steps and gradient as without checkpoints. The cost is one more
	// forward pass, at the cost of its steps alone, and the memory is
	// Checkpoints states plus two segments.
	//
	// BDF takes no fixed steps: it solves each segment again with error
	// control, from order 1 at the checkpoint. Its dense output and
	// gradient then differ from those without checkpoints by about the
	// tolerance, and the replay costs more steps than the forward pass.
	//
	// Every firing of an event or a schedule keeps a checkpoint of the
	// state after it besides these, so that no re-solved segment holds a
	// firing.
	Checkpoints int
	// AdjointTol and QuadTol are the backward solve's and the
	// quadratures' tolerances; zero means the forward solve's.
	AdjointTol, QuadTol Tolerance
	// FiniteDiff takes a missing Problem.VJP by finite differences.
	FiniteDiff bool
}

// GaussAdjoint is InterpolatingAdjoint with the parameter gradient taken
// by quadrature instead of carried in the backward solve, as
// SciMLSensitivity's GaussAdjoint. The backward solve integrates λ alone;
// on each of its steps
//
//	μ += ∫ −(∂F/∂p)ᵀλ − ∂g/∂pᵀ dt
//
// by a Gauss–Legendre rule on each piece of the step between the forward
// solve's step ends, λ read from the step's interpolant and u from the
// forward solve's dense output, one VJP per node. So a fast transient of
// u that λ does not have is integrated on the forward solve's small steps
// (TestGaussAdjointFastTransient). The backward state has n components
// instead of n + np, and μ is outside its error control: μ's accuracy
// follows λ's, the forward solve's and the rule's; there is no QuadTol.
// So it pays
// when the parameters outnumber the states, as in a neural ODE
// (BenchmarkGaussAdjointNeural in ode/odead); with few parameters it costs
// about what InterpolatingAdjoint does (BenchmarkGaussAdjointBrusselator).
// With a stiff method λ's solve is InterpolatingAdjoint's, in the
// transposed structure.
type GaussAdjoint struct {
	// Checkpoints bounds memory as InterpolatingAdjoint's does.
	Checkpoints int
	// Nodes is the number of Gauss–Legendre nodes per piece, 1
	// to 5; 0 means the fewest whose rule is exact to the method's order
	// (3 for order 5), at least 2.
	Nodes int
	// AdjointTol is the backward solve's tolerance; zero means the
	// forward solve's.
	AdjointTol Tolerance
	// FiniteDiff takes a missing Problem.VJP by finite differences.
	FiniteDiff bool
}

// BacksolveAdjoint solves the state backwards together with the adjoint:
// [u, λ, μ] from T1 to T0. It keeps nothing of the forward solve but the
// states at the save times, where u is reset to the forward value. It
// needs the least memory, but integrating u backwards is unstable where
// the forward problem is stiff or dissipative. On Robertson, and on the
// 1-D Brusselator's diffusion, it fails with an error from the backward
// solve that says so (TestBacksolveAdjointFailsOnRobertson). Use it only
// as an explicit choice, on problems known to be reversible.
//
// With a stiff method and a band, sparse or matrix-free
// Problem.JacStructure, the backward system's Jacobian is block lower
// triangular: J on u, −Jᵀ on λ in the transposed structure (as for
// InterpolatingAdjoint), and μ's rows added exactly by one VJP per solve.
// A Rosenbrock method's solves add the coupling of λ and μ to u (F's
// second derivatives) by a forward difference of the VJP, one per solve,
// so the method keeps its order; BDF leaves that coupling out of its
// Newton matrix. TestBacksolveGradientStructures checks both. With a
// dense structure the whole system's Jacobian is taken by differences.
type BacksolveAdjoint struct {
	// AdjointTol and QuadTol are the backward solve's and the
	// quadratures' tolerances; zero means the forward solve's.
	AdjointTol, QuadTol Tolerance
	// FiniteDiff takes a missing Problem.VJP by finite differences.
	FiniteDiff bool
}

// DiscreteAdjoint is reverse mode through the steps the forward solve
// took, with the step sizes held as constants. It gives the exact gradient
// of the computed discrete solution to rounding, interpolation at the save
// times included. It is the reference the other methods are tested
// against. It supports the explicit Runge–Kutta methods, Rosenbrock23 and
// Rodas5P.
//
// Through a Rosenbrock step it evaluates J and factors W = I − hγJ again
// in the forward structure, solves with Wᵀ from that factorisation (dense,
// band or sparse LU) or by GMRES on VJPs (preconditioned by the transposed
// preconditioner), and takes the derivative of J along each stage by a
// central difference of two VJPs, whose relative error is about ε^⅔. J
// counts as ∂F/∂u: with a difference Jacobian the gradient is that of the
// solution with the exact one. With GMRES the forward stages are inexact;
// the gradient is then that of the step map with exact solves, at the
// computed stages. TestDiscreteAdjointRosenbrockFixedSteps and
// TestDiscreteAdjointRosenbrockStructures check it against differences of
// fixed-step solves.
//
// A step that an event cuts ends on its interpolant, at the event time,
// and the reverse pass goes through that interpolant as through a save
// time inside a step. The event time's derivative is the continuous one
// (Event's doc), with F at the state before the firing in place of the
// interpolant's slope: where event times, or schedule times that are
// parameters, move with θ, the gradient is exact to the method's local
// error rather than to rounding. Schedules at fixed times are exact.
type DiscreteAdjoint struct {
	// Checkpoints, if > 0, bounds memory: at most Checkpoints step
	// starts are kept, every k-th, k doubling as the budget fills. The
	// reverse pass recomputes each segment's steps from its checkpoint.
	// The times and sizes of all steps are kept, two float64 per step.
	// 0 keeps every step's start state and its stages (all but the last
	// for an explicit method), about s·n values per step for an s-stage
	// method. The reverse pass then evaluates no F on explicit steps
	// without a save time inside, and solves no stage of a Rosenbrock
	// step again.
	Checkpoints int
	// QuadTol is the quadratures' tolerance; zero means the forward
	// solve's.
	QuadTol Tolerance
	// FiniteDiff takes a missing Problem.VJP by finite differences.
	FiniteDiff bool
}

func (ForwardSensitivity) Name() string   { return "ForwardSensitivity" }
func (InterpolatingAdjoint) Name() string { return "InterpolatingAdjoint" }
func (GaussAdjoint) Name() string         { return "GaussAdjoint" }
func (BacksolveAdjoint) Name() string     { return "BacksolveAdjoint" }
func (DiscreteAdjoint) Name() string      { return "DiscreteAdjoint" }

func (s ForwardSensitivity) settings() sensSettings {
	return sensSettings{quadTol: s.QuadTol, finiteDiff: s.FiniteDiff}
}

func (s InterpolatingAdjoint) settings() sensSettings {
	return sensSettings{adjTol: s.AdjointTol, quadTol: s.QuadTol, finiteDiff: s.FiniteDiff}
}

func (s GaussAdjoint) settings() sensSettings {
	return sensSettings{adjTol: s.AdjointTol, finiteDiff: s.FiniteDiff}
}

func (s BacksolveAdjoint) settings() sensSettings {
	return sensSettings{adjTol: s.AdjointTol, quadTol: s.QuadTol, finiteDiff: s.FiniteDiff}
}

func (s DiscreteAdjoint) settings() sensSettings {
	return sensSettings{quadTol: s.QuadTol, finiteDiff: s.FiniteDiff}
}

// ForwardSensitivityLimit is the number of parameters plus states below
// which a nil Sensitivity means ForwardSensitivity; at or above it, a nil
// Sensitivity means InterpolatingAdjoint. It is SciMLSensitivity's rule
// of thumb.
const ForwardSensitivityLimit = 100
