package neural_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flatkit/flatkit/cluster"
	"github.com/flatkit/flatkit/cluster/embedded"
	"github.com/flatkit/flatkit/cluster/neural"
	"github.com/flatkit/flatkit/ode"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func init() { neural.Register() }

var testConfig = cluster.Config{AckWait: 5 * time.Second, MaxDeliver: 3}

// start starts an embedded server, k workers serving "node" and a
// coordinator.
func start(t *testing.T, k int) (*cluster.Coordinator, *nats.Conn, []*cluster.Worker) {
	t.Helper()
	s, err := embedded.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	connect := func() *nats.Conn {
		nc, err := nats.Connect(s.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var ws []*cluster.Worker
	for range k {
		w, err := cluster.NewWorker(connect(), cluster.WorkerConfig{Config: testConfig, Names: []string{"node"}, Concurrency: 1, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := w.Run(ctx); err != nil {
				t.Errorf("worker: %v", err)
			}
		})
		<-w.Ready()
		ws = append(ws, w)
	}
	nc := connect()
	c, err := cluster.NewCoordinator(context.Background(), nc, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	return c, nc, ws
}

// inProcess is Ensemble.Gradient in this process with the Spec's options
// as a worker applies them: Options, then Indices and PerTrajectoryU0.
func inProcess(t *testing.T, args []byte, θ []float32, idx []int, perU0 bool) *ode.EnsembleGradientResult[float32] {
	t.Helper()
	s, err := neural.Build(args, θ)
	if err != nil {
		t.Fatal(err)
	}
	opts := ode.OptionsFor[ode.EnsembleGradientOption](s.Options)
	if idx != nil {
		opts = append(opts, ode.Indices(idx...))
	}
	if perU0 {
		opts = append(opts, ode.PerTrajectoryU0())
	}
	g, err := s.Ensemble.Gradient(context.Background(), s.Method, s.LossFor, s.Sensitivity, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func same(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

func sameGrad(t *testing.T, got, want *ode.EnsembleGradientResult[float32]) {
	t.Helper()
	if !same(got.Value, want.Value) || got.Count != want.Count || len(got.P) != len(want.P) || len(got.U0) != len(want.U0) {
		t.Fatalf("value %v count %d (%d gradient values, %d dL/du0), want %v %d (%d, %d)",
			got.Value, got.Count, len(got.P), len(got.U0), want.Value, want.Count, len(want.P), len(want.U0))
	}
	bad := 0
	for k := range got.P {
		if math.Float32bits(got.P[k]) != math.Float32bits(want.P[k]) && bad < 5 {
			bad++
			t.Errorf("P[%d] = %v, want %v", k, got.P[k], want.P[k])
		}
	}
	for q := range got.U0 {
		for j := range got.U0[q] {
			if math.Float32bits(got.U0[q][j]) != math.Float32bits(want.U0[q][j]) {
				t.Errorf("U0[%d][%d] = %v, want %v", q, j, got.U0[q][j], want.U0[q][j])
			}
		}
	}
	if got.Stats != want.Stats || len(got.Errors) != len(want.Errors) {
		t.Errorf("stats %+v, %d errors; want %+v, %d", got.Stats, len(got.Errors), want.Stats, len(want.Errors))
	}
}

func args(t *testing.T, a neural.Args) ([]byte, []float32) {
	t.Helper()
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	θ, err := neural.Init(b, 3)
	if err != nil {
		t.Fatal(err)
	}
	return b, θ
}

// The ensemble gradient of the neural ODE through JetStream by two workers
// equals ode.Ensemble.Gradient in one process bit for bit: all
// trajectories, and a minibatch with repeats and per-position dL/du0.
func TestGradientEqualsInProcess(t *testing.T) {
	c, _, _ := start(t, 2)
	b, θ := args(t, neural.Args{N: 24, Hidden: 8, ShardSize: 4, Seed: 5})
	for _, tc := range []struct {
		idx   []int
		perU0 bool
	}{
		{},
		{idx: []int{3, 17, 17, 0, 23, 9, 9, 9, 12, 4, 1}, perU0: true},
	} {
		got, rep, err := cluster.Gradient[float32](context.Background(), c, cluster.Request{Name: "node", Args: b, Theta: θ, Indices: tc.idx, PerTrajectoryU0: tc.perU0})
		if err != nil {
			t.Fatal(err)
		}
		sameGrad(t, got, inProcess(t, b, θ, tc.idx, tc.perU0))
		if rep.Completed != rep.Shards || rep.Workers != 2 {
			t.Errorf("report %+v: want every shard completed, by both workers", rep)
		}
	}
}

// A θ of more than 1 MiB (a 2 → 512 → 512 → 2 network, 265 218 values)
// whose gradient results (8 bytes a value on the wire, 2.1 MB a shard) exceed the
// server's max payload: they go through the object store, and the
// gradient over two workers equals the in-process one bit for bit; the
// object store is empty afterwards.
func TestLargeTheta(t *testing.T) {
	c, nc, ws := start(t, 2)
	b, θ := args(t, neural.Args{N: 4, Hidden: 512, Depth: 2, ShardSize: 2, Seed: 1})
	if 4*len(θ) <= 1<<20 || 8*len(θ) <= int(nc.MaxPayload()) {
		t.Fatalf("θ of %d values is not large enough for the test (max payload %d)", len(θ), nc.MaxPayload())
	}
	got, rep, err := cluster.Gradient[float32](context.Background(), c, cluster.Request{Name: "node", Args: b, Theta: θ})
	if err != nil {
		t.Fatal(err)
	}
	sameGrad(t, got, inProcess(t, b, θ, nil, false))
	if rep.Offloaded != 2 || rep.Completed != 2 || rep.Invalid != 0 || rep.ThetaBytes != 4*len(θ) {
		t.Errorf("report %+v: want 2 shards, both through the object store", rep)
	}
	for _, w := range ws {
		if st := w.Stats(); st.Loads > 1 || st.Offloaded != st.Shards {
			t.Errorf("worker %s: %+v: want θ loaded at most once, every result stored", w.ID(), st)
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(context.Background(), "OBJ_flatkit_params")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := s.Info(context.Background()); err != nil || info.State.Msgs != 0 {
		t.Errorf("object store: %v, %v; want nothing left", info.State, err)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{`{"n":-1}`, "n = -1"},
		{`{"n":1,"hidden":5000}`, "hidden = 5000"},
		{`{"n":1,"depth":17}`, "depth = 17"},
		{`{"n":1,"t1":-1}`, "t1 = -1"},
		{`{"n":1,"obs":5000}`, "obs = 5000"},
		{`{"n":1,"shard":-2}`, "shard = -2"},
		{`{`, "arguments"},
	} {
		if _, err := neural.Parse([]byte(tc.args)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s): %v, want an error with %q", tc.args, err, tc.want)
		}
	}
	a, err := neural.Parse([]byte(`{"n":3}`))
	if err != nil || a.Hidden != 16 || a.Depth != 2 || a.T1 != 1 || a.Obs != 8 {
		t.Errorf("defaults: %+v, %v", a, err)
	}
	// θ of the wrong length is refused by the builder.
	if _, err := neural.Build([]byte(`{"n":3}`), make([]float32, 7)); err == nil || !strings.Contains(err.Error(), "len(θ) = 7") {
		t.Errorf("Build with 7 values: %v", err)
	}
}
