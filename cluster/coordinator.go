package cluster

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/flatkit/flatkit/ode"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Coordinator runs requests: it publishes their shards, collects, checks
// and merges the partial results.
type Coordinator struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	cfg Config
	st  *streams
	ls  *leases // the requests' leases
	id  string  // names this coordinator in leases

	stats coordStats // for RegisterMetrics

	corruptTheta bool // tests: store a θ other than the one hashed
}

// NewCoordinator makes a coordinator on connection nc, which the caller
// owns and closes. It makes or updates the streams and the object store of
// cfg.
func NewCoordinator(ctx context.Context, nc *nats.Conn, cfg Config) (*Coordinator, error) {
	if nc == nil {
		return nil, errors.New("cluster: NewCoordinator: nil connection")
	}
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	st, err := setup(ctx, js, c)
	if err != nil {
		return nil, err
	}
	ls, err := openLeases(ctx, js, c)
	if err != nil {
		return nil, err
	}
	return &Coordinator{nc: nc, js: js, cfg: c, st: st, ls: ls, id: "coordinator-" + newReqID().String()[:12]}, nil
}

// Request is one ensemble solve or gradient to run on the cluster.
type Request struct {
	// Name is the registered ensemble; Args its arguments, in the
	// registered Builder's own encoding.
	Name string
	Args []byte
	// Theta is the parameter vector, sent once through the object store.
	Theta []float32
	// RelTol and AbsTol, if either is set, add ode.Tol(RelTol, AbsTol) after
	// the Spec's options.
	RelTol, AbsTol float64
	// Indices (gradients) is the minibatch, as ode.Indices; nil: all N.
	Indices []int
	// PerTrajectoryU0 (gradients) keeps each position's dL/du0.
	PerTrajectoryU0 bool
	// Progress, if set, is called after each shard is done, from the
	// goroutine of Solve or Gradient.
	Progress func(Progress)

	// ID, if set, is the request's durable id (32 hex digits, from
	// NewRequestID). The request then outlives its coordinator: if the
	// coordinator dies or its context ends, the request's descriptor, θ
	// and results stay in the store for Config.Retention, and the same
	// call with the same ID resumes it. A resume collects the results
	// already in the results stream, publishes only the shards that have
	// none, and returns the answer an uninterrupted run would, bit for
	// bit. A request with an ID is removed from the store once it
	// finishes; one without is removed when its call returns, however.
	ID string
	// Resume refuses to start the request ID anew: if nothing of it is
	// left in the store, the error is an *ExpiredError.
	Resume bool
}

// Progress is the state of a request after one more shard.
type Progress struct {
	Shard        int // the shard just done
	Delivery     int // the delivery of it whose result was used (1: the first)
	Worker       string
	Failed       bool // the shard was given up (its trajectories are reported failed)
	Done, Total  int  // shards
	Trajectories int  // trajectories (positions) in the shards done
	Elapsed      time.Duration
	Request      string // the request's id
}

// Report is what happened to a request.
type Report struct {
	Request     string // the request's id
	Shards      int
	Completed   int // shards whose result was used
	Failed      int // shards given up, reported as failed trajectories
	Redelivered int // shards whose result came from a redelivery (a worker lost, a nak)
	// DuplicatesDropped are results dropped by the coordinator's table
	// because their shard was already done. Such a result comes from a
	// redelivered shard computed twice and published after the server's
	// de-duplication window, or from a second publication.
	DuplicatesDropped int
	Invalid           int // results refused (malformed, wrong shape, flags not as in-process)
	Republished       int // shards published again after an invalid result
	// Offloaded are results that came through the object store, being
	// larger than the server's max payload. Each object is removed once
	// read.
	Offloaded int
	Workers   int // distinct workers whose results were used
	// Resumed are the shards whose results a resume found in the results
	// stream, computed for an earlier coordinator of the request (they
	// are among Completed or Failed).
	Resumed    int
	ThetaBytes int
	Elapsed    time.Duration
}

// Solve runs the registered ensemble req.Name on the workers, as
// Ensemble.Solve would. The result equals Solve's in one process bit for
// bit: the outputs, the Reduce sums, the failures and the counters. So
// does the error, an *ode.EnsembleError when trajectories failed. A shard
// that no worker finishes is reported as failed trajectories, each with a
// ShardFailedError. The error is a *NoWorkerError if nothing serves the
// name, and wraps ctx's error on cancellation or deadline.
func Solve[T ode.Float](ctx context.Context, c *Coordinator, req Request) (*ode.EnsembleResult[T], Report, error) {
	spec, q, err := prepare[T](ctx, c, req, kindSolve)
	if err != nil {
		return nil, Report{}, err
	}
	ens := &spec.Ensemble
	shards := spec.shardList(q)
	parts := make([]*ode.ShardResult[T], len(shards))
	k := spec.outputSize()
	accept := acceptInto(parts, func(j int, m *resultMsg) (*ode.ShardResult[T], error) { return solvePart[T](spec, k, shards[j], m) })
	fail := func(j int, fe *ShardFailedError) {
		sh := shards[j]
		p := &ode.ShardResult[T]{Shard: sh}
		if !ens.DropOutputs {
			p.U = nans[T]((sh.Hi - sh.Lo) * k)
		}
		if ens.ReduceSize > 0 {
			p.Acc = make([]float64, ens.ReduceSize)
		}
		for i := sh.Lo; i < sh.Hi; i++ {
			p.Errors = append(p.Errors, ode.TrajectoryError{Index: i, Err: fe})
		}
		parts[j] = p
	}
	bound := func(j int) int { return solveBound(spec, q, shards[j]) }
	rep, err := c.run(ctx, req, q, shards, accept, fail, bound)
	if err != nil {
		return nil, rep, err
	}
	res, err := ens.Merge(parts)
	return res, rep, err
}

// Gradient runs the registered ensemble's gradient as Ensemble.Gradient
// would (with req.Indices and req.PerTrajectoryU0), on the workers: equal
// to the in-process gradient bit for bit. Errors as Solve's.
func Gradient[T ode.Float](ctx context.Context, c *Coordinator, req Request) (*ode.EnsembleGradientResult[T], Report, error) {
	spec, q, err := prepare[T](ctx, c, req, kindGradient)
	if err != nil {
		return nil, Report{}, err
	}
	ens := &spec.Ensemble
	shards := spec.shardList(q)
	parts := make([]*ode.GradientShardResult[T], len(shards))
	accept := acceptInto(parts, func(j int, m *resultMsg) (*ode.GradientShardResult[T], error) {
		return gradPart[T](spec, q, shards[j], m)
	})
	fail := func(j int, fe *ShardFailedError) {
		sh := shards[j]
		p := &ode.GradientShardResult[T]{Shard: sh, P: make([]float64, len(ens.Base.P))}
		if q.PerU0 {
			p.U0 = nans[T]((sh.Hi - sh.Lo) * len(ens.Base.U0))
		}
		for pos := sh.Lo; pos < sh.Hi; pos++ {
			i := pos
			if q.HasIndices {
				i = q.Indices[pos]
			}
			p.Errors = append(p.Errors, ode.TrajectoryError{Index: i, Err: fe})
		}
		parts[j] = p
	}
	bound := func(j int) int { return gradBound(spec, q, shards[j]) }
	rep, err := c.run(ctx, req, q, shards, accept, fail, bound)
	if err != nil {
		return nil, rep, err
	}
	res, err := ens.MergeGradients(parts)
	return res, rep, err
}

// acceptInto is the accept function of Coordinator.run that decodes shard
// j's result with part and keeps it in parts[j].
func acceptInto[P any](parts []P, part func(j int, m *resultMsg) (P, error)) func(int, *resultMsg) error {
	return func(j int, m *resultMsg) error {
		p, err := part(j, m)
		if err == nil {
			parts[j] = p
		}
		return err
	}
}

// nans is n NaNs: the outputs of a failed shard.
func nans[T ode.Float](n int) []T {
	x := make([]T, n)
	for i := range x {
		x[i] = T(math.NaN())
	}
	return x
}

func newReqID() reqID {
	var id reqID
	rand.Read(id[:])
	return id
}

// ping reports whether some worker serves name.
func (c *Coordinator) ping(ctx context.Context, name string) error {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := c.nc.RequestWithContext(pctx, c.cfg.serveSubject(name), nil)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return &NoWorkerError{Name: name}
	case err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return nil // busy workers answer late: not a proof of absence
	}
	return err
}

// maxDeliveries is the advisory the server sends when a shard has been
// delivered MaxDeliver times without an ack.
type maxDeliveries struct {
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries int    `json:"deliveries"`
}

// run publishes the shards of q and feeds the results to accept until every
// shard is accepted or failed.
//
// bound(j) is the most bytes shard j's result can have, by what the
// request implies: its arrays' sizes, and at most one error of the longest
// message per trajectory. A result stored as an object is refused, unread,
// if it says it is larger.
func (c *Coordinator) run(ctx context.Context, req Request, q *request, shards []ode.Shard,
	accept func(j int, m *resultMsg) error, fail func(j int, fe *ShardFailedError), bound func(j int) int) (Report, error) {
	start := time.Now()
	durable := req.ID != ""
	if durable {
		id, err := parseReqID(req.ID)
		if err != nil {
			return Report{}, err
		}
		q.ID = id
	} else {
		if req.Resume {
			return Report{}, errors.New("cluster: Request.Resume without a Request.ID")
		}
		q.ID = newReqID()
	}
	rep := Report{Request: q.ID.String(), Shards: len(shards), ThetaBytes: 4 * len(req.Theta)}
	what := fmt.Sprintf("cluster: %v of %q (request %v)", q.Kind, q.Name, q.ID)
	if len(shards) == 0 {
		return rep, nil
	}
	if _, err := c.st.consumer(ctx, q.Name); err != nil {
		return rep, err
	}
	if err := c.ping(ctx, q.Name); err != nil {
		return rep, err
	}
	var lastSeen uint64 // the sequence of the last result read
	h, err := acquire(ctx, c.ls, q.ID, c.id, c.cfg.LeaseTTL, c.cfg.Retention, durable, req.Resume)
	c.Sweep(ctx) // best effort: what finished and expired requests left
	if err != nil {
		return rep, err
	}
	finished := false
	ctx, lose := context.WithCancelCause(ctx)
	defer lose(nil)
	go h.keep(ctx, lose)

	// Everything made from here on is removed at the end, unless the
	// request is durable and did not finish: then it stays for a resume.
	var cleanups []func(context.Context)
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, f := range slices.Backward(cleanups) {
			f(cctx)
		}
	}()
	cleanups = append(cleanups, func(ctx context.Context) {
		lose(nil) // stop renewing the lease
		if durable && !finished {
			h.release(ctx)
			return
		}
		// The results stored as objects that were read were removed on
		// the way, and so were those of duplicates dropped: what is left
		// is named by the results after the last one read.
		c.removeRequest(ctx, q.ID, lastSeen+1)
		h.drop(ctx)
	})
	if h.found {
		if err := c.resumable(ctx, q); err != nil {
			return rep, err
		}
	} else if err := c.store(ctx, q, req.Theta); err != nil {
		return rep, fmt.Errorf("%s: %w", what, err)
	}
	// θ and the descriptor are stored again every maxAge/4, so that the
	// store's age limit never removes them under a running request.
	refresh := time.NewTicker(maxAge / 4)
	defer refresh.Stop()
	// The results an earlier coordinator of the request left: those up to
	// caughtUp, the last one now in the stream, are read before any shard
	// is published, and only the shards without one are published.
	var caughtUp uint64
	pending := map[int]uint64{} // shard → sequence of its message still in the work queue
	if h.found {
		// First the shards still queued or in flight (a shard leaves the
		// queue when acked, after its result is published), then the last
		// result: a shard in neither is published again.
		if pending, err = c.queued(ctx, q, len(shards)); err != nil {
			return rep, fmt.Errorf("%s: the earlier shards: %w", what, err)
		}
		last, err := c.st.results.GetLastMsgForSubject(ctx, c.cfg.resultSubject(q.ID))
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
		case err != nil:
			return rep, fmt.Errorf("%s: results stream: %w", what, err)
		default:
			caughtUp = last.Sequence
		}
	}

	advisories := make(chan *nats.Msg, 64)
	asub, err := c.nc.ChanSubscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+c.cfg.shardStream()+"."+c.cfg.consumerName(q.Name), advisories)
	if err != nil {
		return rep, fmt.Errorf("%s: %w", what, err)
	}
	cleanups = append(cleanups, func(context.Context) { asub.Unsubscribe() })

	type result struct {
		data []byte
		seq  uint64
	}
	results := make(chan result, 256)
	rc, err := c.js.OrderedConsumer(ctx, c.cfg.resultStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{c.cfg.resultSubject(q.ID)}})
	if err != nil {
		return rep, fmt.Errorf("%s: results consumer: %w", what, err)
	}
	done := make(chan struct{})
	cc, err := rc.Consume(func(m jetstream.Msg) {
		var seq uint64
		if md, err := m.Metadata(); err == nil {
			seq = md.Sequence.Stream
		}
		select {
		case results <- result{m.Data(), seq}:
		case <-done:
		}
	})
	if err != nil {
		return rep, fmt.Errorf("%s: results consumer: %w", what, err)
	}
	cleanups = append(cleanups, func(context.Context) { close(done); cc.Stop() })

	// The shards. Each coordinator of a request (its epoch) numbers its
	// attempts from epoch·MaxDeliver, so that no Nats-Msg-Id repeats one
	// of an earlier coordinator's within the de-duplication window.
	attempt := make([]int, len(shards))
	tries := make([]int, len(shards)) // publications by this coordinator
	for j := range attempt {
		attempt[j] = h.l.Epoch * c.cfg.MaxDeliver
	}
	seqs := map[uint64]int{}
	for j, seq := range pending {
		seqs[seq] = j
	}
	publish := func(j int) error {
		sh := shards[j]
		s := &shardMsg{Req: q.ID, Kind: q.Kind, Prec: q.Prec, ThetaHash: q.ThetaHash, Index: j, Attempt: attempt[j], Lo: sh.Lo, Hi: sh.Hi, Seed: sh.Seed}
		f, err := c.js.PublishAsync(c.cfg.shardSubject(q.Name, q.ID), encodeShard(s),
			jetstream.WithMsgID(fmt.Sprintf("%v.%d.%d", q.ID, j, attempt[j])))
		if err != nil {
			return err
		}
		select {
		case ack := <-f.Ok():
			seqs[ack.Sequence] = j
			return nil
		case err := <-f.Err():
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	state := make([]uint8, len(shards)) // 0 pending, 1 done, 2 failed
	// publishAll publishes every shard not yet done or failed.
	published := false
	publishAll := func() error {
		published = true
		futures := make([]jetstream.PubAckFuture, len(shards))
		for j, sh := range shards {
			if _, ok := pending[j]; state[j] != 0 || ok {
				continue
			}
			s := &shardMsg{Req: q.ID, Kind: q.Kind, Prec: q.Prec, ThetaHash: q.ThetaHash, Index: j, Attempt: attempt[j], Lo: sh.Lo, Hi: sh.Hi, Seed: sh.Seed}
			f, err := c.js.PublishAsync(c.cfg.shardSubject(q.Name, q.ID), encodeShard(s), jetstream.WithMsgID(fmt.Sprintf("%v.%d.%d", q.ID, j, attempt[j])))
			if err != nil {
				return fmt.Errorf("%s: publishing shard %d: %w", what, j, err)
			}
			tries[j]++
			futures[j] = f
		}
		for j, f := range futures {
			if f == nil {
				continue
			}
			select {
			case ack := <-f.Ok():
				seqs[ack.Sequence] = j
			case err := <-f.Err():
				return fmt.Errorf("%s: publishing shard %d: %w", what, j, err)
			case <-ctx.Done():
				return fmt.Errorf("%s cancelled: %w", what, context.Cause(ctx))
			}
		}
		return nil
	}
	if caughtUp == 0 {
		if err := publishAll(); err != nil {
			return rep, err
		}
	}

	workers := map[string]bool{}
	left := len(shards)
	traj := 0
	lastProgress := time.Now()
	ticker := time.NewTicker(2 * time.Second)
	defer ticker.Stop()
	finish := func(j int, delivery int, worker string, failed bool) {
		left--
		traj += shards[j].Hi - shards[j].Lo
		lastProgress = time.Now()
		if req.Progress != nil {
			req.Progress(Progress{Shard: j, Delivery: delivery, Worker: worker, Failed: failed,
				Done: len(shards) - left, Total: len(shards), Trajectories: traj, Elapsed: time.Since(start), Request: rep.Request})
		}
	}
	giveUp := func(j int, deliveries int, reason string) {
		state[j] = 2
		rep.Failed++
		c.stats.failed.Add(1)
		fail(j, &ShardFailedError{Shard: shards[j], Number: j, Deliveries: deliveries, Reason: reason})
	}
	// republish publishes shard j again after an invalid result (why), or
	// gives it up after MaxDeliver publications.
	republish := func(j int, why error) error {
		if tries[j] >= c.cfg.MaxDeliver {
			giveUp(j, tries[j], "invalid results: "+why.Error())
			finish(j, 0, "", true)
			return nil
		}
		attempt[j]++
		rep.Republished++
		if !published {
			return nil // published with the others once caught up
		}
		tries[j]++
		return publish(j)
	}
	for left > 0 {
		if !published && lastSeen >= caughtUp {
			if err := publishAll(); err != nil {
				return rep, err
			}
		}
		select {
		case <-ctx.Done():
			rep.Elapsed = time.Since(start)
			return rep, fmt.Errorf("%s cancelled: %w", what, context.Cause(ctx))
		case <-refresh.C:
			if err := c.store(ctx, q, req.Theta); err != nil {
				return rep, fmt.Errorf("%s: %w", what, err)
			}
		case <-ticker.C:
			if !published && time.Since(lastProgress) > 2*time.Second {
				// The earlier results stopped short of the last one seen
				// at the start (it aged out of the stream): publish now.
				if err := publishAll(); err != nil {
					return rep, err
				}
			}
			if time.Since(lastProgress) > 2*time.Second {
				if err := c.ping(ctx, q.Name); err != nil {
					var nw *NoWorkerError
					if errors.As(err, &nw) {
						rep.Elapsed = time.Since(start)
						return rep, fmt.Errorf("%s: %d of %d shards left: %w", what, left, len(shards), err)
					}
				}
			}
		case am := <-advisories:
			var a maxDeliveries
			if json.Unmarshal(am.Data, &a) != nil {
				continue
			}
			j, ok := seqs[a.StreamSeq]
			if !ok || state[j] != 0 {
				continue
			}
			giveUp(j, a.Deliveries, "its deliveries were not acknowledged (workers lost or stalled)")
			finish(j, a.Deliveries, "", true)
		case r := <-results:
			lastSeen = max(lastSeen, r.seq)
			old := !published
			m, err := decodeResult(r.data)
			if err == nil && (m.Req != q.ID || m.Index >= len(shards) || m.Kind != q.Kind || m.Prec != q.Prec) {
				err = fmt.Errorf("result of %v %v shard %d of request %v, want a %v %v shard < %d of request %v", m.Prec, m.Kind, m.Index, m.Req, q.Prec, q.Kind, len(shards), q.ID)
			}
			if err == nil {
				if sh := shards[m.Index]; m.Lo != sh.Lo || m.Hi != sh.Hi || m.Seed != sh.Seed {
					err = fmt.Errorf("result of shard %d covers [%d, %d) seed %d, want [%d, %d) seed %d", m.Index, m.Lo, m.Hi, m.Seed, sh.Lo, sh.Hi, sh.Seed)
				}
			}
			if err != nil {
				rep.Invalid++
				c.stats.invalid.Add(1)
				continue
			}
			j := m.Index
			if state[j] != 0 {
				rep.DuplicatesDropped++
				c.stats.dups.Add(1)
				if m.Status == resOffloaded {
					c.st.remove(ctx, c.cfg.resultObject(q.ID, m.Blob))
				}
				continue
			}
			if m.Status == resOffloaded {
				rep.Offloaded++
				if m, err = c.fetchResult(ctx, q, m, bound(j)); err != nil {
					rep.Invalid++
					c.stats.invalid.Add(1)
					if err := republish(j, err); err != nil {
						return rep, fmt.Errorf("%s: publishing shard %d again: %w", what, j, err)
					}
					continue
				}
			}
			if old {
				rep.Resumed++
			}
			if m.Status == resFailed {
				giveUp(j, m.Delivered+max(tries[j]-1, 0), m.Reason)
				finish(j, m.Delivered, m.Worker, true)
				continue
			}
			if err := accept(j, m); err != nil {
				rep.Invalid++
				c.stats.invalid.Add(1)
				if err := republish(j, err); err != nil {
					return rep, fmt.Errorf("%s: publishing shard %d again: %w", what, j, err)
				}
				continue
			}
			state[j] = 1
			rep.Completed++
			c.stats.done.Add(1)
			if m.Delivered > 1 {
				rep.Redelivered++
				c.stats.redelivered.Add(1)
			}
			workers[m.Worker] = true
			finish(j, m.Delivered, m.Worker, false)
		}
	}
	rep.Workers = len(workers)
	rep.Elapsed = time.Since(start)
	finished = true
	return rep, nil
}
