package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flatkit/flatkit/ode"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// WorkerConfig configures a Worker.
type WorkerConfig struct {
	Config
	// Names are the registered names to serve. The default is all of
	// them, as registered when Run starts.
	Names []string
	// Concurrency is how many shards the worker computes at once. The
	// default is runtime.GOMAXPROCS(0).
	Concurrency int
	// ID names the worker in results and logs. The default is
	// host-pid-random.
	ID string
	// Logf, if set, receives one line per notable event, such as a shard
	// refused or given up, or a redelivery.
	Logf func(format string, args ...any)
}

// WorkerStats counts what a worker did.
type WorkerStats struct {
	Shards           int64 // shard results published
	Failed           int64 // shards given up after their last delivery (a failure result published)
	Retried          int64 // deliveries that failed and were handed back (nak) for another try
	Refused          int64 // deliveries refused for good: malformed, or of a finished or cancelled request
	Redelivered      int64 // deliveries received that were not a shard's first
	ServerDuplicates int64 // results the server dropped as duplicates (Nats-Msg-Id)
	InProgress       int64 // in-progress acks sent
	// Loads are the requests whose descriptor and θ this worker fetched
	// from the object store. It fetches once per request it serves, while
	// the request stays in its cache of the last few; never per shard.
	Loads      int64
	ThetaBytes int64 // bytes of θ fetched, in all
	Offloaded  int64 // results larger than the max payload, stored as objects
}

// Worker pulls shards of the names it serves and computes them with the
// in-process runner's SolveShard and GradientShard. It publishes each
// partial result and then acks the shard.
type Worker struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	cfg WorkerConfig

	mu       sync.Mutex
	reqs     map[reqID]*reqState
	inflight map[reqID]map[*shardTask]struct{}
	order    []reqID // cache order, oldest first

	shards, failed, retried, refused, redelivered, dups, inprog atomic.Int64
	loads, thetaBytes, offloaded, putBytes                      atomic.Int64

	// latency observes each shard's computing time (RegisterMetrics).
	latency prometheus.Histogram

	// inline is the largest result published as a message; larger ones
	// go through the object store.
	inline int

	ready     chan struct{}
	readyOnce sync.Once

	// hooks for fault-injection tests (nil in normal use).
	hooks *workerHooks
}

// workerHooks inject faults in tests.
type workerHooks struct {
	// beforeCompute runs before a shard is computed (a delay, a kill).
	beforeCompute func(s *shardMsg)
	// afterPublish runs after a result is published and before the ack;
	// it may publish again. ack=false leaves the shard unacked.
	afterPublish func(s *shardMsg, data []byte, msgID string) (ack bool)
	// afterStore runs after a result was stored as object name and before
	// its reference is published (it may tamper with the object).
	afterStore func(st *streams, s *shardMsg, name string)
}

type shardTask struct {
	cancel context.CancelFunc
}

// reqState is what a worker caches of a request: its descriptor, θ and the
// built Spec, loaded once.
type reqState struct {
	ready chan struct{}
	q     *request
	b     built
	shard []ode.Shard
	err   error
	gone  atomic.Bool // the request was not found, or was cancelled: it is over
}

const workerCache = 8

// NewWorker makes a worker on connection nc, which the caller owns and
// closes. Run starts it.
func NewWorker(nc *nats.Conn, cfg WorkerConfig) (*Worker, error) {
	if nc == nil {
		return nil, errors.New("cluster: NewWorker: nil connection")
	}
	c, err := cfg.Config.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg.Config = c
	if cfg.Concurrency < 0 {
		return nil, fmt.Errorf("cluster: WorkerConfig.Concurrency = %d, want ≥ 0 (0: GOMAXPROCS)", cfg.Concurrency)
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = runtime.GOMAXPROCS(0)
	}
	if cfg.ID == "" {
		host, _ := os.Hostname()
		var b [3]byte
		rand.Read(b[:])
		cfg.ID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	cfg.ID = truncUTF8(cfg.ID, MaxNameLen)
	for _, n := range cfg.Names {
		if _, ok := lookup(n); !ok {
			return nil, &UnknownNameError{Name: n}
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return &Worker{nc: nc, js: js, cfg: cfg, reqs: map[reqID]*reqState{}, inflight: map[reqID]map[*shardTask]struct{}{},
		ready: make(chan struct{}), inline: inlineLimit(nc)}, nil
}

// Ready is closed once Run has set up the streams and subscriptions and
// answers for its names.
func (w *Worker) Ready() <-chan struct{} { return w.ready }

// ID is the worker's id.
func (w *Worker) ID() string { return w.cfg.ID }

// Stats returns the worker's counters so far.
func (w *Worker) Stats() WorkerStats {
	return WorkerStats{Shards: w.shards.Load(), Failed: w.failed.Load(), Retried: w.retried.Load(),
		Refused: w.refused.Load(), Redelivered: w.redelivered.Load(), ServerDuplicates: w.dups.Load(), InProgress: w.inprog.Load(),
		Loads: w.loads.Load(), ThetaBytes: w.thetaBytes.Load(), Offloaded: w.offloaded.Load()}
}

func (w *Worker) logf(format string, args ...any) {
	if w.cfg.Logf != nil {
		w.cfg.Logf(format, args...)
	}
}

// Run serves shards until ctx is done, and then returns nil, or until the
// resources cannot be set up. A shard being computed when ctx ends is
// handed back by a nak, for another worker.
func (w *Worker) Run(ctx context.Context) error {
	names := w.cfg.Names
	if len(names) == 0 {
		names = Registered()
	}
	if len(names) == 0 {
		return errors.New("cluster: Worker.Run: no registered name to serve")
	}
	st, err := setup(ctx, w.js, w.cfg.Config)
	if err != nil {
		return err
	}
	cons := make([]jetstream.Consumer, len(names))
	for k, n := range names {
		if cons[k], err = st.consumer(ctx, n); err != nil {
			return err
		}
	}
	var subs []*nats.Subscription
	defer func() {
		for _, s := range subs {
			s.Unsubscribe()
		}
	}()
	for _, n := range names {
		s, err := w.nc.QueueSubscribe(w.cfg.serveSubject(n), "workers", func(m *nats.Msg) { m.Respond([]byte(w.cfg.ID)) })
		if err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		subs = append(subs, s)
	}
	s, err := w.nc.Subscribe(w.cfg.Prefix+".cancel.*", w.onCancel)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	subs = append(subs, s)
	if err := w.nc.Flush(); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	w.readyOnce.Do(func() { close(w.ready) })
	var wg sync.WaitGroup
	for j := 0; j < w.cfg.Concurrency; j++ {
		wg.Go(func() { w.loop(ctx, st, names, cons, j) })
	}
	wg.Wait()
	return nil
}

func (w *Worker) onCancel(m *nats.Msg) {
	tok := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]
	var id reqID
	if b, err := hex.DecodeString(tok); err != nil || len(b) != len(id) {
		return
	} else {
		copy(id[:], b)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for t := range w.inflight[id] {
		t.cancel()
	}
	if rs, ok := w.reqs[id]; ok {
		rs.gone.Store(true)
	}
}

// pollWait is how long one pull waits for a shard. While it finds no work,
// a worker serving several names asks each in turn, for pollWait/len(names)
// each. While it finds work, it keeps pulling the same name.
const pollWait = time.Second

func (w *Worker) loop(ctx context.Context, st *streams, names []string, cons []jetstream.Consumer, j int) {
	k := j % len(cons)
	wait := pollWait
	if len(cons) > 1 {
		wait = pollWait / time.Duration(len(cons))
	}
	for ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, wait)
		msg, err := cons[k].Next(jetstream.FetchContext(fctx))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
				w.logf("worker %s: pull %s: %v", w.cfg.ID, names[k], err)
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
			k = (k + 1) % len(cons)
			continue
		}
		w.handle(ctx, st, names[k], msg)
	}
}

// handle computes one delivered shard and settles it: result published
// then ack, nak for another try, or term.
func (w *Worker) handle(ctx context.Context, st *streams, name string, msg jetstream.Msg) {
	delivered := 1
	if md, err := msg.Metadata(); err == nil {
		delivered = int(md.NumDelivered)
	}
	if delivered > 1 {
		w.redelivered.Add(1)
	}
	s, err := decodeShard(msg.Data())
	if err == nil && msg.Subject() != w.cfg.shardSubject(name, s.Req) {
		err = fmt.Errorf("cluster: shard of request %v on subject %q, want %q", s.Req, msg.Subject(), w.cfg.shardSubject(name, s.Req))
	}
	if err != nil {
		w.refused.Add(1)
		w.logf("worker %s: refused a shard message: %v", w.cfg.ID, err)
		msg.TermWithReason("malformed")
		return
	}
	rs := w.request(ctx, st, s.Req)
	if rs.gone.Load() {
		w.refused.Add(1)
		msg.TermWithReason("request finished")
		return
	}
	err = rs.err
	var sh ode.Shard
	if err == nil {
		sh, err = w.check(rs, s, name)
	}
	m := &resultMsg{Req: s.Req, Kind: s.Kind, Prec: s.Prec, Index: s.Index, Attempt: s.Attempt,
		Lo: s.Lo, Hi: s.Hi, Seed: s.Seed, Delivered: delivered, Worker: w.cfg.ID}
	cancelled := false
	if err == nil {
		tctx, cancel := context.WithCancel(ctx)
		task := &shardTask{cancel: cancel}
		w.mu.Lock()
		if w.inflight[s.Req] == nil {
			w.inflight[s.Req] = map[*shardTask]struct{}{}
		}
		w.inflight[s.Req][task] = struct{}{}
		w.mu.Unlock()
		stop := w.keepAlive(msg, st.cfg.AckWait)
		if w.hooks != nil && w.hooks.beforeCompute != nil {
			w.hooks.beforeCompute(s)
		}
		t0 := time.Now()
		err = rs.b.compute(tctx, rs.q, sh, m)
		if w.latency != nil {
			w.latency.Observe(time.Since(t0).Seconds())
		}
		stop()
		w.mu.Lock()
		delete(w.inflight[s.Req], task)
		if len(w.inflight[s.Req]) == 0 {
			delete(w.inflight, s.Req)
		}
		w.mu.Unlock()
		cancelled = tctx.Err() != nil
		cancel()
	}
	switch {
	case ctx.Err() != nil:
		msg.Nak() // the worker stops: another one takes it now
		return
	case cancelled:
		w.refused.Add(1)
		msg.TermWithReason("request cancelled")
		return
	case err != nil && delivered < st.cfg.MaxDeliver:
		w.retried.Add(1)
		w.logf("worker %s: shard %d of %v (delivery %d): %v; handed back", w.cfg.ID, s.Index, s.Req, delivered, err)
		msg.NakWithDelay(time.Duration(delivered) * 100 * time.Millisecond)
		return
	case err != nil:
		m = &resultMsg{Req: s.Req, Kind: s.Kind, Prec: s.Prec, Status: resFailed, Index: s.Index, Attempt: s.Attempt,
			Lo: s.Lo, Hi: s.Hi, Seed: s.Seed, Delivered: delivered, Worker: w.cfg.ID, Reason: err.Error()}
		w.logf("worker %s: shard %d of %v failed on its last delivery (%d): %v", w.cfg.ID, s.Index, s.Req, delivered, err)
	}
	data := encodeResult(m)
	msgID := fmt.Sprintf("%v.%d.%d", s.Req, s.Index, s.Attempt)
	blob := ""
	if len(data) > w.inline {
		ref, name, err := w.offload(ctx, st, m, data)
		if err != nil {
			w.retried.Add(1)
			w.logf("worker %s: storing the result of shard %d of %v: %v; handed back", w.cfg.ID, s.Index, s.Req, err)
			msg.Nak()
			return
		}
		data, blob = ref, name
		if w.hooks != nil && w.hooks.afterStore != nil {
			w.hooks.afterStore(st, s, name)
		}
	}
	dup, err := w.publish(ctx, s.Req, data, msgID)
	if blob != "" && (err != nil || dup || rs.gone.Load()) {
		// Nobody will read it: the publication failed, the server kept
		// an earlier result of this shard, or the request is over.
		w.removeBlob(st, blob)
	}
	if err != nil {
		w.retried.Add(1)
		w.logf("worker %s: publishing shard %d of %v: %v; handed back", w.cfg.ID, s.Index, s.Req, err)
		msg.Nak()
		return
	}
	if m.Status == resFailed {
		w.failed.Add(1)
		msg.TermWithReason("failed")
		return
	}
	w.shards.Add(1)
	if w.hooks != nil && w.hooks.afterPublish != nil && !w.hooks.afterPublish(s, data, msgID) {
		return
	}
	msg.Ack()
}

// publish publishes a result to the request's result subject, with its
// Nats-Msg-Id for de-duplication; dup reports that the server dropped it.
func (w *Worker) publish(ctx context.Context, id reqID, data []byte, msgID string) (dup bool, err error) {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ack, err := w.js.Publish(pctx, w.cfg.resultSubject(id), data, jetstream.WithMsgID(msgID))
	if err != nil {
		return false, err
	}
	if ack.Duplicate {
		w.dups.Add(1)
	}
	return ack.Duplicate, nil
}

// inlineLimit is the largest result a worker on nc publishes as a message:
// the server's max payload less room for the headers.
func inlineLimit(nc *nats.Conn) int {
	mp := int(nc.MaxPayload())
	if mp <= 0 {
		mp = 1 << 20 // not connected yet: the server's default
	}
	return max(mp-8<<10, 1<<10)
}

// offload stores result data (of m) as an object under a fresh random name
// of its request and returns the message that refers to it: its name, size
// and SHA-256.
func (w *Worker) offload(ctx context.Context, st *streams, m *resultMsg, data []byte) (ref []byte, name string, err error) {
	r := *m
	r.Status = resOffloaded
	rand.Read(r.Blob[:])
	r.BlobSize = len(data)
	r.BlobSum = sha256.Sum256(data)
	name = st.cfg.resultObject(m.Req, r.Blob)
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := st.obj.PutBytes(pctx, name, data); err != nil {
		w.removeBlob(st, name)
		return nil, "", err
	}
	w.offloaded.Add(1)
	w.putBytes.Add(int64(len(data)))
	return encodeResult(&r), name, nil
}

func (w *Worker) removeBlob(st *streams, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.remove(ctx, name); err != nil {
		w.logf("worker %s: removing object %s: %v", w.cfg.ID, name, err)
	}
}

// keepAlive sends in-progress acks every ackWait/3 until stop is called.
func (w *Worker) keepAlive(msg jetstream.Msg, ackWait time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(ackWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if msg.InProgress() == nil {
					w.inprog.Add(1)
				}
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// check validates a shard against its request: the kind, the precision, θ's
// hash, and the range against the request's own shard list.
func (w *Worker) check(rs *reqState, s *shardMsg, name string) (ode.Shard, error) {
	q := rs.q
	switch {
	case q.Name != name:
		return ode.Shard{}, fmt.Errorf("cluster: shard of %q on the subject of %q", q.Name, name)
	case s.Kind != q.Kind || s.Prec != q.Prec:
		return ode.Shard{}, fmt.Errorf("cluster: shard of a %v %v request, want %v %v (the request's)", s.Prec, s.Kind, q.Prec, q.Kind)
	case s.ThetaHash != q.ThetaHash:
		return ode.Shard{}, fmt.Errorf("cluster: refused: the shard names θ %x…, want %x… (the hash of the request's θ)", s.ThetaHash[:6], q.ThetaHash[:6])
	case s.Index >= len(rs.shard):
		return ode.Shard{}, fmt.Errorf("cluster: shard %d of a request of %d shards, want < %d", s.Index, len(rs.shard), len(rs.shard))
	}
	// The message does not carry N: both sides take it from the request.
	sh := ode.Shard{Lo: s.Lo, Hi: s.Hi, N: rs.shard[s.Index].N, Seed: s.Seed}
	if rs.shard[s.Index] != sh {
		return ode.Shard{}, fmt.Errorf("cluster: shard %d is %+v, want %+v (the ensemble's: the coordinator and the worker build different ensembles)", s.Index, sh, rs.shard[s.Index])
	}
	return sh, nil
}

// request returns the cached state of request id, loading it on first use:
// the descriptor, θ and the built Spec. θ's SHA-256 is checked against the
// descriptor's.
func (w *Worker) request(ctx context.Context, st *streams, id reqID) *reqState {
	w.mu.Lock()
	rs, ok := w.reqs[id]
	if ok {
		w.mu.Unlock()
		select {
		case <-rs.ready:
		case <-ctx.Done():
			return &reqState{err: ctx.Err()}
		}
		if rs.err != nil && !rs.gone.Load() {
			// A load error may be passing (a timeout): load again next time.
			w.mu.Lock()
			if w.reqs[id] == rs {
				delete(w.reqs, id)
			}
			w.mu.Unlock()
		}
		return rs
	}
	rs = &reqState{ready: make(chan struct{})}
	w.reqs[id] = rs
	w.order = append(w.order, id)
	for len(w.order) > workerCache {
		delete(w.reqs, w.order[0])
		w.order = w.order[1:]
	}
	w.mu.Unlock()
	defer close(rs.ready)
	rs.err = w.load(ctx, st, id, rs)
	return rs
}

func (w *Worker) load(ctx context.Context, st *streams, id reqID, rs *reqState) error {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	desc, err := st.getObject(lctx, st.cfg.requestObject(id), maxRequestBytes, false)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		rs.gone.Store(true)
	}
	if err != nil {
		return fmt.Errorf("cluster: request %v: %w", id, err)
	}
	q, err := decodeRequest(desc)
	if err != nil {
		return err
	}
	if q.ID != id {
		return fmt.Errorf("cluster: request object %v holds request %v, want %v", id, q.ID, id)
	}
	raw, err := st.getObject(lctx, st.cfg.thetaObject(id), 4*q.ThetaLen, true)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		rs.gone.Store(true)
	}
	if err != nil {
		return fmt.Errorf("cluster: θ of request %v: %w", id, err)
	}
	w.loads.Add(1)
	w.thetaBytes.Add(int64(len(raw)))
	theta := decodeTheta(raw)
	if h := thetaHash(theta); h != q.ThetaHash {
		return fmt.Errorf("cluster: refused: θ of request %v hashes to %x…, want %x… (the request's)", id, h[:6], q.ThetaHash[:6])
	}
	e, ok := lookup(q.Name)
	if !ok {
		return &UnknownNameError{Name: q.Name}
	}
	if e.prec() != q.Prec {
		return fmt.Errorf("cluster: %q is registered here for %v, the request is for %v", q.Name, e.prec(), q.Prec)
	}
	b, err := e.build(q.Args, theta)
	if err != nil {
		return err
	}
	rs.q, rs.b = q, b
	rs.shard = b.shards(q)
	if len(rs.shard) != q.Shards {
		return fmt.Errorf("cluster: the ensemble of %q here has %d shards, want %d (the coordinator's)", q.Name, len(rs.shard), q.Shards)
	}
	return nil
}

// maxRequestBytes bounds a request descriptor.
const maxRequestBytes = 256 + MaxArgs + 4*MaxIndices
