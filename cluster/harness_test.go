package cluster_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flatkit/flatkit/cluster"
	"github.com/flatkit/flatkit/cluster/embedded"
	"github.com/flatkit/flatkit/cluster/lv"
	"github.com/flatkit/flatkit/ode"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

func TestMain(m *testing.M) {
	lv.Register()
	if url := os.Getenv(helperEnv); url != "" {
		os.Exit(helperWorker(url))
	}
	if url := os.Getenv(helperCoordEnv); url != "" {
		os.Exit(helperCoordinator(url))
	}
	os.Exit(m.Run())
}

// testConfig: short AckWait so that a lost worker's shard comes back fast.
var testConfig = cluster.Config{AckWait: 2 * time.Second, MaxDeliver: 5, LeaseTTL: time.Second}

func startServer(t testing.TB) *server.Server {
	t.Helper()
	s, err := embedded.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// goWorker runs a worker on its own connection in a goroutine until the
// test ends or stop is called.
func goWorker(t testing.TB, url string, cfg cluster.WorkerConfig, h *cluster.Hooks) (w *cluster.Worker, stop func()) {
	t.Helper()
	nc := connect(t, url)
	if cfg.Config == (cluster.Config{}) {
		cfg.Config = testConfig
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 1
	}
	if cfg.Logf == nil {
		cfg.Logf = t.Logf
	}
	w, err := cluster.NewWorker(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if h != nil {
		cluster.SetHooks(w, *h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := w.Run(ctx); err != nil {
			t.Errorf("worker %s: %v", w.ID(), err)
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	select {
	case <-w.Ready():
	case <-time.After(10 * time.Second):
		t.Fatalf("worker %s not ready after 10 s", w.ID())
	}
	return w, stop
}

func coordinator(t testing.TB, url string) *cluster.Coordinator {
	t.Helper()
	c, err := cluster.NewCoordinator(context.Background(), connect(t, url), testConfig)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func lvArgs(t testing.TB, a lv.Args) []byte {
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// inProcess builds the ensemble of a request as a worker does.
func inProcess[T ode.Float](t testing.TB, args []byte, theta []float32) *cluster.Spec[T] {
	t.Helper()
	s, err := lv.Build[T](args, slices.Clone(theta))
	if err != nil {
		t.Fatal(err)
	}
	if s.Method == nil {
		s.Method = ode.Tsit5()
	}
	if s.Sensitivity == nil {
		s.Sensitivity = ode.InterpolatingAdjoint{}
	}
	return s
}

// solveOpts is a Spec's options, then more, as options of Ensemble.Solve.
func solveOpts(spec []ode.Option, more ...ode.EnsembleSolveOption) []ode.EnsembleSolveOption {
	return append(ode.OptionsFor[ode.EnsembleSolveOption](spec), more...)
}

// gradOpts is a Spec's options, then more, as options of
// Ensemble.Gradient.
func gradOpts(spec []ode.Option, more ...ode.EnsembleGradientOption) []ode.EnsembleGradientOption {
	return append(ode.OptionsFor[ode.EnsembleGradientOption](spec), more...)
}

func sameBits[T ode.Float](a, b T) bool {
	return math.Float64bits(float64(a)) == math.Float64bits(float64(b)) || (math.IsNaN(float64(a)) && math.IsNaN(float64(b)))
}

func sameErrors(t testing.TB, what string, got, want []ode.TrajectoryError) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d failed trajectories, want %d", what, len(got), len(want))
	}
	for k := range got {
		if got[k].Index != want[k].Index || got[k].Error() != want[k].Error() {
			t.Errorf("%s: failure %d: %d %q, want %d %q", what, k, got[k].Index, got[k].Error(), want[k].Index, want[k].Error())
		}
	}
}

// sameSolve: identical outputs, sums, failures and counters, bit for bit.
func sameSolve[T ode.Float](t testing.TB, what string, got, want *ode.EnsembleResult[T]) {
	t.Helper()
	if len(got.U) != len(want.U) {
		t.Fatalf("%s: %d outputs, want %d", what, len(got.U), len(want.U))
	}
	bad := 0
	for i := range got.U {
		for j := range got.U[i] {
			if !sameBits(got.U[i][j], want.U[i][j]) && bad < 5 {
				bad++
				t.Errorf("%s: U[%d][%d] = %v, want %v", what, i, j, got.U[i][j], want.U[i][j])
			}
		}
	}
	if len(got.Acc) != len(want.Acc) {
		t.Errorf("%s: Acc %v, want %v", what, got.Acc, want.Acc)
	}
	for k := range got.Acc {
		if !sameBits(got.Acc[k], want.Acc[k]) {
			t.Errorf("%s: Acc[%d] = %v, want %v", what, k, got.Acc[k], want.Acc[k])
		}
	}
	sameErrors(t, what, got.Errors, want.Errors)
	if got.Stats != want.Stats {
		t.Errorf("%s: Stats %+v, want %+v", what, got.Stats, want.Stats)
	}
}

func sameGrad[T ode.Float](t testing.TB, what string, got, want *ode.EnsembleGradientResult[T]) {
	t.Helper()
	if !sameBits(got.Value, want.Value) || got.Count != want.Count {
		t.Errorf("%s: value %v count %d, want %v %d", what, got.Value, got.Count, want.Value, want.Count)
	}
	if len(got.P) != len(want.P) {
		t.Fatalf("%s: %d gradient values, want %d", what, len(got.P), len(want.P))
	}
	for k := range got.P {
		if !sameBits(got.P[k], want.P[k]) {
			t.Errorf("%s: P[%d] = %v, want %v", what, k, got.P[k], want.P[k])
		}
	}
	if len(got.U0) != len(want.U0) {
		t.Fatalf("%s: %d dL/du0, want %d", what, len(got.U0), len(want.U0))
	}
	for q := range got.U0 {
		for j := range got.U0[q] {
			if !sameBits(got.U0[q][j], want.U0[q][j]) {
				t.Errorf("%s: U0[%d][%d] = %v, want %v", what, q, j, got.U0[q][j], want.U0[q][j])
			}
		}
	}
	sameErrors(t, what, got.Errors, want.Errors)
	if got.Stats != want.Stats {
		t.Errorf("%s: Stats %+v, want %+v", what, got.Stats, want.Stats)
	}
}

func sameErr(t testing.TB, what string, got, want error) {
	t.Helper()
	if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
		t.Errorf("%s: error %v, want %v", what, got, want)
	}
}
