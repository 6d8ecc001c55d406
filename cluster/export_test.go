package cluster

import "context"

// Hooks inject faults into a worker, for the tests.
type Hooks struct {
	// BeforeCompute runs before shard number shard is computed.
	BeforeCompute func(shard int)
	// AfterPublish runs after shard number shard's result was published
	// (with Nats-Msg-Id msgID) and before the ack; republish publishes the
	// same result again with another id. Returning false leaves the shard
	// unacknowledged.
	AfterPublish func(shard int, msgID string, republish func(msgID string) error) (ack bool)
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
				return w.publish(contextBackground(), s.Req, data, id)
			})
		}
	}
	w.hooks = wh
}

func contextBackground() context.Context { return context.Background() }

// CorruptTheta makes c store a θ that differs from the one it hashes (one
// flipped bit), as a corrupted or tampered store would.
func CorruptTheta(c *Coordinator) { c.corruptTheta = true }
