// Package optimisers holds first-order optimisation rules whose state is flat:
// every state vector is laid out like the parameter buffer θ, so an update is
// one fused loop per rule over contiguous memory, and a rule's state can be
// viewed, sliced and saved by path like θ itself.
//
//	opt, err := optimisers.Setup(optimisers.Adam(1e-3), lay)
//	err = opt.Update(θ, g)                  // in place, allocation-free; g is not modified
//	s := opt.State()                        // a copy: flat state vectors and counters
//	θ2, s2, err := optimisers.Step(s, θ, g) // functional: new values, inputs untouched
//
// # Rules
//
// A Rule is as small as an Optimisers.jl rule: how many state vectors it
// keeps (Slots), how to initialise them for a range (Init), and one loop that
// turns the update dx of a range into the rule's update (Apply); after the
// last rule θ -= dx. Rules that take a step of their own also implement Fused,
// which updates θ straight from the gradient in one pass, and the optimiser
// uses it whenever such a rule ends a chain. Rules with a global quantity
// (Global), rules that hold updates back (Gate), rules that watch θ
// (Observer) and rules that need a whole leaf at a time (Leafwise) have small
// interfaces of their own. Every other loop is elementwise, so a large leaf
// can be split across goroutines.
//
// Descent rules, with PyTorch 1.13's semantics where PyTorch has them: Descent
// (SGD), Momentum, Nesterov, RMSProp (plain and centred), Adam, AdamW,
// AMSGrad, RAdam, NAdam, AdaMax, AdaGrad, AdaDelta, Rprop; and from their
// papers: AdaBelief, Lion, OAdam. Modifiers: WeightDecay, SignDecay,
// ClipValue, ClipNorm (per leaf), ClipGlobalNorm, AccumGrad, SkipNonFinite.
// EMA keeps an average of the parameters. Chain composes rules:
//
//	optimisers.Chain(optimisers.ClipGlobalNorm(1), optimisers.WeightDecay(1e-4), optimisers.Adam(1e-3))
//
// PyTorch's weight_decay argument is Chain(WeightDecay(λ), rule); AdamW's
// and Lion's decoupled decay is a field of the rule. Weight decay has one
// name: the field WeightDecay, the hyperparameter "weight_decay".
//
// # Hyperparameters
//
// A constructor returns the rule as a value with PyTorch's defaults filled in;
// its hyperparameters are exported fields to change before Setup:
//
//	r := optimisers.Adam(1e-3)
//	r.Beta2 = 0.99
//
// A field means exactly its value: a zero Beta1 is no momentum, not "the
// default". (Unlike gonum, where a zero field means a default, a rate or a
// β that a schedule or Adjust sets to zero must mean zero.) Fields whose
// default is zero — weight decays, momentum, dampening, AdaGrad's LRDecay
// and InitialAccumulator — can be left out of a literal. Constructors never
// fail; Setup validates every rule and reports the first bad value, naming
// the rule, the field and the value ("optimisers: Adam: Beta1 = 1.5, want 0 ≤
// Beta1 < 1"). Each hyperparameter also carries a `hyper:"name"` tag with
// PyTorch's name for it ("lr", "beta1", "weight_decay"), by which a running
// optimiser's rules can be adjusted without losing their state.
//
// # Optimisers and state
//
// Setup assigns the rule to every leaf of the layout; each leaf is a range of
// its own, and leaves the layout marks frozen are skipped until Thaw. State
// holds the state vectors, each leaf's count of updates per rule, which
// leaves are trained, the hyperparameters Adjust has set, and the
// optimiser's Step and Skipped counters; it is a value, and Step never
// changes the State it is given. Update and Step run the same code, so they
// agree bit for bit.
//
// Counting: Step counts the updates that changed θ (in at least one leaf).
// An update that SkipNonFinite rejects changes nothing but Skipped; an
// update AccumGrad holds back runs the rules up to it and counts for them
// only. Each rule sees its own count t of each leaf, 1 at its first update
// of that leaf, so Adam behind AccumGrad(4) bias-corrects with t = 1, 2, 3, …
// rather than 4, 8, 12, and a leaf thawed late starts at t = 1 (its state
// initialised then), as a PyTorch parameter that had no gradient until then.
//
// # Per-path rules, freezing, adjusting
//
// ByPath trains each leaf with the rule of the first pattern matching its
// path (globs over dotted paths; "*" matches across dots, a group's path
// matches everything under it):
//
//	optimisers.ByPath(lay, []optimisers.PathRule{{"*.bias", optimisers.Adam(1e-3)},
//		{"encoder", optimisers.Adam(1e-4)}, {"*", optimisers.AdamW(1e-3, 1e-2)}})
//
// opt.Freeze(path) and opt.Thaw(path) stop and resume training a leaf or a
// group, keeping its state; Thaw also trains leaves the layout marks
// frozen. opt.Adjust(optimisers.Set("lr", 1e-4)) changes a hyperparameter by its
// tag name in every rule that has it, or with paths only under them, without
// touching the moments. State has functional Freeze, Thaw and Adjust.
//
// # Schedules
//
// Scheduled(rule, "lr", s) sets the rule's "lr" to s.At(step) before each
// update, step being the 1-based number of the update about to be made
// (State.Step + 1). Schedules: Constant, StepDecay, Exponential, Cosine,
// Linear, LinearWarmup, WarmupCosine and Join, which runs several one after
// the other; ScheduleFunc adapts a function.
//
// # Checkpoints
//
// opt.Save(w) writes the state (slots, counters, per-leaf counts, frozen
// leaves, adjusted hyperparameters) as a safetensors file through the layout
// package, the state vectors named "slot<k>.<leaf path>"; Load(r, rule, lay)
// continues bit for bit as the saved optimiser would have. The file says it
// holds optimiser state, and also keeps the rule's hyperparameters as set
// up and its schedules' values, which Load compares with its rule: a
// changed schedule or hyperparameter is an error naming it.
//
// SaveCheckpoint(w, Checkpoint{Layout, Params, Opt, StateLayout, State})
// writes θ, the optimiser and optionally the model's state (BatchNorm's
// running statistics) in one safetensors file ("params.*", "optimiser.*",
// "state.*"); LoadCheckpoint(r, …) reads it back. SaveCheckpointFile and
// LoadCheckpointFile take a path, and SaveCheckpointFile writes atomically. Train numbers its
// steps on from the optimiser's, so a resumed run continues its numbering.
//
// # Minimize
//
// Minimize runs gonum/optimize on a float32 Objective (FromAD adapts one
// written with ad ops). An objective returns an error when it fails; the
// error stops the run and is the cause of Minimize's error. A failed line
// search at a minimum that float32 cannot improve is status
// Float32Converged with a nil error; the default stopping rule is
// Float32Converge.
//
// # Training loop and speed
//
// Train runs batches through a loss written with ad ops on one reused tape,
// calling back every k steps. Update allocates nothing. SetWorkers(n) lets
// one Update run on n goroutines (flat.ParallelFor, chunks of at least
// 32 768 floats, whole leaves for Leafwise chains) with the same bits as on
// one. On amd64, Adam's and AdamW's fused step runs an AVX2 or AVX-512
// kernel that does the Go loop's operations in its order, so it gives the
// same bits (build tag noasm for pure Go).
//
// # Errors
//
// Every error reads "optimisers: ", where it happened and what was wrong,
// with the value that came and the value wanted: "optimisers: Chain: rule 1:
// Adam: Beta1 = 1.5, want 0 ≤ Beta1 < 1". The prefix appears once however
// deeply rules nest (chains, ByPath, schedules); a Validate error of a
// user's rule gets it too, behind the rule's type. Causes stay reachable
// with errors.Is and errors.As: a user rule's own error, and layout's
// *layout.PathError for an unknown path given to Freeze, Thaw, Adjust or
// Hyper ("optimisers: Freeze: layout: Range "0.wieght": unknown path, …"),
// which keeps its own prefix as an error of another package does.
package optimisers
