package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// store puts θ and the descriptor of q in the object store.
func (c *Coordinator) store(ctx context.Context, q *request, theta []float32) error {
	b := encodeTheta(theta)
	if c.corruptTheta && len(b) > 0 {
		b[0] ^= 1
	}
	if _, err := c.st.obj.PutBytes(ctx, c.cfg.thetaObject(q.ID), b); err != nil {
		return fmt.Errorf("storing θ: %w", err)
	}
	c.stats.putBytes.Add(int64(len(b)))
	if _, err := c.st.obj.PutBytes(ctx, c.cfg.requestObject(q.ID), encodeRequest(q)); err != nil {
		return fmt.Errorf("storing the request: %w", err)
	}
	return nil
}

// queued returns the shards of request q whose messages are still in the
// work queue (queued, or delivered and not yet acked), by sequence.
func (c *Coordinator) queued(ctx context.Context, q *request, n int) (map[int]uint64, error) {
	subj := c.cfg.shardSubject(q.Name, q.ID)
	info, err := c.st.shards.Info(ctx)
	if err != nil {
		return nil, err
	}
	found := map[int]uint64{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := c.st.shards.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subj))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		if s, err := decodeShard(m.Data); err == nil && s.Req == q.ID && s.Index < n {
			found[s.Index] = m.Sequence
		}
		seq = m.Sequence
	}
	return found, nil
}

// resumable checks that the request q, to resume, is the one in the store:
// its descriptor (name, arguments, tolerances, θ's hash, Indices) is
// byte for byte the one q would store, and its θ is there.
func (c *Coordinator) resumable(ctx context.Context, q *request) error {
	desc, err := c.st.getObject(ctx, c.cfg.requestObject(q.ID), maxRequestBytes, false)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return &ExpiredError{Request: q.ID.String()}
	}
	if err != nil {
		return fmt.Errorf("cluster: resuming request %v: %w", q.ID, err)
	}
	if !bytes.Equal(desc, encodeRequest(q)) {
		return fmt.Errorf("cluster: resuming request %v: it was another request (its name, arguments, tolerances, θ or Indices differ)", q.ID)
	}
	if _, err := c.st.obj.GetInfo(ctx, c.cfg.thetaObject(q.ID)); err != nil {
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return &ExpiredError{Request: q.ID.String()}
		}
		return fmt.Errorf("cluster: resuming request %v: θ: %w", q.ID, err)
	}
	return nil
}
