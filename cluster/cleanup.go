package cluster

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// removeRequest removes what is left of request id: its shards in the work
// queue, the results stored as objects that its results from sequence from
// on name, its results, θ and descriptor. It lists no bucket: the stored
// results are found through the messages that name them. A result a
// worker stored and never named (it died in between) is left to the
// bucket's 24-hour TTL.
func (c *Coordinator) removeRequest(ctx context.Context, id reqID, from uint64) error {
	c.nc.Publish(c.cfg.cancelSubject(id), nil)
	err := c.st.shards.Purge(ctx, jetstream.WithPurgeSubject(c.cfg.Prefix+".shard.*."+id.String()))
	subj := c.cfg.resultSubject(id)
	for seq := max(from, 1); ; seq++ {
		m, gerr := c.st.results.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subj))
		if gerr != nil {
			if !errors.Is(gerr, jetstream.ErrMsgNotFound) {
				err = errors.Join(err, gerr)
			}
			break
		}
		if r, derr := decodeResult(m.Data); derr == nil && r.Status == resOffloaded && r.Req == id {
			err = errors.Join(err, c.st.remove(ctx, c.cfg.resultObject(id, r.Blob)))
		}
		seq = m.Sequence
	}
	err = errors.Join(err,
		c.st.results.Purge(ctx, jetstream.WithPurgeSubject(subj)),
		c.st.remove(ctx, c.cfg.requestObject(id)),
		c.st.remove(ctx, c.cfg.thetaObject(id)))
	return err
}

// Sweep removes what is left of finished and expired requests: those
// whose results are still in the results stream but that no coordinator
// runs any more (a result a worker published in the instant its request
// ended), and those whose retention ran out after their coordinator
// stopped. It finds them through the subjects of the results stream and
// the entries of the lease bucket, listing neither the object store nor
// any stream's messages. A coordinator sweeps at the start of each
// request; Sweep returns the number of requests removed.
func (c *Coordinator) Sweep(ctx context.Context) (int, error) {
	ids := map[reqID]bool{}
	info, err := c.st.results.Info(ctx, jetstream.WithSubjectFilter(c.cfg.Prefix+".result.>"))
	if err != nil {
		return 0, err
	}
	for subj := range info.State.Subjects {
		if id, ok := c.idOf(strings.TrimPrefix(subj, c.cfg.Prefix+".result.")); ok {
			ids[id] = true
		}
	}
	keys, err := c.ls.kv.ListKeys(ctx)
	if err != nil {
		return 0, err
	}
	for k := range keys.Keys() {
		if id, ok := c.idOf(k); ok {
			ids[id] = true
		}
	}
	n := 0
	var errs error
	now := time.Now()
	for id := range ids {
		e, err := c.ls.kv.Get(ctx, id.String())
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			// Finished (or removed): anything left is a leftover.
		case err != nil:
			errs = errors.Join(errs, err)
			continue
		default:
			var l lease
			if json.Unmarshal(e.Value(), &l) == nil && !l.gone(now) {
				continue // running, or resumable
			}
		}
		if err := c.removeRequest(ctx, id, 0); err != nil {
			errs = errors.Join(errs, err)
			continue
		}
		if err == nil {
			// Delete the expired entry, unless it was renewed meanwhile.
			c.ls.remove(ctx, id.String(), e.Revision())
		}
		n++
	}
	return n, errs
}

func (c *Coordinator) idOf(s string) (reqID, bool) {
	var id reqID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, false
	}
	copy(id[:], b)
	return id, true
}
