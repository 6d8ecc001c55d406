package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/optimisers"
)

const (
	side    = 12 // image side
	classes = 4
	testN   = 512
)

type config struct {
	steps, batch int
	lr           float64
	seed         uint64
	ckpt         string
}

// Summary is what a run measured.
type Summary struct {
	Loss      float32 // training loss of the last step
	Accuracy  float64 // on the held-out images
	Reloaded  bool    // the checkpoint reloaded by name predicts the same classes
	StepAlloc float64 // heap allocations per training step, steps 101-140
}

// draw fills img (side×side) with a line of class c at a random place plus
// Gaussian noise.
func draw(rng *rand.Rand, img []float32, c int) {
	for i := range img {
		img[i] = 0.3 * float32(rng.NormFloat64())
	}
	n := 5 + rng.IntN(side-5) // length
	r0, c0 := rng.IntN(side-n+1), rng.IntN(side-n+1)
	k := rng.IntN(side)
	for i := 0; i < n; i++ {
		var r, col int
		switch c {
		case 0: // horizontal
			r, col = k, c0+i
		case 1: // vertical
			r, col = r0+i, k
		case 2: // diagonal
			r, col = r0+i, c0+i
		default: // anti-diagonal
			r, col = r0+i, c0+n-1-i
		}
		img[r*side+col] += 1
	}
}

// batchOf draws n labelled images into x (n×1×side×side) and labels.
func batchOf(rng *rand.Rand, x []float32, labels []int) {
	for i := range labels {
		labels[i] = rng.IntN(classes)
		draw(rng, x[i*side*side:(i+1)*side*side], labels[i])
	}
}

func network() model.Layer {
	return model.Chain(
		model.Conv([]int{3, 3}, 1, 8, model.Pad(1)),
		model.Relu(),
		model.MaxPool([]int{2, 2}),
		model.Conv([]int{3, 3}, 8, 16, model.Pad(1)),
		model.Relu(),
		model.GlobalMeanPool(),
		model.Flatten(),
		model.Dense(16, classes),
	)
}

// predict returns the predicted class of every image in x.
func predict(net model.Layer, θ []float32, x []float32, n int) []int {
	tape := ad.NewTape()
	logits := net.Apply(nil, tape.Param(θ), tape.Const(flat.Tensor{Shape: []int{n, 1, side, side}, Data: x})).Data()
	out := make([]int, n)
	for i := range out {
		row := logits[i*classes : (i+1)*classes]
		for c, v := range row {
			if v > row[out[i]] {
				out[i] = c
			}
		}
	}
	return out
}

func run(w io.Writer, cfg config) (Summary, error) {
	var s Summary
	net := network()
	lay, err := model.Layout(net)
	if err != nil {
		return s, err
	}
	θ, err := model.Init(net, rand.New(rand.NewPCG(cfg.seed, 1)))
	if err != nil {
		return s, err
	}
	opt, err := optimisers.Setup(optimisers.Chain(optimisers.ClipGlobalNorm(1), optimisers.AdamW(cfg.lr, 1e-4)), lay)
	if err != nil {
		return s, err
	}
	fmt.Fprintf(w, "%d parameters: %v\n", lay.Len(), lay)

	data := rand.New(rand.NewPCG(cfg.seed, 2))
	testX, testY := make([]float32, testN*side*side), make([]int, testN)
	batchOf(data, testX, testY)
	x, labels := make([]float32, cfg.batch*side*side), make([]int, cfg.batch)
	accuracy := func(θ []float32) float64 {
		ok := 0
		for i, c := range predict(net, θ, testX, testN) {
			if c == testY[i] {
				ok++
			}
		}
		return float64(ok) / testN
	}

	tape := ad.NewTape()
	xShape := []int{cfg.batch, 1, side, side} // made once: a literal in the loop would allocate
	var ms runtime.MemStats
	var mallocs uint64
	const warm, window = 101, 40 // steps warm..warm+window-1, between evaluations, count allocations
	var train time.Duration      // training steps only, not evaluation
	for step := 1; step <= cfg.steps; step++ {
		t0 := time.Now()
		if step == warm || step == warm+window {
			runtime.ReadMemStats(&ms)
			if step == warm {
				mallocs = ms.Mallocs
			} else {
				s.StepAlloc = float64(ms.Mallocs-mallocs) / window
			}
		}
		batchOf(data, x, labels)
		p := tape.Param(θ)
		xv := tape.Const(flat.Tensor{Shape: xShape, Data: x})
		loss := model.LogitCrossEntropy(net.Apply(nil, p, xv), labels)
		g, err := tape.Grad(loss)
		if err != nil {
			return s, fmt.Errorf("step %d: %w", step, err)
		}
		s.Loss = loss.Item()
		if err := opt.Update(θ, g); err != nil {
			return s, fmt.Errorf("step %d: %w", step, err)
		}
		tape.Reset()
		train += time.Since(t0)
		if step%100 == 0 || step == cfg.steps {
			fmt.Fprintf(w, "step %4d  loss %.4f  held-out accuracy %.3f  (%.2f ms/step)\n",
				step, s.Loss, accuracy(θ), float64(train.Microseconds())/1e3/float64(step))
		}
	}
	if cfg.steps >= warm+window {
		// Go's runtime grows its per-site type-assertion caches on about one
		// call in a thousand until they hold every type seen: a rare
		// allocation for the first few hundred steps, then none.
		fmt.Fprintf(w, "heap allocations per training step (steps %d-%d): %g\n", warm, warm+window-1, s.StepAlloc)
	}
	s.Accuracy = accuracy(θ)

	if err := layout.SaveFile(cfg.ckpt, lay, θ); err != nil {
		return s, err
	}
	f, err := os.Open(cfg.ckpt)
	if err != nil {
		return s, err
	}
	defer f.Close()
	θ2 := make([]float32, lay.Len())
	if _, err := layout.LoadInto(f, lay, θ2); err != nil {
		return s, err
	}
	a, b := predict(net, θ, testX, testN), predict(net, θ2, testX, testN)
	s.Reloaded = true
	for i := range a {
		s.Reloaded = s.Reloaded && a[i] == b[i]
	}
	fmt.Fprintf(w, "held-out accuracy %.3f (chance 0.25); checkpoint %s reloaded by name: same predictions %v\n",
		s.Accuracy, cfg.ckpt, s.Reloaded)
	return s, nil
}

func main() {
	cfg := config{}
	flag.IntVar(&cfg.steps, "steps", 400, "training steps")
	flag.IntVar(&cfg.batch, "batch", 32, "images per step")
	flag.Float64Var(&cfg.lr, "lr", 0.01, "AdamW learning rate")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the initialisation and of the images")
	flag.StringVar(&cfg.ckpt, "ckpt", filepath.Join(os.TempDir(), "flatkit-cnn.safetensors"), "checkpoint path")
	flag.Parse()
	if _, err := run(os.Stdout, cfg); err != nil {
		log.Fatal(err)
	}
}
