package cluster

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Config names and tunes the JetStream resources a coordinator and its
// workers share; both sides must use the same Prefix. Zero fields mean the
// documented defaults.
type Config struct {
	// Prefix names everything: the streams PREFIX_shards (a work queue) and
	// PREFIX_results, the object store PREFIX_params and the subjects
	// PREFIX.shard.NAME.ID, PREFIX.result.ID, PREFIX.serve.NAME and
	// PREFIX.cancel.ID. Default "flatkit".
	Prefix string
	// AckWait is how long a delivered shard may go without an ack or an
	// in-progress ack before the server delivers it again (a worker sends
	// in-progress acks every AckWait/3 while it computes). Default 30 s.
	AckWait time.Duration
	// MaxDeliver is how many times a shard is delivered (or, after invalid
	// results, published) before it is given up and reported as failed
	// trajectories. Default 5.
	MaxDeliver int
	// Memory keeps the streams and the object store in memory instead of
	// on disk.
	Memory bool
	// LeaseTTL is how long a coordinator's lease on a request lasts
	// without renewal (it renews it every LeaseTTL/3). A coordinator that
	// dies leaves its request resumable by another after LeaseTTL; before
	// that, a second coordinator is refused. Default 15 s.
	LeaseTTL time.Duration
	// Retention is how long a request given an ID (Request.ID) stays
	// resumable after its coordinator stopped: its descriptor, θ and
	// results stay in the store that long, and its lease entry says when
	// it expired. It is at most 24 h, the age at which the results stream
	// and the object store drop anything. Default 1 h.
	Retention time.Duration
}

const (
	defaultPrefix     = "flatkit"
	defaultAckWait    = 30 * time.Second
	defaultMaxDeliver = 5
	defaultLeaseTTL   = 15 * time.Second
	defaultRetention  = time.Hour
	// maxAge is the age at which the results stream and the object store
	// drop anything, whatever its request: the backstop of Retention.
	maxAge      = 24 * time.Hour
	dedupWindow = 2 * time.Minute
)

func (c Config) withDefaults() (Config, error) {
	if c.Prefix == "" {
		c.Prefix = defaultPrefix
	}
	if !validName(c.Prefix) {
		return c, fmt.Errorf("cluster: Config.Prefix %q: want 1 to %d letters, digits, '-' or '_'", c.Prefix, MaxNameLen)
	}
	switch {
	case c.AckWait == 0:
		c.AckWait = defaultAckWait
	case c.AckWait < 100*time.Millisecond:
		return c, fmt.Errorf("cluster: Config.AckWait = %v, want ≥ 100ms (0: %v)", c.AckWait, defaultAckWait)
	}
	switch {
	case c.MaxDeliver == 0:
		c.MaxDeliver = defaultMaxDeliver
	case c.MaxDeliver < 1 || c.MaxDeliver > 1000:
		return c, fmt.Errorf("cluster: Config.MaxDeliver = %d, want 1 … 1000 (0: %d)", c.MaxDeliver, defaultMaxDeliver)
	}
	switch {
	case c.LeaseTTL == 0:
		c.LeaseTTL = defaultLeaseTTL
	case c.LeaseTTL < 300*time.Millisecond:
		return c, fmt.Errorf("cluster: Config.LeaseTTL = %v, want ≥ 300ms (0: %v)", c.LeaseTTL, defaultLeaseTTL)
	}
	switch {
	case c.Retention == 0:
		c.Retention = defaultRetention
	case c.Retention < c.LeaseTTL || c.Retention > maxAge:
		return c, fmt.Errorf("cluster: Config.Retention = %v, want LeaseTTL (%v) … %v (0: %v)", c.Retention, c.LeaseTTL, maxAge, defaultRetention)
	}
	return c, nil
}

func (c Config) leaseBucket() string             { return c.Prefix + "_requests" }
func (c Config) shardStream() string             { return c.Prefix + "_shards" }
func (c Config) resultStream() string            { return c.Prefix + "_results" }
func (c Config) bucket() string                  { return c.Prefix + "_params" }
func (c Config) consumerName(name string) string { return c.Prefix + "_" + name }
func (c Config) shardSubject(name string, id reqID) string {
	return c.Prefix + ".shard." + name + "." + id.String()
}
func (c Config) resultSubject(id reqID) string   { return c.Prefix + ".result." + id.String() }
func (c Config) serveSubject(name string) string { return c.Prefix + ".serve." + name }
func (c Config) cancelSubject(id reqID) string   { return c.Prefix + ".cancel." + id.String() }
func (c Config) requestObject(id reqID) string   { return id.String() + ".req" }
func (c Config) thetaObject(id reqID) string     { return id.String() + ".theta" }
func (c Config) resultObject(id reqID, blob [16]byte) string {
	return c.resultPrefix(id) + hex.EncodeToString(blob[:])
}
func (c Config) resultPrefix(id reqID) string { return id.String() + ".res." }

// streams is the set of JetStream resources, made or updated at start.
type streams struct {
	js      jetstream.JetStream
	cfg     Config
	shards  jetstream.Stream
	results jetstream.Stream
	obj     jetstream.ObjectStore
	objs    jetstream.Stream // the object store's own stream, OBJ_PREFIX_params
}

func retry[V any](ctx context.Context, f func() (V, error)) (V, error) {
	var v V
	var err error
	for try := 0; try < 5; try++ {
		if v, err = f(); err == nil || ctx.Err() != nil {
			return v, err
		}
		time.Sleep(time.Duration(try+1) * 20 * time.Millisecond)
	}
	return v, err
}

func setup(ctx context.Context, js jetstream.JetStream, cfg Config) (*streams, error) {
	st := jetstream.FileStorage
	if cfg.Memory {
		st = jetstream.MemoryStorage
	}
	stream := func(sc jetstream.StreamConfig) (jetstream.Stream, error) {
		s, err := retry(ctx, func() (jetstream.Stream, error) { return ensureStream(ctx, js, sc) })
		if err != nil {
			return nil, fmt.Errorf("cluster: stream %s: %w", sc.Name, err)
		}
		return s, nil
	}
	s := &streams{js: js, cfg: cfg}
	var err error
	s.shards, err = stream(jetstream.StreamConfig{
		Name:       cfg.shardStream(),
		Subjects:   []string{cfg.Prefix + ".shard.>"},
		Retention:  jetstream.WorkQueuePolicy,
		Storage:    st,
		Duplicates: dedupWindow,
	})
	if err != nil {
		return nil, err
	}
	s.results, err = stream(jetstream.StreamConfig{
		Name:       cfg.resultStream(),
		Subjects:   []string{cfg.Prefix + ".result.>"},
		Retention:  jetstream.LimitsPolicy,
		Storage:    st,
		MaxAge:     maxAge,
		Duplicates: dedupWindow,
	})
	if err != nil {
		return nil, err
	}
	s.obj, err = retry(ctx, func() (jetstream.ObjectStore, error) {
		o, err := js.ObjectStore(ctx, cfg.bucket())
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: cfg.bucket(), Storage: st, TTL: maxAge})
		}
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: object store %s: %w", cfg.bucket(), err)
	}
	s.objs, err = retry(ctx, func() (jetstream.Stream, error) { return js.Stream(ctx, "OBJ_"+cfg.bucket()) })
	if err != nil {
		return nil, fmt.Errorf("cluster: the stream of object store %s: %w", cfg.bucket(), err)
	}
	return s, nil
}

// ensureStream returns the stream of cfg.Name as it exists (whoever made it
// first chose its storage), or makes it. A work-queue stream must exist with
// that retention.
func ensureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, cfg.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = js.CreateStream(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	if got := s.CachedInfo().Config; got.Retention != cfg.Retention || !slices.Equal(got.Subjects, cfg.Subjects) {
		return nil, fmt.Errorf("stream %s exists with retention %v and subjects %v, want %v and %v", cfg.Name, got.Retention, got.Subjects, cfg.Retention, cfg.Subjects)
	}
	return s, nil
}

// consumer makes or updates the durable work-queue consumer of a name, the
// one every worker serving the name pulls from.
func (s *streams) consumer(ctx context.Context, name string) (jetstream.Consumer, error) {
	c, err := retry(ctx, func() (jetstream.Consumer, error) {
		return s.shards.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:       s.cfg.consumerName(name),
			FilterSubject: s.cfg.Prefix + ".shard." + name + ".>",
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       s.cfg.AckWait,
			MaxDeliver:    s.cfg.MaxDeliver,
			MaxAckPending: 4096,
		})
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: consumer %s: %w", s.cfg.consumerName(name), err)
	}
	return c, nil
}

// remove deletes object name and then purges the delete marker that the
// object store leaves in its meta subject ($O.BUCKET.M.<base64url name>,
// the layout of NATS ADR-20), so that a request leaves nothing behind: no
// chunks and no marker. A missing object is not an error.
func (s *streams) remove(ctx context.Context, name string) error {
	err := s.obj.Delete(ctx, name)
	if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return err
	}
	meta := "$O." + s.cfg.bucket() + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
	return s.objs.Purge(ctx, jetstream.WithPurgeSubject(meta))
}

// errObjectSize is an object whose size is not the one its request says.
var errObjectSize = errors.New("object size")

// getObject reads object name, refusing one larger than limit (or, with
// exact, of another size) before allocating.
func (s *streams) getObject(ctx context.Context, name string, limit int, exact bool) ([]byte, error) {
	res, err := s.obj.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	info, err := res.Info()
	if err != nil {
		return nil, err
	}
	if info.Size > uint64(limit) || exact && info.Size != uint64(limit) {
		want := fmt.Sprintf("≤ %d", limit)
		if exact {
			want = fmt.Sprint(limit)
		}
		return nil, fmt.Errorf("cluster: object %s has %d bytes, want %s: %w", name, info.Size, want, errObjectSize)
	}
	b := make([]byte, info.Size)
	if _, err := io.ReadFull(res, b); err != nil {
		return nil, fmt.Errorf("cluster: object %s: %w", name, err)
	}
	return b, nil
}
