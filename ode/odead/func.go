package odead

import (
	"fmt"
	"sync/atomic"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/freelist"
	"github.com/flatkit/flatkit/internal/funcopt"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/linalg"
)

// Func adapts a right-hand side written with ad ops to the in-place form
// of ode.Problem[float32], with its exact Jacobian from automatic
// differentiation for the stiff methods. It returns an ode.Problem with F,
// Jac and Err set; the caller sets U0, the span and P:
//
//	robertson := func(u, p ad.Var, t float64) ad.Var {
//		y1, y2, y3 := ad.Slice(u, 0, 1), ad.Slice(u, 1, 2), ad.Slice(u, 2, 3)
//		r1, r2, r3 := ad.Scale(y1, 0.04), ad.Scale(ad.Mul(y2, y3), 1e4), ad.Scale(ad.Square(y2), 3e7)
//		return ad.Concat(0, ad.Sub(r2, r1), ad.Sub(ad.Sub(r1, r2), r3), r3)
//	}
//	prob := odead.Func(robertson, 3)
//	prob.U0, prob.T1 = []float32{1, 0, 0}, 1e5
//
// f is an RHS of either form: with t a float64, as above, or with t a
// scalar Var, func(u, p, t ad.Var) ad.Var, which is replayed by default
// (see RHS and Replayable). f receives the state u, of shape [n], and the
// parameters p, of shape [len(p)]. It returns du/dt as a Var of n elements. For F and Jac, p is a
// constant: the Jacobian is with respect to u only. Derivs adds the
// products that sensitivities and adjoints need, for which p is
// differentiable too. f is recorded on tapes kept for reuse, one set per
// goroutine in use. So F and Jac are safe for concurrent use, as an
// ensemble needs, and allocate nothing once warm if f's ops do not. With
// the option Replayable, f is recorded once per product and goroutine and
// then replayed.
//
// The Jacobian is one recording of f and n reverse sweeps (row i of J is
// the cotangent of the i-th unit vector): J[i*n+j] = ∂du_i/∂u_j. A
// recording that is replayed writes it instead by one forward sweep per
// colour of its pattern (ad.Tape.JacobianPattern, found once) when there
// are fewer colours than rows: the same derivatives, summed in another
// order, so they may differ in the last bit from those of a recording made
// at every call. With JacPattern (and BandJac), it is sparse (or band) instead: JacStructure
// says so, and Jac writes its storage by one forward sweep per colour of
// the pattern (see SparseJac).
//
// F and Jac cannot return errors. If f fails, with an error recorded on
// the tape (a shape mismatch, a missing derivative rule, a result of the
// wrong size), the call leaves its output as it was. Err reports the
// error from then on. The first failure of any call is kept, as a tape
// keeps its first error: make a new problem to go on. A solve that uses
// the problem then ends with ode.Failed and f's error as its cause, which
// errors.Is and errors.As reach. That holds also when several goroutines
// share the problem. Problem builds the whole ode.Problem and reports
// such an error up front.
//
// n < 1 or a nil f is a bug, and panics.
func Func[R RHS](f R, n int, opts ...Option) ode.Problem[float32] {
	return given[float32]("Func", f, n, opts).problem(false)
}

// Func64 is Func for a float64 state: f computes in float64, with u a
// float64 Var and p the float32 parameters converted to float64
// (ad.ParamFloat64), so F, Jac, JVP and VJP are exact to float64
// rounding. Constants inside f must be float64 too: make them with
// ad.ScalarLike(u, c) or ad.Scale, not Tape.Scalar, whose float32 value
// mixed with u is an error that Err reports.
func Func64[R RHS](f R, n int, opts ...Option) ode.Problem[float64] {
	return given[float64]("Func64", f, n, opts).problem(false)
}

// Derivs64 is Derivs for a float64 state, as Func64 is Func's: the
// products are float64, and dp, the parameter part, is float64 too.
func Derivs64[R RHS](f R, n int, opts ...Option) ode.Problem[float64] {
	return given[float64]("Derivs64", f, n, opts).problem(true)
}

// Derivs is Func with the derivative products JVP and VJP of
// ode.Problem, which ode.Gradient's sensitivity methods need. For them p
// is differentiable: a Param on the tape, of shape [len(p)], like u.
//
//   - JVP writes jv = ∂F/∂u·v + ∂F/∂p·dp by forward mode: one recording of
//     f and one forward sweep seeded with v at u and dp at p (a nil dp
//     seeds nothing at p, so what depends on p alone is not swept).
//   - VJP adds wᵀ·∂F/∂u into du and wᵀ·∂F/∂p into dp by reverse mode: one
//     recording and one reverse sweep seeded with w, towards u and p at
//     once (towards u only when dp is nil).
//   - VJPJVP adds the VJP and its derivative along (wd, ud, pd) by forward
//     mode over reverse mode: one recording, two reverse sweeps (w, wd)
//     and a forward sweep of the first's results (see ode.HvSolver).
//
// Both are exact to the rounding of the state's precision (float32 here,
// float64 with Derivs64). They are safe for concurrent use and
// allocation-free once warm, as F and Jac are. A replayed recording (see
// Replayable) is replayed with its sweep. If f fails they leave jv, or du
// and dp, as they were, and Err reports the error, as for F; Problem
// reports it up front. F, Jac and Err are those of Func.
//
// n < 1 or a nil f is a bug, and panics.
func Derivs[R RHS](f R, n int, opts ...Option) ode.Problem[float32] {
	return given[float32]("Derivs", f, n, opts).problem(true)
}

// given is the adRHS of Func, Func64, Derivs and Derivs64 (named fn in
// its panics), whose structure, if not dense, is given by JacPattern.
func given[F ode.Float, R RHS](fn string, f R, n int, opts []Option) *adRHS[F] {
	if n < 1 || f == nil {
		panic(fmt.Sprintf("odead: %s(f, %d): want a non-nil f and n ≥ 1", fn, n))
	}
	a := newADRHS[F](f, n, opts)
	a.givenStructure(fn)
	return a
}

// problem is the ode.Problem with a's F, Jac, JacStructure and Err, and
// with derivs its JVP and VJP.
func (a *adRHS[F]) problem(derivs bool) ode.Problem[F] {
	p := ode.Problem[F]{F: a.callF, Jac: a.callJac, JacStructure: a.structure(), Err: a.errOf}
	if derivs {
		p.JVP, p.VJP, p.VJPJVP = a.callJVP, a.callVJP, a.callVJPJVP
	}
	return p
}

// structure is the ode.Structure of the Jacobian that a's Jac writes.
func (a *adRHS[F]) structure() ode.Structure {
	if a.cj != nil {
		return a.cj.structure()
	}
	return nil
}

// givenStructure sets up the sparse or band Jacobian of Func and Derivs,
// which have no state to detect a pattern at: the pattern must be given
// with JacPattern. Anything else is a bug, and panics.
func (a *adRHS[F]) givenStructure(fn string) {
	if a.cfg.jac != jacDense && a.cfg.pattern == nil {
		panic(fmt.Sprintf("odead: %s with SparseJac or BandJac: want the pattern given by JacPattern (from Sparsity), or Problem, which detects it at u0", fn))
	}
	if err := a.useStructure(&a.cfg, a.cfg.pattern); err != nil {
		panic(fmt.Sprintf("odead: %s: JacPattern: %v", fn, err))
	}
}

// Option configures Func, Derivs and Problem.
type Option func(*adConfig)

type adConfig struct {
	replay  int             // replayDefault, replayTrusted or replayNever
	jac     int             // jacDense, jacSparse or jacBand
	pattern *linalg.Pattern // given by JacPattern
}

// Replayable declares that f records the same ops, with the same
// attributes and constants, at every call: what it records depends on the
// shapes of u and p only, not on t or on Go state that changes between
// calls. Each product (F, Jac, JVP, VJP) is then recorded once per
// goroutine, with its derivative sweep. Later calls replay that recording
// with the new u, p and directions: the bits of a fresh recording,
// without building a node. A replay runs only the ops the product's
// results need (ad.Tape.ReplayFor), so a VJP leaves out f's last ops,
// which its sweep does not read. The recording keeps its own copies of u
// and the directions, into which each call copies its own, so that a
// replay reads them in place.
//
// Without this option, an f with t a float64 is recorded anew at every
// call: odead cannot know that its recording holds at another t (a Go
// closure may read t and branch, or fold it into a constant). Declare it
// Replayable when it does not read t, or write it with t as a Var (see
// RHS), a form that is replayed by default because ad sees every use of
// t: ops on it are replayed, and a read of its value (Item64) marks the
// recording value-dependent.
//
// A recording that ad finds value-dependent is recorded anew at every
// call, with this option or not: a Max or MaxPool, whose argmax the rules
// keep, or a value that f's Go code reads and acts on. An f that reads t
// must not be declared Replayable: a replay keeps the t of the first
// call. A NeuralRHS is replayable, but it says so only through this
// option: NeuralProblem passes it.
func Replayable() Option { return func(c *adConfig) { c.replay = replayTrusted } }

// RecordEachCall records f anew at every call, never replaying it: for a
// right-hand side of the form with t a Var, replayed by default, whose
// recording depends on Go state that changes between calls.
func RecordEachCall() Option { return func(c *adConfig) { c.replay = replayNever } }

const (
	replayDefault = iota // replay the form with t a Var, not the other
	replayTrusted        // Replayable
	replayNever          // RecordEachCall
)

func newADRHS[F ode.Float, R RHS](f R, n int, opts []Option) *adRHS[F] {
	c := funcopt.Collect(opts)
	r := rhsOf(f)
	return &adRHS[F]{f: r, n: n, replay: c.replay == replayTrusted || r.fv != nil && c.replay != replayNever, cfg: c}
}

func (a *adRHS[F]) callF(du, u []F, p []float32, t float64) {
	a.report(a.evalF(du, u, p, t))
}

func (a *adRHS[F]) callJac(J, u []F, p []float32, t float64) {
	a.report(a.evalJac(J, u, p, t))
}

func (a *adRHS[F]) callJVP(jv, u, v []F, p []float32, dp []F, t float64) {
	a.report(a.evalJVP(jv, u, v, p, dp, t))
}

func (a *adRHS[F]) callVJP(du, dp, w, u []F, p []float32, t float64) {
	a.report(a.evalVJP(du, dp, w, u, p, t))
}

// report keeps the error of a failed call for errOf, unless an earlier
// call failed: the first error is sticky, as on a tape.
func (a *adRHS[F]) report(err error) {
	if err != nil && a.err.Load() == nil {
		e := errorf("the ad right-hand side: %w", err) // ad's error without its "ad: "
		a.err.CompareAndSwap(nil, &e)
	}
}

// errOf is the problem's Err: the first failure of any call, or nil.
func (a *adRHS[F]) errOf() error {
	if p := a.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Problem is Derivs (Derivs64 for a float64 u0) with a check: it
// evaluates f, its Jacobian and the JVP and VJP once at (u0, p, t0). It returns the error recorded on the
// tape, if any, naming the call. The ode.Problem it returns has F, Jac,
// JVP, VJP and Err from Derivs. p is a constant for F and Jac; for the
// sensitivities it is differentiable, by forward mode for JVP and reverse
// mode for VJP.
func Problem[F ode.Float, R RHS](f R, u0 []F, t0, t1 float64, p []float32, opts ...Option) (ode.Problem[F], error) {
	n := len(u0)
	if n == 0 {
		return ode.Problem[F]{}, errorf("Problem: u0 is empty, want at least one component")
	}
	if f == nil {
		return ode.Problem[F]{}, errorf("Problem: f is nil")
	}
	a := newADRHS[F](f, n, opts)
	du := make([]F, n)
	if err := a.evalF(du, u0, p, t0); err != nil {
		return ode.Problem[F]{}, errorf("Problem: the right-hand side at t=%g: %w", t0, err)
	}
	if err := a.detectStructure(u0, p, t0); err != nil {
		return ode.Problem[F]{}, errorf("Problem: %w", err)
	}
	if err := a.evalJac(make([]F, a.jacSize()), u0, p, t0); err != nil {
		return ode.Problem[F]{}, errorf("Problem: the Jacobian at t=%g: %w", t0, err)
	}
	// Directions of ones, so that every rule on a path from u or p runs.
	ones := make([]F, n+len(p))
	for i := range ones {
		ones[i] = 1
	}
	v, dp := ones[:n], ones[n:]
	if err := a.evalJVP(du, u0, v, p, dp, t0); err != nil {
		return ode.Problem[F]{}, errorf("Problem: the JVP at t=%g: %w", t0, err)
	}
	if err := a.evalVJP(make([]F, n), make([]F, len(p)), v, u0, p, t0); err != nil {
		return ode.Problem[F]{}, errorf("Problem: the VJP at t=%g: %w", t0, err)
	}
	prob := a.problem(true)
	prob.U0, prob.T0, prob.T1, prob.P = u0, t0, t1, p
	return prob, nil
}

type adRHS[F ode.Float] struct {
	f      rhsFunc
	n      int
	cfg    adConfig
	cj     *colouredJac              // a sparse or band Jacobian's colouring; nil for dense
	replay bool                      // record each product once per adWork, then replay it
	free   freelist.List[adWork[F]]  // not emptied by GCs, unlike a sync.Pool
	hot    atomic.Pointer[adWork[F]] // the last put, taken first (see get)
	err    atomic.Pointer[error]     // the first failed call's error (sticky)
}

// The products, each recorded on its own tape of an adWork.
const (
	progF    = iota // u and p constants
	progJac         // u a Param, p a constant; n sweeps
	progJVP         // both Params, seeded at both
	progJVPu        // both Params, seeded at u (dp nil)
	progVJP         // both Params, swept to both
	progVJPu        // both Params, swept to u (dp nil)
	nProgs
)

// adWork is one goroutine's tapes and scratch.
type adWork[F ode.Float] struct {
	progs [nProgs + nHvProgs]adProg[F]
	eye   []F // n×n identity: the seeds of Jac's sweeps
}

// adProg is the recording of one product: its inputs (u, p, then the
// seeds: w, or v and dp) and results, and whether it may be replayed.
type adProg[F ode.Float] struct {
	tape  *ad.Tape
	ready bool // a replayable recording, made with len(p) = np
	np    int
	in    [6]ad.Var
	out   [6]ad.Var
	rows  []ad.Var // Jac: the rows of J, or its colours' columns (see cols)
	// cols is the colouring of a dense Jacobian written by forward sweeps
	// (see denseColours); nil when rows are its rows.
	cols *colouredJac
	want []ad.Var // what a replay computes: out's or rows' results
	wrt  [2]ad.Var
	sh   [6][1]int // shapes of u, p and the seeds
	// The recording's own copies of u and the seeds, which a call copies
	// its arguments into: a replay then reads its inputs where the
	// recording did, and need not take new slices (Tape.Rebind) at every
	// op that reads them. p, the same slice call after call, is rebound.
	buf [6][]F
	// tbuf holds t for a right-hand side that takes it as a Var: the
	// recording's constant, which a replay reads in place.
	tbuf [1]F
}

// timeVar records t as a scalar constant of F in pr.tbuf, for a
// right-hand side that takes t as a Var; the zero Var otherwise.
func (pr *adProg[F]) timeVar(t float64) ad.Var {
	pr.tbuf[0] = F(t)
	return stateConst(pr.tape, nil, pr.tbuf[:])
}

// How record puts u and p on the tape.
const (
	recConst = iota // both constants (F)
	recU            // u a Param, p a constant (Jac)
	recUAndP        // both Params, u first (JVP, VJP)
)

// begin readies pr for use: true if its recording was replayed with the
// inputs given (u, p, then the seeds; a nil seed must be one recorded as
// the zero Var), false if the caller must record it anew on the reset tape.
func (a *adRHS[F]) begin(pr *adProg[F], u []F, p []float32, t float64, seeds ...[]F) bool {
	if pr.ready && len(p) == pr.np && len(u) == len(pr.buf[0]) {
		tp := pr.tape
		copy(pr.buf[0], u)
		pr.tbuf[0] = F(t)
		ok := tp.Rebind(pr.in[1], p) == nil
		for k, s := range seeds {
			if v := pr.in[2+k]; ok && !v.IsZero() {
				ok = len(s) == len(pr.buf[2+k])
				copy(pr.buf[2+k], s)
			}
		}
		if ok && tp.ReplayFor(pr.want...) == nil {
			return true
		}
	}
	if pr.tape == nil {
		pr.tape = ad.NewTape()
	}
	pr.tape.Reset()
	pr.ready = false
	return false
}

// end marks a fresh recording of pr replayable, if it is and a replays;
// its replays compute want, the product's results, and what they need.
func (a *adRHS[F]) end(pr *adProg[F], p []float32, want []ad.Var) {
	pr.want = want
	if a.replay && pr.tape.Replayable() == nil {
		pr.ready, pr.np = true, len(p)
	}
}

// get returns a goroutine's adWork for one call, which put returns: the
// one in hot, the last put, if no other goroutine holds it (one atomic
// swap, where the free list takes a lock, a slice and an unlock), else
// one from the free list. A solve on one goroutine always finds hot.
func (a *adRHS[F]) get() *adWork[F] {
	if w := a.hot.Swap(nil); w != nil {
		return w
	}
	return a.free.Get()
}

func (a *adRHS[F]) put(w *adWork[F]) {
	if !a.hot.CompareAndSwap(nil, w) {
		a.free.Put(w)
	}
}

// done drops a recording that is not kept for replay, so that the tape
// holds no reference to the caller's slices between calls.
func (a *adRHS[F]) done(w *adWork[F], pr *adProg[F]) {
	if !pr.ready && pr.tape != nil {
		pr.tape.Reset()
	}
	a.put(w)
}

// record runs f on pr's tape with u and p as Params or constants (mode)
// and returns f's result, checked for size.
func (a *adRHS[F]) record(pr *adProg[F], u []F, p []float32, t float64, mode int) (y ad.Var, err error) {
	tp := pr.tape
	pr.sh[0][0], pr.sh[1][0] = len(u), len(p)
	pr.buf[0] = append(pr.buf[0][:0], u...)
	u = pr.buf[0]
	if mode == recConst {
		pr.in[0] = stateConst(tp, pr.sh[0][:], u)
	} else {
		pr.in[0] = stateParam(tp, u)
	}
	switch {
	case isFloat64(u):
		// In float64, p is converted on the way in, as a ParamFloat64
		// (a Param, differentiated only when it is among a sweep's wrt).
		pr.in[1] = tp.ParamFloat64(p)
	case mode == recUAndP:
		pr.in[1] = tp.Param(p)
	default:
		pr.in[1] = tp.Const(flat.Tensor{Shape: pr.sh[1][:], Data: p})
	}
	clear(pr.in[2:])
	var tv ad.Var
	if a.f.fv != nil {
		tv = pr.timeVar(t)
	}
	y = a.f.call(pr.in[0], pr.in[1], t, tv)
	if err := tp.Err(); err != nil {
		return y, err
	}
	if y.IsZero() || y.Tape() != tp {
		return y, fmt.Errorf("f returned the zero Var or a Var of another tape, want a Var computed from u and p on their tape")
	}
	if y.Size() != a.n {
		return y, fmt.Errorf("f returned %d values (shape %v), want %d", y.Size(), y.Shape(), a.n)
	}
	return y, nil
}

// seed records data as a constant of n values on pr's tape, the k-th seed.
func (pr *adProg[F]) seed(k int, data []F, n int) ad.Var {
	pr.sh[2+k][0] = n
	pr.buf[2+k] = append(pr.buf[2+k][:0], data...)
	v := stateConst(pr.tape, pr.sh[2+k][:], pr.buf[2+k])
	pr.in[2+k] = v
	return v
}

func (a *adRHS[F]) evalF(du, u []F, p []float32, t float64) error {
	w := a.get()
	pr := &w.progs[progF]
	defer a.done(w, pr)
	if !a.begin(pr, u, p, t) {
		y, err := a.record(pr, u, p, t, recConst)
		if err != nil {
			return err
		}
		pr.out[0] = y
		a.end(pr, p, pr.out[:1])
	}
	copy(du, valuesOf[F](pr.out[0]))
	return nil
}

// evalJac writes J in the problem's structure: dense by n reverse sweeps
// (row i of J is the cotangent of the i-th unit vector), or by forward
// sweeps seeded with the colours of its pattern when the recording is
// replayed and has fewer colours than rows (denseColours: a recording made
// at every call is not worth finding its pattern for); sparse or band by forward
// sweeps seeded with colours (sweepColours).
func (a *adRHS[F]) evalJac(J, u []F, p []float32, t float64) error {
	if a.cj != nil && len(J) != a.cj.size {
		return fmt.Errorf("Jac: J has %d values, want %d (the storage of %s)", len(J), a.cj.size, a.cj.structure())
	}
	w := a.get()
	pr := &w.progs[progJac]
	defer a.done(w, pr)
	n := a.n
	if !a.begin(pr, u, p, t) {
		y, err := a.record(pr, u, p, t, recU)
		if err != nil {
			return err
		}
		pr.cols = nil
		switch {
		case a.cj != nil:
			err = sweepColours(a.cj, pr, y, n)
		case a.replay && pr.tape.Replayable() == nil:
			// A recording kept for replay: its pattern, found once,
			// holds at every replay.
			if pr.cols = denseColours(pr.tape, y, pr.in[0], n); pr.cols != nil {
				err = sweepColours(pr.cols, pr, y, n)
				break
			}
			fallthrough
		default:
			err = w.reverseRows(pr, y, n)
		}
		if err != nil {
			return err
		}
		a.end(pr, p, pr.rows)
	}
	if a.cj != nil {
		writeColours(a.cj, J, pr.rows)
		return nil
	}
	if pr.cols != nil {
		writeColours(pr.cols, J, pr.rows)
		return nil
	}
	for i, r := range pr.rows {
		row := J[i*n : (i+1)*n]
		if r.IsZero() {
			clear(row)
			continue
		}
		copy(row, valuesOf[F](r))
	}
	return nil
}

// reverseRows records the n rows of the dense Jacobian of y into pr.rows,
// by one reverse sweep each, seeded with the unit vectors.
func (w *adWork[F]) reverseRows(pr *adProg[F], y ad.Var, n int) error {
	if len(y.Shape()) != 1 {
		y = ad.Reshape(y, n)
	}
	if len(w.eye) != n*n {
		w.eye = make([]F, n*n)
		for i := range n {
			w.eye[i*n+i] = 1
		}
	}
	if len(pr.rows) != n {
		pr.rows = make([]ad.Var, n)
	}
	tp := pr.tape
	pr.wrt[0] = pr.in[0]
	pr.sh[2][0] = n
	for i := range n {
		// Every sweep covers f's nodes only (from u to y), not the
		// previous sweeps'.
		e := stateConst(tp, pr.sh[2][:], w.eye[i*n:(i+1)*n])
		if err := tp.VJPOf(y, e, pr.wrt[:1], pr.rows[i:i+1]); err != nil {
			return err
		}
	}
	return nil
}

// evalJVP writes jv = ∂F/∂u·v + ∂F/∂p·dp: one forward sweep seeded at u
// and p at once (nothing at p when dp is nil).
func (a *adRHS[F]) evalJVP(jv, u, v []F, p []float32, dp []F, t float64) error {
	if len(jv) != a.n || len(v) != len(u) || dp != nil && len(dp) != len(p) {
		return fmt.Errorf("JVP: jv has %d elements, v %d, dp %d, want %d (the states), %d (len(u)) and %d (the parameters) or a nil dp", len(jv), len(v), len(dp), a.n, len(u), len(p))
	}
	w := a.get()
	k := progJVP
	if dp == nil {
		k = progJVPu
	}
	pr := &w.progs[k]
	defer a.done(w, pr)
	if !a.begin(pr, u, p, t, v, dp) {
		y, err := a.record(pr, u, p, t, recUAndP)
		if err != nil {
			return err
		}
		pr.wrt = [2]ad.Var{pr.in[0], pr.in[1]}
		dirs := [2]ad.Var{pr.seed(0, v, len(u))}
		if dp != nil {
			dirs[1] = pr.seed(1, dp, len(p))
		}
		if pr.out[0], err = pr.tape.JVPOf(y, pr.wrt[:], dirs[:]); err != nil {
			return err
		}
		a.end(pr, p, pr.out[:1])
	}
	if tv := pr.out[0]; !tv.IsZero() {
		copy(jv, valuesOf[F](tv))
	} else {
		clear(jv)
	}
	return nil
}

// evalVJP adds wᵀ·∂F/∂u into du and wᵀ·∂F/∂p into dp (unless dp is nil):
// one reverse sweep seeded with wt.
func (a *adRHS[F]) evalVJP(du, dp, wt, u []F, p []float32, t float64) error {
	if len(du) != a.n || len(wt) != a.n || dp != nil && len(dp) != len(p) {
		return fmt.Errorf("VJP: du has %d elements, w %d, dp %d, want %d and %d (the states) and %d (the parameters) or a nil dp", len(du), len(wt), len(dp), a.n, a.n, len(p))
	}
	w := a.get()
	k, nw := progVJP, 2
	if dp == nil {
		k, nw = progVJPu, 1
	}
	pr := &w.progs[k]
	defer a.done(w, pr)
	if !a.begin(pr, u, p, t, wt) {
		y, err := a.record(pr, u, p, t, recUAndP)
		if err != nil {
			return err
		}
		pr.wrt = [2]ad.Var{pr.in[0], pr.in[1]}
		seed := pr.seed(0, wt, len(wt))
		if len(y.Shape()) != 1 {
			y = ad.Reshape(y, a.n)
		}
		if err := pr.tape.VJPOf(y, seed, pr.wrt[:nw], pr.out[:nw]); err != nil {
			return err
		}
		a.end(pr, p, pr.out[:nw])
	}
	addValues(du, pr.out[0])
	if dp != nil {
		addValues(dp, pr.out[1])
	}
	return nil
}
