package cluster

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A request's lease is its entry in the key-value bucket PREFIX_requests,
// under its id. The coordinator that runs the request holds it: it renews
// the entry every LeaseTTL/3 by a compare-and-set on its revision. Another
// coordinator may take the request over only once the holder released it
// or stopped renewing it for LeaseTTL; before that it is refused with a
// *BusyError. The entry lives until the request finishes (then it is
// deleted) or its Retention after the last renewal runs out (then the
// request is expired, and a resume says so with an *ExpiredError).
type lease struct {
	Holder    string        `json:"holder"`  // "" once released
	Renewed   time.Time     `json:"renewed"` // the holder's clock
	TTL       time.Duration `json:"ttl"`
	Retention time.Duration `json:"retention"`
	Epoch     int           `json:"epoch"` // coordinators that ran it before this one
	// Durable: the caller gave the id, and may resume the request. One
	// without is removed as soon as its lease lapses.
	Durable bool `json:"durable"`
}

// gone reports whether the request of l can be removed at now: its
// retention ran out, or it is not durable and its lease lapsed.
func (l *lease) gone(now time.Time) bool {
	return now.After(l.Renewed.Add(l.Retention)) || !l.Durable && now.After(l.Renewed.Add(l.TTL))
}

// BusyError refuses a second coordinator on a request whose coordinator
// still holds its lease.
type BusyError struct {
	Request string
	Holder  string    // the coordinator that holds the lease
	Until   time.Time // when the lease lapses unless renewed
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("cluster: request %s is run by another coordinator (%s; its lease runs to %v unless renewed)", e.Request, e.Holder, e.Until.Format(time.RFC3339Nano))
}

// ExpiredError says that a request to resume is no longer in the store:
// its retention ran out after its coordinator stopped, or it finished.
type ExpiredError struct {
	Request string
	At      time.Time // when it expired; zero if nothing is known of it
}

func (e *ExpiredError) Error() string {
	if e.At.IsZero() {
		return fmt.Sprintf("cluster: request %s expired or finished: nothing of it is left to resume", e.Request)
	}
	return fmt.Sprintf("cluster: request %s expired at %v (its retention ran out): nothing of it is left to resume", e.Request, e.At.Format(time.RFC3339Nano))
}

// NewRequestID returns a fresh request id (32 hex digits) for
// Request.ID, so that the caller knows it before the request starts and
// can resume it after a crash.
func NewRequestID() string { return newReqID().String() }

func parseReqID(s string) (reqID, error) {
	var id reqID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("cluster: Request.ID %q: want 32 hex digits (NewRequestID)", s)
	}
	copy(id[:], b)
	return id, nil
}

// leaseBucket opens or makes the bucket of the requests' leases.
func leaseBucket(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.KeyValue, error) {
	st := jetstream.FileStorage
	if cfg.Memory {
		st = jetstream.MemoryStorage
	}
	kv, err := retry(ctx, func() (jetstream.KeyValue, error) {
		kv, err := js.KeyValue(ctx, cfg.leaseBucket())
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: cfg.leaseBucket(), Storage: st, History: 1})
		}
		return kv, err
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: bucket %s: %w", cfg.leaseBucket(), err)
	}
	return kv, nil
}

// leases is the bucket of the requests' leases and its stream.
type leases struct {
	kv     jetstream.KeyValue
	stream jetstream.Stream // KV_PREFIX_requests
	bucket string
}

// openLeases opens or makes the bucket of the requests' leases.
func openLeases(ctx context.Context, js jetstream.JetStream, cfg Config) (*leases, error) {
	kv, err := leaseBucket(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	s, err := retry(ctx, func() (jetstream.Stream, error) { return js.Stream(ctx, "KV_"+cfg.leaseBucket()) })
	if err != nil {
		return nil, fmt.Errorf("cluster: the stream of bucket %s: %w", cfg.leaseBucket(), err)
	}
	return &leases{kv: kv, stream: s, bucket: cfg.leaseBucket()}, nil
}

// remove deletes the entry of key, the marker a deletion leaves included
// (the subject $KV.BUCKET.KEY of its stream), if its revision is still
// rev (0: any).
func (l *leases) remove(ctx context.Context, key string, rev uint64) error {
	var opts []jetstream.KVDeleteOpt
	if rev != 0 {
		opts = append(opts, jetstream.LastRevision(rev))
	}
	if err := l.kv.Delete(ctx, key, opts...); err != nil {
		return err
	}
	return l.stream.Purge(ctx, jetstream.WithPurgeSubject("$KV."+l.bucket+"."+key))
}

// held is a lease taken by this coordinator.
type held struct {
	ls    *leases
	kv    jetstream.KeyValue
	key   string
	l     lease
	rev   uint64
	found bool // the request had an entry: it was started before
}

// acquire takes the lease of request id for holder. mustExist (a resume)
// refuses a request without an entry with an *ExpiredError. An expired
// entry is an *ExpiredError too; a held one a *BusyError.
func acquire(ctx context.Context, ls *leases, id reqID, holder string, ttl, retention time.Duration, durable, mustExist bool) (*held, error) {
	key := id.String()
	now := time.Now()
	kv := ls.kv
	e, err := kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		if mustExist {
			return nil, &ExpiredError{Request: key}
		}
		h := &held{ls: ls, kv: kv, key: key, l: lease{Holder: holder, Renewed: now, TTL: ttl, Retention: retention, Durable: durable}}
		b, _ := json.Marshal(h.l)
		h.rev, err = kv.Create(ctx, key, b)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil, &BusyError{Request: key, Holder: "another coordinator starting it", Until: now.Add(ttl)}
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: lease of request %s: %w", key, err)
		}
		return h, nil
	case err != nil:
		return nil, fmt.Errorf("cluster: lease of request %s: %w", key, err)
	}
	var old lease
	if err := json.Unmarshal(e.Value(), &old); err != nil {
		return nil, fmt.Errorf("cluster: lease of request %s: %w", key, err)
	}
	if exp := old.Renewed.Add(old.Retention); now.After(exp) {
		return nil, &ExpiredError{Request: key, At: exp}
	}
	if until := old.Renewed.Add(old.TTL); old.Holder != "" && now.Before(until) {
		return nil, &BusyError{Request: key, Holder: old.Holder, Until: until}
	}
	h := &held{ls: ls, kv: kv, key: key, found: true, l: lease{Holder: holder, Renewed: now, TTL: ttl, Retention: retention, Epoch: old.Epoch + 1, Durable: durable}}
	b, _ := json.Marshal(h.l)
	h.rev, err = kv.Update(ctx, key, b, e.Revision())
	if err != nil {
		// Another coordinator took it between our read and our write.
		return nil, &BusyError{Request: key, Holder: "another coordinator taking it over", Until: now.Add(ttl)}
	}
	return h, nil
}

// renew writes the lease again; an error means it was lost.
func (h *held) renew(ctx context.Context) error {
	h.l.Renewed = time.Now()
	b, _ := json.Marshal(h.l)
	rev, err := h.kv.Update(ctx, h.key, b, h.rev)
	if err != nil {
		return fmt.Errorf("cluster: request %s: lost its lease: %w", h.key, err)
	}
	h.rev = rev
	return nil
}

// keep renews the lease every TTL/3 until ctx ends; if it is lost, it
// calls lost.
func (h *held) keep(ctx context.Context, lost func(error)) {
	t := time.NewTicker(h.l.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := h.renew(ctx); err != nil && ctx.Err() == nil {
				lost(err)
				return
			}
		}
	}
}

// release leaves the request resumable at once, for its retention.
func (h *held) release(ctx context.Context) {
	h.l.Holder = ""
	h.l.Renewed = time.Now()
	b, _ := json.Marshal(h.l)
	h.kv.Update(ctx, h.key, b, h.rev)
}

// drop deletes the entry of a finished request.
func (h *held) drop(ctx context.Context) { h.ls.remove(ctx, h.key, h.rev) }
