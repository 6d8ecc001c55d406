package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"

	"github.com/nats-io/nats.go/jetstream"
)

// Hooks inject faults into a worker, for the tests.
type Hooks struct {
	// BeforeCompute runs before shard number shard is computed.
	BeforeCompute func(shard int)
	// AfterPublish runs after shard number shard's result was published
	// (with Nats-Msg-Id msgID) and before the ack; republish publishes the
	// same result again with another id. Returning false leaves the shard
	// unacknowledged.
	AfterPublish func(shard int, msgID string, republish func(msgID string) error) (ack bool)
	// StoredResult, for a result stored in the object store, names a fault
	// to do to the object before its reference is published: "flip" (one
	// bit of it, the size unchanged), "grow" (one byte more), "delete", or
	// "" (none).
	StoredResult func(shard, attempt int) string
	// StoreAll sends every result through the object store, however small.
	StoreAll bool
}

// SetHooks installs h on w before Run.
func SetHooks(w *Worker, h Hooks) {
	wh := &workerHooks{}
	if h.BeforeCompute != nil {
		wh.beforeCompute = func(s *shardMsg) { h.BeforeCompute(s.Index) }
	}
	if h.AfterPublish != nil {
		wh.afterPublish = func(s *shardMsg, data []byte, msgID string) bool {
			return h.AfterPublish(s.Index, msgID, func(id string) error {
				_, err := w.publish(contextBackground(), s.Req, data, id)
				return err
			})
		}
	}
	if h.StoreAll {
		w.inline = 0
	}
	if h.StoredResult != nil {
		wh.afterStore = func(st *streams, s *shardMsg, name string) {
			ctx := context.Background()
			switch f := h.StoredResult(s.Index, s.Attempt); f {
			case "":
			case "delete":
				st.remove(ctx, name)
			case "flip", "grow":
				b, err := st.obj.GetBytes(ctx, name)
				if err != nil {
					panic(err)
				}
				if f == "flip" {
					b[len(b)/2] ^= 1
				} else {
					b = append(b, 0)
				}
				if _, err := st.obj.PutBytes(ctx, name, b); err != nil {
					panic(err)
				}
			default:
				panic("unknown fault " + f)
			}
		}
	}
	w.hooks = wh
}

// ObjectStoreMessages is the number of messages in the stream of the
// object store of cfg (chunks, descriptions, delete markers): 0 when
// nothing is left of finished requests.
func ObjectStoreMessages(ctx context.Context, c *Coordinator) (uint64, error) {
	info, err := c.st.objs.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.Msgs, nil
}

func contextBackground() context.Context { return context.Background() }

// CorruptTheta makes c store a θ that differs from the one it hashes (one
// flipped bit), as a corrupted or tampered store would.
func CorruptTheta(c *Coordinator) { c.corruptTheta = true }

// DropQueuedShards removes request id's shards from the work queue, as if
// its coordinator had died before publishing them.
func DropQueuedShards(ctx context.Context, c *Coordinator, id string) error {
	return c.st.shards.Purge(ctx, jetstream.WithPurgeSubject(c.cfg.Prefix+".shard.*."+id))
}

// LeaveStoredResult stores a result object of request id and publishes the
// message that names it, as a worker does in the instant its request ends.
func LeaveStoredResult(ctx context.Context, c *Coordinator, id string) error {
	rid, err := parseReqID(id)
	if err != nil {
		return err
	}
	data := encodeResult(&resultMsg{Req: rid, Kind: kindSolve, Prec: precisionOf[float64](), Hi: 1, Worker: "late"})
	r := resultMsg{Req: rid, Kind: kindSolve, Prec: precisionOf[float64](), Status: resOffloaded, Hi: 1, Worker: "late", BlobSize: len(data), BlobSum: sha256.Sum256(data)}
	rand.Read(r.Blob[:])
	if _, err := c.st.obj.PutBytes(ctx, c.cfg.resultObject(rid, r.Blob), data); err != nil {
		return err
	}
	_, err = c.js.Publish(ctx, c.cfg.resultSubject(rid), encodeResult(&r))
	return err
}

// ResultMessages is the number of messages in the results stream.
func ResultMessages(ctx context.Context, c *Coordinator) (uint64, error) {
	info, err := c.st.results.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.Msgs, nil
}

// LeaseMessages is the number of messages in the stream of the lease
// bucket: 0 when no request is running or resumable.
func LeaseMessages(ctx context.Context, c *Coordinator) (uint64, error) {
	info, err := c.ls.stream.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.State.Msgs, nil
}
