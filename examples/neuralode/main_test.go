package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/internal/bitwise"
	"github.com/flatkit/flatkit/internal/stfile"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/model"
)

// quick is a configuration of a few Adam steps and L-BFGS iterations, no
// plots, in dir.
func quick(dir string, steps, lbfgs, workers int) config {
	cfg := defaults()
	cfg.steps, cfg.lbfgs, cfg.workers, cfg.out, cfg.plots = steps, lbfgs, workers, dir, false
	return cfg
}

// TestFit runs a shorter fit than the default (500 Adam steps, 150 L-BFGS
// iterations: about 15 s on 2 cores) and checks the fit criteria: held-out
// RMS error below 2σ against the true paths, the learned interaction terms
// within 10 % RMS of the true ones; and the files it writes.
func TestFit(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a fit of 15 s (minutes under -race); the other tests cover determinism and resume")
	}
	dir := t.TempDir()
	cfg := defaults()
	cfg.steps, cfg.lbfgs, cfg.out = 500, 150, dir
	var out bytes.Buffer
	s, err := run(context.Background(), &out, cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("held-out RMS %.4f, interaction %.4f, training RMS %.4f in %v", s.HeldOutRMS, s.Interaction, s.TrainRMS, s.Elapsed)
	if !(s.HeldOutRMS < 2*sigma) {
		t.Errorf("held-out RMS error %.4f, want < 2σ = %g:\n%s", s.HeldOutRMS, 2*sigma, out.String())
	}
	if !(s.Interaction < 0.1) {
		t.Errorf("interaction terms' relative RMS error %.4f, want < 0.1:\n%s", s.Interaction, out.String())
	}
	if !(s.TrainRMS > 0.8*sigma && s.TrainRMS < 2*sigma) {
		t.Errorf("RMS residual on the training data %.4f, want about σ = %g", s.TrainRMS, sigma)
	}
	for _, name := range []string{"fit.png", "loss.png"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("no PNG %s: %v", name, err)
		}
	}
	// The fitted model reloads by name into the network's layout.
	lay, err := model.Layout(network())
	if err != nil {
		t.Fatal(err)
	}
	θ := make([]float32, lay.Len())
	stfile.LoadInto(t, filepath.Join(dir, modelName), lay, θ, layout.Strict())
	if !bitwise.Equal(θ, s.Theta) {
		t.Error("model.safetensors does not hold the fitted θ")
	}
	for _, want := range []string{"354 parameters", "Adam      50/500", "Adam     500/500", "checkpoint", "L-BFGS", "held-out RMS error", "relative RMS error", ": ok", "plots:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "\r") {
		t.Error("the progress bar redraws in place although the output is not a terminal")
	}
}

// TestWorkers: the same θ, bit for bit, on 1 and 2 workers, after Adam
// steps (windows of every length) and L-BFGS iterations.
func TestWorkers(t *testing.T) {
	var res [2]*Summary
	for k, w := range []int{1, 2} {
		s, err := run(context.Background(), &bytes.Buffer{}, quick(t.TempDir(), 24, 4, w))
		if err != nil {
			t.Fatal(err)
		}
		res[k] = s
	}
	if !bitwise.Equal(res[0].AdamTheta, res[1].AdamTheta) {
		t.Error("θ after the Adam steps differs between 1 and 2 workers")
	}
	if !bitwise.Equal(res[0].Theta, res[1].Theta) {
		t.Error("θ after L-BFGS differs between 1 and 2 workers")
	}
	if bitwise.Equal(res[0].AdamTheta, res[0].Theta) {
		t.Error("L-BFGS did not move θ")
	}
	for i := range res[0].AdamLoss {
		if res[0].AdamLoss[i] != res[1].AdamLoss[i] {
			t.Fatalf("step %d: loss %v on 1 worker, %v on 2", i+1, res[0].AdamLoss[i], res[1].AdamLoss[i])
		}
	}
}

// TestResume: a run stopped after k Adam steps and resumed ends with the
// same θ, bit for bit, as the run of 2k steps that was never stopped: at
// the end of Adam and after L-BFGS (which restarts from the checkpointed
// θ), with another number of workers for the resumed half.
func TestResume(t *testing.T) {
	const k = 12
	straight, err := run(context.Background(), &bytes.Buffer{}, quick(t.TempDir(), 2*k, 3, 2))
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	cfg := quick(dir, 2*k, 3, 2)
	cfg.stop = k
	var out bytes.Buffer
	first, err := run(context.Background(), &out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if first.AdamSteps != k || !strings.Contains(out.String(), "stopped after Adam step 12") {
		t.Fatalf("stopped run: %d steps:\n%s", first.AdamSteps, out.String())
	}
	// The checkpoint is an ordinary safetensors file: θ, the optimiser, the step by name.
	data, clay, err := layout.LoadFile(filepath.Join(dir, ckptName))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"theta.0.weight", "theta.4.bias", "adam.slot0.0.weight", "adam.slot1.4.bias", "adam.optimiser", "step", "run", "loss"} {
		if _, ok := clay.Find(name); !ok {
			t.Errorf("the checkpoint has no tensor %q", name)
		}
	}
	if v := clay.MustView(data, "step").Data[0]; v != k {
		t.Errorf("step %v in the checkpoint, want %d", v, k)
	}
	lo, hi, _ := clay.Range("theta")
	if !bitwise.Equal(data[lo:hi], first.AdamTheta) {
		t.Error("the checkpoint's θ is not the stopped run's")
	}

	cfg.stop, cfg.resume, cfg.workers = 0, true, 1
	out.Reset()
	resumed, err := run(context.Background(), &out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.StartStep != k || !strings.Contains(out.String(), "resumed from") {
		t.Errorf("resumed at step %d:\n%s", resumed.StartStep, out.String())
	}
	if !bitwise.Equal(resumed.AdamTheta, straight.AdamTheta) {
		t.Error("θ after Adam: the resumed run differs from the straight run")
	}
	if !bitwise.Equal(resumed.Theta, straight.Theta) {
		t.Error("θ after L-BFGS: the resumed run differs from the straight run")
	}
	if len(resumed.AdamLoss) != 2*k {
		t.Fatalf("%d losses, want %d", len(resumed.AdamLoss), 2*k)
	}
	for i, v := range resumed.AdamLoss {
		w := straight.AdamLoss[i]
		if i < k && float32(v) != float32(w) || i >= k && v != w {
			t.Errorf("loss of step %d: %v resumed, %v straight", i+1, v, w)
		}
	}

	// Resuming a finished Adam phase reruns L-BFGS only, from the checkpoint's θ.
	out.Reset()
	again, err := run(context.Background(), &out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Adam: ") || !bitwise.Equal(again.Theta, straight.Theta) {
		t.Errorf("resuming after the last Adam step: θ equal %v:\n%s", bitwise.Equal(again.Theta, straight.Theta), out.String())
	}

	// Other flags than the checkpoint's are an error naming the flag.
	bad := cfg
	bad.lr = 0.01
	if _, err := run(context.Background(), &bytes.Buffer{}, bad); err == nil || !strings.Contains(err.Error(), "-lr") {
		t.Errorf("resume with another -lr: %v", err)
	}
	bad = cfg
	bad.out = t.TempDir()
	if _, err := run(context.Background(), &bytes.Buffer{}, bad); err == nil || !strings.Contains(err.Error(), "resume") {
		t.Errorf("resume without a checkpoint: %v", err)
	}
}

// TestInterrupt: a cancelled context during Adam writes the checkpoint of
// the last step made.
func TestInterrupt(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := quick(dir, 50, 0, 2)
	w := &cancelAfter{cancel: cancel, lines: 3}
	_, err := run(ctx, w, cfg)
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("got %v, want an interruption", err)
	}
	data, clay, err := layout.LoadFile(filepath.Join(dir, ckptName))
	if err != nil {
		t.Fatal(err)
	}
	if v := clay.MustView(data, "step").Data[0]; v < 1 || v >= 50 {
		t.Errorf("checkpoint at step %v", v)
	}
}

// cancelAfter cancels a context at the given count of Adam progress lines.
type cancelAfter struct {
	bytes.Buffer
	cancel func()
	lines  int
}

func (c *cancelAfter) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, []byte("Adam ")) {
		if c.lines--; c.lines == 0 {
			c.cancel()
		}
	}
	return c.Buffer.Write(p)
}

// TestProgress: without a terminal, a line per tenth of the phase and the
// last step, even when the phase ends early.
func TestProgress(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, "L-BFGS", 0, 100)
	for i := 1; i <= 57; i++ {
		p.update(i, 1/float64(i))
	}
	p.done()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 6 || !strings.Contains(lines[5], "57/100") || !strings.Contains(lines[0], "10/100") {
		t.Errorf("got %d lines:\n%s", len(lines), b.String())
	}
}

func TestBadFlags(t *testing.T) {
	for _, cfg := range []config{quick(t.TempDir(), -1, 0, 1), quick(t.TempDir(), 1, 0, 0)} {
		if _, err := run(context.Background(), &bytes.Buffer{}, cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	cfg := quick(t.TempDir(), 1, 0, 1)
	cfg.batch = nTrain + 1
	if _, err := run(context.Background(), &bytes.Buffer{}, cfg); err == nil {
		t.Error("batch > trajectories: no error")
	}
}
