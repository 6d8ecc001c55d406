package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/flatkit/flatkit/layout"
)

const n = 256

// Dense is y = Weight·x + Bias, Weight stored (out, in) row-major like
// PyTorch's nn.Linear.
type Dense struct {
	Weight []float32 `flat:"shape=256,256"`
	Bias   []float32 `flat:"shape=256"`
}

// Forward writes y = d.Weight·x + d.Bias, reading the parameters through the
// struct's fields, wherever they currently point.
func (d *Dense) Forward(y, x []float32) {
	copy(y, d.Bias)
	blas32.Gemv(blas.NoTrans, 1,
		blas32.General{Rows: n, Cols: n, Stride: n, Data: d.Weight},
		blas32.Vector{N: n, Inc: 1, Data: x}, 1,
		blas32.Vector{N: n, Inc: 1, Data: y})
}

// uniform fills x from U(-bound, bound): PyTorch's default init for Linear
// uses bound = 1/sqrt(fan_in) for the weight and the bias.
func uniform(rng *rand.Rand, x []float32, bound float32) {
	for i := range x {
		x[i] = (2*rng.Float32() - 1) * bound
	}
}

// Result is what one run measured.
type Result struct {
	Params        int
	Steps         int
	RestructureNS float64   // per step, Restructure alone
	StepNS        float64   // per step, Restructure + forward
	MallocsAlone  uint64    // over the Restructure-only loop
	MallocsStep   uint64    // over the Restructure + forward loop
	Output        []float32 // the final output of the forward loop
	Checksum      float64   // sum of Output
}

// setup builds the model with a fixed seed and destructures it. It returns
// the model (its fields view θs[0]), the two parameter vectors, their layout
// and the first input.
func setup() (*Dense, [2][]float32, *layout.Layout, []float32, error) {
	rng := rand.New(rand.NewPCG(2024, 1))
	m := Dense{Weight: make([]float32, n*n), Bias: make([]float32, n)}
	uniform(rng, m.Weight, 1.0/16)
	uniform(rng, m.Bias, 1.0/16)

	// One copy into one buffer; m.Weight and m.Bias now view θa.
	θa, lay, err := layout.Destructure(&m)
	if err != nil {
		return nil, [2][]float32{}, nil, nil, err
	}
	// A second parameter vector with the same layout, e.g. an optimiser's
	// proposal or another member of an ensemble.
	θb := make([]float32, lay.Len())
	uniform(rng, θb, 1.0/16)
	θs := [2][]float32{θa, θb}

	x0 := make([]float32, n)
	for i := range x0 {
		x0[i] = float32(rng.NormFloat64())
	}
	return &m, θs, lay, x0, nil
}

// run builds the model, destructures it, and runs the two loops of steps
// each, writing a report to w.
func run(w io.Writer, steps int) (Result, error) {
	m, θs, lay, x0, err := setup()
	if err != nil {
		return Result{}, err
	}
	res := Result{Params: lay.Len(), Steps: steps}

	// Warm up: the first Restructure of a type builds and caches its plan.
	for s := range 2 {
		if err := layout.Restructure(θs[s], lay, m); err != nil {
			return Result{}, err
		}
	}

	var m0, m1 runtime.MemStats
	// Loop 1: Restructure alone, alternating θa and θb.
	runtime.ReadMemStats(&m0)
	start := time.Now()
	for s := range steps {
		if err := layout.Restructure(θs[s&1], lay, m); err != nil {
			return Result{}, err
		}
	}
	el := time.Since(start)
	runtime.ReadMemStats(&m1)
	res.RestructureNS = float64(el.Nanoseconds()) / float64(steps)
	res.MallocsAlone = m1.Mallocs - m0.Mallocs

	// Loop 2: x ← f(θ)(x): restructure onto θa or θb, then the forward pass,
	// feeding each output back in as the next input.
	in, out := make([]float32, n), make([]float32, n)
	copy(in, x0)
	runtime.ReadMemStats(&m0)
	start = time.Now()
	for s := range steps {
		if err := layout.Restructure(θs[s&1], lay, m); err != nil {
			return Result{}, err
		}
		m.Forward(out, in)
		in, out = out, in
	}
	el = time.Since(start)
	runtime.ReadMemStats(&m1)
	res.StepNS = float64(el.Nanoseconds()) / float64(steps)
	res.MallocsStep = m1.Mallocs - m0.Mallocs
	res.Output = in
	for _, v := range in {
		res.Checksum += float64(v)
	}

	fmt.Fprintf(w, "dense %d→%d, %d parameters in one []float32, %d leaves: %v\n", n, n, res.Params, lay.NumLeaves(), leafPaths(lay))
	fmt.Fprintf(w, "%d steps, alternating two parameter vectors\n", steps)
	fmt.Fprintf(w, "  Restructure alone:        %8.1f ns/step   %d allocations in the loop\n", res.RestructureNS, res.MallocsAlone)
	fmt.Fprintf(w, "  Restructure + forward:    %8.1f ns/step   %d allocations in the loop\n", res.StepNS, res.MallocsStep)
	fmt.Fprintf(w, "  Restructure share:        %8.2f %%\n", 100*res.RestructureNS/res.StepNS)
	fmt.Fprintf(w, "checksum of the final output (sum of %d floats): %.6f\n", n, res.Checksum)
	return res, nil
}

func leafPaths(lay *layout.Layout) []string {
	var ps []string
	for _, lf := range lay.Leaves() {
		ps = append(ps, fmt.Sprintf("%s%v", lf.Path, lf.Shape))
	}
	return ps
}

func main() {
	if _, err := run(os.Stdout, 100_000); err != nil {
		fmt.Fprintln(os.Stderr, "restructure:", err)
		os.Exit(1)
	}
}
