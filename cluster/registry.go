package cluster

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"sync"

	"github.com/flatkit/flatkit/ode"
)

// Spec is what a registered name builds from a request's arguments and θ:
// the ensemble, the method and options of its solves, and, for gradients,
// the per-trajectory loss and the sensitivity method. The coordinator and
// every worker build it from the same bytes, so it must be a pure function
// of them.
type Spec[T ode.Float] struct {
	// Ensemble is the ensemble. Its Base.P is normally θ itself (or Modify
	// points each trajectory at a slice of θ); a gradient is taken with
	// respect to Base.P.
	Ensemble ode.Ensemble[T]
	// Method integrates the trajectories (nil: ode.Tsit5()).
	Method ode.Method
	// Options are the solver options of the name's solves and gradients:
	// Tol, MaxSteps, TStops, InitialStep or FixedStep. The request's
	// tolerances come after them, so those win. Workers, Indices and
	// PerTrajectoryU0 come from the request and the worker, never from
	// here. A gradient's own settings (QuadTol, AdjointTol, Checkpoints)
	// are fields of Sensitivity.
	Options []ode.Option
	// LossFor is trajectory i's loss, for gradients; nil if the name serves
	// solves only.
	LossFor func(i int) ode.Loss[T]
	// Sensitivity is the gradients' method (nil: ode.InterpolatingAdjoint{}).
	Sensitivity ode.Sensitivity
}

// Builder makes a name's Spec from a request's arguments (bytes of the
// caller's own encoding) and its parameters θ. It is called once per
// request on the coordinator and on each worker, maybe concurrently.
type Builder[T ode.Float] func(args []byte, theta []float32) (*Spec[T], error)

// entry is a registered name, typed by its precision.
type entry interface {
	prec() precision
	build(args []byte, theta []float32) (built, error)
}

// built is one request's Spec as a worker runs it.
type built interface {
	// shards is the request's shard list.
	shards(q *request) []ode.Shard
	// compute computes a shard into m (its arrays, stats and errors).
	compute(ctx context.Context, q *request, sh ode.Shard, m *resultMsg) error
}

var registry struct {
	sync.RWMutex
	m map[string]entry
}

// Register makes a named ensemble known to this process: a worker serves
// it, a coordinator builds it to cut and merge its shards. Both sides
// register the same code under the same name. The precision is Builder's
// T; Register panics on an invalid name (1 to MaxNameLen letters, digits,
// '-' or '_'), a nil builder or a name registered twice.
//
//	cluster.Register("lv", func(args []byte, θ []float32) (*cluster.Spec[float64], error) {
//		var a lvArgs
//		if err := json.Unmarshal(args, &a); err != nil {
//			return nil, err
//		}
//		return &cluster.Spec[float64]{Ensemble: lvEnsemble(a, θ), LossFor: lvLoss}, nil
//	})
func Register[T ode.Float](name string, b Builder[T]) {
	if !validName(name) {
		panic(fmt.Sprintf("cluster: Register(%q): want a name of 1 to %d letters, digits, '-' or '_'", name, MaxNameLen))
	}
	if b == nil {
		panic(fmt.Sprintf("cluster: Register(%q): nil builder", name))
	}
	registry.Lock()
	defer registry.Unlock()
	if registry.m == nil {
		registry.m = map[string]entry{}
	}
	if _, ok := registry.m[name]; ok {
		panic(fmt.Sprintf("cluster: Register(%q): registered twice", name))
	}
	registry.m[name] = typedEntry[T]{b}
}

// Registered returns the registered names, sorted.
func Registered() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.m))
	for n := range registry.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func lookup(name string) (entry, bool) {
	registry.RLock()
	defer registry.RUnlock()
	e, ok := registry.m[name]
	return e, ok
}

// lookupTyped returns the builder of name for precision T.
func lookupTyped[T ode.Float](name string) (Builder[T], error) {
	e, ok := lookup(name)
	if !ok {
		return nil, &UnknownNameError{Name: name}
	}
	te, ok := e.(typedEntry[T])
	if !ok {
		return nil, fmt.Errorf("cluster: %q is registered for %v, asked for %v", name, e.prec(), precisionOf[T]())
	}
	return te.b, nil
}

type typedEntry[T ode.Float] struct{ b Builder[T] }

func (typedEntry[T]) prec() precision { return precisionOf[T]() }

func (e typedEntry[T]) build(args []byte, theta []float32) (built, error) {
	s, err := buildSpec(e.b, args, theta)
	if err != nil {
		return nil, err
	}
	return &typedBuilt[T]{s: s}, nil
}

// buildSpec calls b, turning a panic into an error, and fills the defaults.
func buildSpec[T ode.Float](b Builder[T], args []byte, theta []float32) (s *Spec[T], err error) {
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("cluster: the builder panicked: %v\n%s", p, debug.Stack())
		}
	}()
	s, err = b(args, theta)
	if err != nil {
		return nil, fmt.Errorf("cluster: building the ensemble: %w", err)
	}
	if s == nil {
		return nil, fmt.Errorf("cluster: the builder returned a nil Spec")
	}
	c := *s
	if c.Method == nil {
		c.Method = ode.Tsit5()
	}
	if c.Sensitivity == nil {
		c.Sensitivity = ode.InterpolatingAdjoint{}
	}
	c.Options = slices.Clone(c.Options)
	return &c, nil
}

// options are the ode options of request q: the Spec's, then the
// tolerances.
func (s *Spec[T]) options(q *request) []ode.Option {
	opts := slices.Clone(s.Options)
	if q.HasTol {
		opts = append(opts, ode.Tol(q.RelTol, q.AbsTol))
	}
	return opts
}

// gradientOptions are the options of gradient request q: options, then
// Indices and PerTrajectoryU0.
func (s *Spec[T]) gradientOptions(q *request) []ode.GradientShardOption {
	opts := ode.OptionsFor[ode.GradientShardOption](s.options(q))
	if q.HasIndices {
		opts = append(opts, ode.Indices(q.Indices...))
	}
	if q.PerU0 {
		opts = append(opts, ode.PerTrajectoryU0())
	}
	return opts
}

// positions is the number of positions of a gradient request.
func (s *Spec[T]) positions(q *request) int {
	if q.HasIndices {
		return len(q.Indices)
	}
	return s.Ensemble.N
}

// outputSize is the number of values of one trajectory's output.
func (s *Spec[T]) outputSize() int {
	if s.Ensemble.Output != nil {
		return s.Ensemble.OutputSize
	}
	return len(s.Ensemble.Base.U0)
}

func (s *Spec[T]) shardList(q *request) []ode.Shard {
	if q.Kind == kindGradient {
		return s.Ensemble.GradientShards(s.gradientOptions(q)...)
	}
	return s.Ensemble.Shards()
}

type typedBuilt[T ode.Float] struct{ s *Spec[T] }

func (b *typedBuilt[T]) shards(q *request) []ode.Shard { return b.s.shardList(q) }

func (b *typedBuilt[T]) compute(ctx context.Context, q *request, sh ode.Shard, m *resultMsg) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cluster: shard [%d, %d) panicked: %v\n%s", sh.Lo, sh.Hi, p, debug.Stack())
		}
	}()
	s := b.s
	switch q.Kind {
	case kindSolve:
		sr, err := s.Ensemble.SolveShard(ctx, s.Method, sh, ode.OptionsFor[ode.SolveOption](s.options(q))...)
		if err != nil {
			return err
		}
		m.U, m.NU = floatBytes(sr.U), len(sr.U)
		m.Acc = sr.Acc
		m.Stats = statsArray(sr.Stats)
		m.Errors = wireErrs(sr.Errors)
	case kindGradient:
		if s.LossFor == nil {
			return fmt.Errorf("cluster: %q serves solves only (its Spec has no LossFor)", q.Name)
		}
		gr, err := s.Ensemble.GradientShard(ctx, s.Method, s.LossFor, s.Sensitivity, sh, s.gradientOptions(q)...)
		if err != nil {
			return err
		}
		m.Value, m.Count, m.P = gr.Value, gr.Count, gr.P
		m.U0, m.NU0 = floatBytes(gr.U0), len(gr.U0)
		m.Stats = statsArray(gr.Stats)
		m.Errors = wireErrs(gr.Errors)
	default:
		return fmt.Errorf("cluster: unknown kind %v", q.Kind)
	}
	return nil
}

func wireErrs(es []ode.TrajectoryError) []wireErr {
	if len(es) == 0 {
		return nil
	}
	w := make([]wireErr, len(es))
	for k, e := range es {
		w[k] = toWireErr(e)
	}
	return w
}

func statsArray(s ode.Stats) [statsLen]int64 {
	return [statsLen]int64{int64(s.FEvals), int64(s.JacEvals), int64(s.LUs), int64(s.Accepted), int64(s.Rejected),
		int64(s.NewtonIters), int64(s.NewtonFails), int64(s.LinearIters), int64(s.LinearFails), int64(s.ErrTestFails)}
}

func statsOf(a [statsLen]int64) ode.Stats {
	return ode.Stats{FEvals: int(a[0]), JacEvals: int(a[1]), LUs: int(a[2]), Accepted: int(a[3]), Rejected: int(a[4]),
		NewtonIters: int(a[5]), NewtonFails: int(a[6]), LinearIters: int(a[7]), LinearFails: int(a[8]), ErrTestFails: int(a[9])}
}

// floatBytes is v's little-endian bytes (a copy).
func floatBytes[T ode.Float](v []T) []byte {
	if v == nil {
		return nil
	}
	w := &writer{b: make([]byte, 0, len(v)*int(precisionOf[T]()))}
	writeValues(w, v)
	return w.b
}
