// Package optimisers holds first-order optimisation rules whose state is
// flat. Every state vector is laid out like the parameter buffer θ. So an
// update is one fused loop per rule over contiguous memory, and a rule's
// state can be viewed, sliced and saved by path like θ itself.
//
//	opt, err := optimisers.Setup(optimisers.Adam(1e-3), lay)
//	err = opt.Update(θ, g)                  // in place, allocation-free; g is not modified
//	s := opt.State()                        // a copy: flat state vectors and counters
//	θ2, s2, err := optimisers.Step(s, θ, g) // functional: new values, inputs untouched
//
// # Rules
//
// A Rule is as small as an Optimisers.jl rule. Slots says how many state
// vectors it keeps, and Init initialises them for a range. Its one loop,
// Apply, turns the update dx of a range into the rule's update; after the
// last rule, θ -= dx. Rules that take a step of their own also implement
// Fused, which updates θ straight from the gradient in one pass. The
// optimiser uses it whenever such a rule ends a chain.
//
// Four small interfaces mark rules that need more: Global for a global
// quantity, Gate for holding updates back, Observer for watching θ, and
// Leafwise for a whole leaf at a time. Every other loop is elementwise, so
// a large leaf can be split across goroutines.
//
// Descent rules follow PyTorch 1.13 where PyTorch has them: Descent (SGD),
// Momentum, Nesterov, RMSProp, Adam, AdamW, AMSGrad, RAdam, NAdam, AdaMax,
// AdaGrad, AdaDelta and Rprop. AdaBelief, Lion and OAdam follow their
// papers. The modifiers are WeightDecay, SignDecay, ClipValue, ClipNorm,
// ClipGlobalNorm, AccumGrad and SkipNonFinite. EMA keeps an average of the
// parameters. Chain composes rules:
//
//	optimisers.Chain(optimisers.ClipGlobalNorm(1), optimisers.WeightDecay(1e-4), optimisers.Adam(1e-3))
//
// PyTorch's weight_decay argument is Chain(WeightDecay(λ), rule). AdamW's
// and Lion's decoupled decay is a field of the rule. Weight decay has one
// name: the field WeightDecay, the hyperparameter "weight_decay".
//
// # Hyperparameters
//
// A constructor returns the rule as a value with PyTorch's defaults filled
// in. Its hyperparameters are exported fields to change before Setup:
//
//	r := optimisers.Adam(1e-3)
//	r.Beta2 = 0.99
//
// A field means exactly its value: a zero Beta1 is no momentum, not "the
// default". This differs from gonum, where a zero field means a default,
// because a rate that a schedule or Adjust sets to zero must mean zero.
// Fields whose default is zero can be left out of a literal: weight
// decays, momentum, dampening, AdaGrad's LRDecay and InitialAccumulator.
//
// Constructors never fail. Setup validates every rule and reports the
// first bad value, naming the rule, the field and the value:
// "optimisers: Adam: Beta1 = 1.5, want 0 ≤ Beta1 < 1". Each hyperparameter
// also carries a `hyper:"name"` tag with PyTorch's name for it, such as
// "lr", "beta1" or "weight_decay". Adjust and Scheduled find it by that
// name in a running optimiser's rules, without losing their state.
//
// # Optimisers and state
//
// Setup assigns the rule to every leaf of the layout, and each leaf is a
// range of its own. Leaves the layout marks frozen are skipped until Thaw.
// State holds the state vectors, each leaf's count of updates per rule, and
// which leaves are trained. It also holds the hyperparameters Adjust has
// set, and the optimiser's Step and Skipped counters. A State is a value:
// Step never changes the State it is given. Update and Step run the same
// code, so they agree bit for bit.
//
// Step counts the updates that changed θ in at least one leaf. An update
// that SkipNonFinite rejects changes nothing but Skipped. An update that
// AccumGrad holds back runs the rules up to it and counts for them only.
// Each rule sees its own count t of each leaf, 1 at its first update of
// that leaf. So Adam behind AccumGrad(4) bias-corrects with t = 1, 2, 3, …
// rather than 4, 8, 12. A leaf thawed late starts at t = 1 with fresh
// state, as a PyTorch parameter that had no gradient until then.
//
// # Per-path rules, freezing, adjusting
//
// ByPath trains each leaf with the rule of the first pattern that matches
// its path. Patterns are globs over dotted paths: "*" matches across dots,
// and a group's path matches everything under it.
//
//	optimisers.ByPath(lay, []optimisers.PathRule{{"*.bias", optimisers.Adam(1e-3)},
//		{"encoder", optimisers.Adam(1e-4)}, {"*", optimisers.AdamW(1e-3, 1e-2)}})
//
// Optimiser.Freeze stops training a leaf or a group and Thaw resumes it;
// both keep its state. Thaw also trains leaves the layout marks
// frozen. opt.Adjust(optimisers.Set("lr", 1e-4)) changes a hyperparameter
// by its tag name without touching the moments. It changes every rule that
// has the name, or, given paths, only the rules under them. State has
// functional Freeze, Thaw and Adjust.
//
// # Schedules
//
// Scheduled(rule, "lr", s) sets the rule's "lr" to s.At(step) before each
// update. step is the 1-based number of the update about to be made,
// State.Step + 1. The schedules are Constant, StepDecay, Exponential,
// Cosine, Linear, LinearWarmup, WarmupCosine and Join, which runs several
// one after the other. ScheduleFunc adapts a function.
//
// # Checkpoints
//
// opt.Save(w) writes the optimiser's state as a safetensors file through
// the layout package: the slots, counters, per-leaf counts, frozen leaves
// and adjusted hyperparameters. The state vectors are named
// "slot<k>.<leaf path>". Load(r, rule, lay) continues bit for bit as the
// saved optimiser would have. The file says it holds optimiser state. It
// also keeps the rule's hyperparameters as set up and its schedules'
// values, and Load compares them with its rule: a changed schedule or
// hyperparameter is an error naming it.
//
// SaveCheckpoint(w, c) writes a training checkpoint in one safetensors
// file: θ, the optimiser and, if c has them, the model's state tensors such
// as BatchNorm's running statistics. LoadCheckpoint(r, rule, c) reads it
// back; with a nil rule, the parameters and state alone. SaveCheckpointFile and LoadCheckpointFile take a path, and
// SaveCheckpointFile writes atomically. Train numbers its steps on from the
// optimiser's, so a resumed run continues its numbering.
//
// # Minimize
//
// Minimize runs gonum/optimize on a float32 Objective. FromAD adapts one
// written with ad ops. An objective returns an error when it fails, say
// when a solve blows up. Minimize takes such a point as infeasible and
// shrinks the step; the run ends with the cause only when the start fails
// or MaxConsecutiveFailures evaluations in a row fail. A failed line
// search at a minimum that float32 cannot improve has status
// Float32Converged and a nil error. The default stopping rule is
// Float32Converge.
//
// # Second order: Newton and the Laplace approximation
//
// NewtonCG is a trust-region Newton method that needs only Hessian-vector
// products: Steihaug–Toint truncated CG inside the region, as SciPy's
// minimize(method="trust-ncg") does. It suits losses whose H·v costs a few
// gradients (forward over reverse in ad, or a second-order adjoint):
//
//	res, err := optimisers.Minimize(fg, θ, &optimisers.NewtonCG{Hv: hv}, nil)
//
// A step the trust region rejects is shortened along the CG path already
// computed, so it costs an evaluation and no product. The products may be
// inexact, as from an ODE solve at a looser tolerance than the gradient's.
//
// For few parameters, Newton runs gonum's line-search Newton method on the
// full Hessian, given by a function or built from len(θ) products.
//
// At the optimum, the Hessian of a negative log-likelihood gives the
// uncertainty of the fit. HessianFromHv builds it from len(θ) products,
// and NewLaplace inverts it by its eigen-decomposition into a covariance
// with standard errors by layout path (StdErrOf). When the Hessian is
// singular or nearly so, Laplace.Null and Warning name the parameter
// combinations the data do not determine, such as two rates that enter
// only as their product. proptest.CheckHv checks a hand-built H·v against
// the gradient.
//
// # Bounds and transforms
//
// Two ways keep a fitted parameter in its range. LBFGSB honours bounds:
// BoundsByPath gives each leaf or group of a layout an Interval, and
// Minimize runs the bound-constrained L-BFGS-B method of Byrd, Lu, Nocedal
// and Zhu, as SciPy's minimize(method="L-BFGS-B") does:
//
//	b, err := optimisers.BoundsByPath(lay, map[string]optimisers.Interval{
//		"beta": {Lo: 0, Hi: math.Inf(1)}, "gamma": {Lo: 0, Hi: 1}})
//	res, err := optimisers.Minimize(fg, θ, &optimisers.LBFGSB{Bounds: b}, nil)
//
// Every point LBFGSB evaluates is inside the bounds, and a start outside
// is projected onto them. It converges on the projected gradient, which is
// zero at a minimum on a bound where the gradient is not. A failed
// evaluation (an error, a NaN or infinite loss or gradient) inside its line
// search shrinks the step; the run ends with the cause only when the
// search cannot recover.
//
// Transforms reparameterise instead, for any method: the optimiser works
// on an unconstrained z, and the objective sees θ = T(z). Positive is
// exp(z), PositiveSoftplus log(1 + exp(z)), and Between(lo, hi) a scaled
// sigmoid. TransformsByPath assigns them by path; FromUser converts the
// start, Wrap the objective with its gradient chained through T, and
// ToUser the fit back to the user's units:
//
//	tr, err := optimisers.TransformsByPath(lay, map[string]optimisers.Transform{
//		"beta": optimisers.Positive(), "gamma": optimisers.Between(0, 1)})
//	err = tr.FromUser(z, θ)
//	res, err := optimisers.Minimize(tr.Wrap(fg), z, nil, nil)
//	err = tr.ToUser(θ, z)
//
// Bounds allow the ends of an interval and leave the loss's curvature
// alone; a transform never reaches an end, bends the loss, and coarsens
// float32's resolution of θ by |z| (see Transforms). Prefer bounds when
// the optimum may sit on a bound, transforms when a method other than
// LBFGSB is wanted or a rate's scale is unknown.
//
// # Training loop and speed
//
// Train runs batches through a loss written with ad ops on one reused tape.
// It calls back every k steps. Update allocates nothing. SetWorkers(n) lets
// one Update run on n goroutines with the same bits as on one. On amd64,
// Adam's and AdamW's fused step runs an AVX2 or AVX-512 kernel. The kernel
// does the Go loop's operations in its order, so it gives the same bits;
// build tag noasm selects pure Go.
//
// # Errors
//
// Every error reads "optimisers: ", then where it happened and what was
// wrong, with the value that came and the value wanted:
// "optimisers: Chain: rule 1: Adam: Beta1 = 1.5, want 0 ≤ Beta1 < 1". The
// prefix appears once however deeply rules nest in chains, ByPath and
// schedules. A Validate error of a user's rule gets it too, behind the
// rule's type. Causes stay reachable with errors.Is and errors.As: a user
// rule's own error, an Objective's error, and layout's *layout.PathError
// for an unknown path given to Freeze, Thaw, Adjust or Hyper. An error of
// another package keeps its own prefix:
// "optimisers: Freeze: layout: Range "0.wieght": unknown path, …".
package optimisers
