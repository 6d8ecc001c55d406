package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/model"
)

// Scenario deepchain: scenario "b" of ../shared/peers/torch_bench.py, a
// SkipConnection around N residual blocks of two 3×3 convolutions, 4
// channels, padding 1, on one 1×4×2×2 input, then AdaptiveMeanPool(1, 1):
//
//	net = Chain(Skip(Chain(N × resblock), ad.Add), AdaptiveMeanPool(1, 1))
//	resblock = Skip(Chain(Conv 3×3 4→4 Pad(1), Conv 3×3 4→4 Pad(1)), ad.Add)
//
// The loss is the sum of the output and the figure is its gradient with
// respect to every parameter, for N = 5, 15, 30, 60, 120: in steady state
// (one reused tape, Reset between steps) and as the first call in a fresh
// process. The first call is what a user sees when a program starts: the
// bench re-executes its own binary in a hidden child mode (the environment
// variable deepChildEnv) that builds the net, times one forward + gradient
// on a new tape, prints the time and exits; the figure is the median over
// at least ten such processes, as the peer's cold_process figures (which
// exclude Python's start and torch's import, as ours exclude the Go
// runtime's start).

func init() {
	register(scenario{
		name:  "deepchain",
		about: "Skip(N resblocks of two 3x3 4->4 convs) + AdaptiveMeanPool on 1x4x2x2, sum loss, gradient: steady and first call in a fresh process; N = 5..120",
		run:   runDeepchain,
	})
	if v, ok := os.LookupEnv(deepChildEnv); ok {
		os.Exit(deepChild(v))
	}
}

// deepChildEnv selects the child mode: its value is N. The child is started
// by the bench with the same binary; nothing else should set it.
const deepChildEnv = "FLATKIT_DEEPCHAIN_CHILD"

// deepDepths are the N of the scenario, as the peer's.
var deepDepths = []int{5, 15, 30, 60, 120}

const deepChannels = 4

// deepInputShape is the input's shape (N, C, H, W).
var deepInputShape = []int{1, deepChannels, 2, 2}

// resBlock returns x + conv(conv(x)) with two 3×3 4→4 convolutions, padding 1.
func resBlock() model.Layer {
	return model.Skip(model.Chain(
		model.Conv([]int{3, 3}, deepChannels, deepChannels, model.Pad(1)),
		model.Conv([]int{3, 3}, deepChannels, deepChannels, model.Pad(1)),
	), ad.Add)
}

// deepNet returns Chain(Skip(Chain(n resblocks), ad.Add), AdaptiveMeanPool(1, 1)).
func deepNet(n int) model.Layer {
	blocks := make([]model.Layer, n)
	for i := range blocks {
		blocks[i] = resBlock()
	}
	return model.Chain(model.Skip(model.Chain(blocks...), ad.Add), model.AdaptiveMeanPool(1, 1))
}

// deepProblem is the net at one depth with its parameters and input.
type deepProblem struct {
	n   int
	net model.Layer
	θ   []float32
	x   flat.Tensor
}

// newDeepProblem builds the net of depth n with PyTorch's default
// initialisation and an N(0, 1) input, both drawn from a PCG seeded by seed.
func newDeepProblem(n int, seed uint64) (*deepProblem, error) {
	net := deepNet(n)
	rng := rand.New(rand.NewPCG(seed, 0xdee9))
	θ, err := model.Init(net, rng)
	if err != nil {
		return nil, err
	}
	x := flat.Tensor{Shape: deepInputShape, Data: make([]float32, 1*deepChannels*2*2)}
	normal(rng, x.Data)
	return &deepProblem{n: n, net: net, θ: θ, x: x}, nil
}

// loss is Σ net(x) as a function of the flat parameter Var.
func (pr *deepProblem) loss(p ad.Var) ad.Var {
	return ad.Sum(pr.net.Apply(nil, p, p.Tape().Const(pr.x)))
}

// gradient records the loss on tp and returns its gradient, owned by tp
// until its Reset. It is one training step's derivative work.
func (pr *deepProblem) gradient(tp *ad.Tape) ([]float32, error) {
	return tp.Grad(pr.loss(tp.Param(pr.θ)))
}

// forward records the loss on tp and returns its value.
func (pr *deepProblem) forward(tp *ad.Tape) (float32, error) {
	y := pr.loss(tp.Param(pr.θ))
	return y.Item(), tp.Err()
}

// deepChildResult is what a child process prints: the first and second
// forward + gradient in the process, in nanoseconds, and the heap
// allocations of the first.
type deepChildResult struct {
	N        int     `json:"n"`
	FirstNS  float64 `json:"first_ns"`
	SecondNS float64 `json:"second_ns"`
	BuildNS  float64 `json:"build_ns"`
	Allocs   uint64  `json:"allocs"`
	Faults   int64   `json:"faults"`        // minor page faults during the first call
	TouchUS  float64 `json:"page_touch_us"` // first touch of a fresh page (probe after the calls)
	Checksum float64 `json:"checksum"`
}

// deepChild is the child mode: build the net of depth arg, time its first
// forward + gradient (a new tape, as a program's first step would make),
// then a second one on the same tape, print a deepChildResult and return
// the exit code.
func deepChild(arg string) int {
	n, err := strconv.Atoi(arg)
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "flatkit: %s=%q: want a depth ≥ 1\n", deepChildEnv, arg)
		return 2
	}
	t0 := time.Now()
	pr, err := newDeepProblem(n, 1)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flatkit:", err)
		return 1
	}
	build := time.Since(t0)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	var g []float32
	f0 := minorFaults()
	start := time.Now()
	tp := ad.NewTape()
	g, err = pr.gradient(tp)
	first := time.Since(start)
	faults := minorFaults() - f0
	runtime.ReadMemStats(&m1)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flatkit:", err)
		return 1
	}
	var sum float64
	for _, v := range g {
		sum += float64(v)
	}
	start = time.Now()
	tp.Reset()
	_, err = pr.gradient(tp)
	second := time.Since(start)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flatkit:", err)
		return 1
	}
	out, _ := json.Marshal(deepChildResult{N: n, FirstNS: float64(first), SecondNS: float64(second),
		BuildNS: float64(build), Allocs: m1.Mallocs - m0.Mallocs, Faults: faults, TouchUS: pageTouchCost(), Checksum: sum})
	fmt.Println(string(out))
	return 0
}

// firstCalls runs reps child processes of depth n and returns their results.
func firstCalls(n, reps int) ([]deepChildResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("first call: cannot find the running binary to re-execute: %w", err)
	}
	env := append(os.Environ(), deepChildEnv+"="+strconv.Itoa(n))
	res := make([]deepChildResult, 0, reps)
	for range reps {
		cmd := exec.Command(exe)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("first call N=%d: child process: %v: %s", n, err, strings.TrimSpace(stderr.String()))
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		var r deepChildResult
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
			return nil, fmt.Errorf("first call N=%d: child printed %q: %v", n, stdout.String(), err)
		}
		res = append(res, r)
	}
	return res, nil
}

// sinkDeep keeps the compiler from discarding the work being timed.
var sinkDeep float32

func runDeepchain(b *bencher) error {
	reps := 11
	if b.opt.quick {
		reps = 3
	}
	var firstErr error
	check := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	steady := map[int]float64{}
	for _, n := range deepDepths {
		pr, err := newDeepProblem(n, 1)
		if err != nil {
			return err
		}
		tp := ad.NewTape()
		g, err := pr.gradient(tp)
		if err != nil {
			return err
		}
		var sum float64
		for _, v := range g {
			sum += float64(v)
		}
		tp.Reset()
		shape := fmt.Sprintf("%d params, %d convs, %d tape values per step", len(pr.θ), 2*n, tp.Len())

		sf := b.measure(func() {
			l, err := pr.forward(tp)
			check(err)
			sinkDeep += l
			tp.Reset()
		})
		emitUS(b, fmt.Sprintf("N=%d forward steady", n), sf, nil, "record the forward pass and the loss on a reused tape, Reset; "+shape)

		sg := b.measure(func() {
			g, err := pr.gradient(tp)
			check(err)
			sinkDeep += g[0]
			tp.Reset()
		})
		emitUS(b, fmt.Sprintf("N=%d gradient steady", n), sg, &sum, "forward + tape.Grad on a reused tape, Reset; "+shape)
		steady[n] = sg.median

		fc, err := firstCalls(n, reps)
		if err != nil {
			return err
		}
		ts := make([]float64, len(fc))
		al := make([]float64, len(fc))
		pf := make([]float64, len(fc))
		touch := make([]float64, len(fc))
		for i, r := range fc {
			ts[i] = r.FirstNS / 1e3
			al[i] = float64(r.Allocs)
			pf[i] = float64(r.Faults)
			touch[i] = r.TouchUS
			if r.Checksum != sum {
				return fmt.Errorf("N=%d: the child's gradient sums to %v, want %v (the steady state's sum)", n, r.Checksum, sum)
			}
		}
		slices.Sort(ts)
		slices.Sort(al)
		slices.Sort(pf)
		slices.Sort(touch)
		med := median(ts)
		b.emit(result{Case: fmt.Sprintf("N=%d gradient first call (fresh process)", n), Median: med, Min: ts[0], Max: ts[len(ts)-1],
			Unit: "us", Allocs: median(al), Samples: len(ts),
			Note: "median over fresh processes (the binary re-executed): build the net, then time NewTape + forward + Grad; allocs are the first call's"})
		b.emit(result{Case: fmt.Sprintf("N=%d first call / steady", n), Median: med / (sg.median / 1e3),
			Min: ts[0] / (sg.median / 1e3), Max: ts[len(ts)-1] / (sg.median / 1e3), Unit: "x", Allocs: median(al),
			Note: "first-call median ÷ steady-state median (goal ≤ 3)"})
		b.emit(result{Case: fmt.Sprintf("N=%d first call: minor page faults", n), Median: median(pf), Min: pf[0], Max: pf[len(pf)-1],
			Unit: "faults", Samples: len(pf),
			Note: fmt.Sprintf("fresh memory touched by the first call (getrusage); the child's probe puts a first touch of a fresh page at %.1f µs (median; min %.1f, max %.1f)",
				median(touch), touch[0], touch[len(touch)-1])})
	}
	lo, hi := deepDepths[0], deepDepths[len(deepDepths)-1]
	if steady[lo] > 0 {
		slope := (steady[hi] - steady[lo]) / float64(hi-lo)
		b.emit(result{Case: fmt.Sprintf("steady cost per block (slope N=%d..%d)", lo, hi), Median: slope / 1e3, Min: slope / 1e3, Max: slope / 1e3, Unit: "us",
			Note: "(t(N=120) − t(N=5)) / 115 from the steady medians"})
		lin := (steady[hi] / float64(hi)) / (steady[lo] / float64(lo))
		b.emit(result{Case: fmt.Sprintf("linearity t(%d)/%d ÷ t(%d)/%d", hi, hi, lo, lo), Median: lin, Min: lin, Max: lin, Unit: "x",
			Note: "per-block cost at the largest N over that at the smallest; 1 is linear, < 1 means a fixed cost amortised"})
	}
	if firstErr != nil {
		return firstErr
	}
	return nil
}
