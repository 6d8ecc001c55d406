package model

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/layout"
)

// embedMaxRank is the highest rank of an Embedding's input: the output has
// one axis more, and ad's ops take up to 8.
const embedMaxRank = 7

// EmbeddingLayer looks up rows of a table; see Embedding.
type EmbeddingLayer struct {
	n, dim int // the number of rows (the vocabulary size) and their length
	opt    options
	err    error
}

// Embedding returns PyTorch's Embedding: a learnable table "weight" of
// shape (n, dim) whose rows are looked up by index. The input holds class
// indices as float32 values, integers in [0, n), of any shape up to rank
// 7. It is usually a constant from Tape.Const. The output has the input's
// shape plus a last axis of dim. The input is not differentiated: its
// derivative is zero. The gradient of the table adds up over repeated
// indices. The option WeightInit replaces the default, PyTorch's normal
// distribution of mean 0 and standard deviation 1. An initialiser sees
// fan-in dim and fan-out n.
func Embedding(n, dim int, opts ...EmbeddingOption) *EmbeddingLayer {
	l := &EmbeddingLayer{n: n, dim: dim, opt: collect(opts)}
	l.err = l.validate()
	return l
}

func (l *EmbeddingLayer) validate() error {
	if l.n <= 0 || l.dim <= 0 {
		return fmt.Errorf("Embedding: n %d, dim %d; want both > 0", l.n, l.dim)
	}
	return nil
}

// Declare declares "weight" (n, dim).
func (l *EmbeddingLayer) Declare(b *layout.Builder) error {
	if l.err != nil {
		return l.err
	}
	b.Add("weight", l.n, l.dim)
	return nil
}

// Init draws the table, N(0, 1) unless WeightInit says otherwise.
func (l *EmbeddingLayer) Init(θ []float32, rng *rand.Rand) {
	wi := l.opt.weightInit
	if wi == nil {
		wi = Normal(0, 1)
	}
	wi(rng, θ[:l.n*l.dim], l.dim, l.n)
}

// Apply returns the rows of the table at the indices in x. The output has
// x's shape plus a last axis of dim.
func (l *EmbeddingLayer) Apply(_ *Ctx, p, x ad.Var) ad.Var {
	if !canApply(l.err, "Embedding", p, x, l.n*l.dim) {
		return fail(x, nil)
	}
	s := x.Shape()
	if s == nil {
		return fail(x, nil)
	}
	if len(s) > embedMaxRank {
		return fail(x, errorf("Embedding(%d, %d): input shape %v has rank %d, want at most %d", l.n, l.dim, s, len(s), embedMaxRank))
	}
	vals := x.Data()
	k, dim := len(vals), l.dim
	buf := intScratch.Get(k * dim)
	defer intScratch.Put(buf)
	idx := *buf
	for i, v := range vals {
		j := int(v)
		if float32(j) != v || j < 0 || j >= l.n || math.IsInf(float64(v), 0) {
			return fail(x, errorf("Embedding(%d, %d): input %s = %v, want an integer index 0 ≤ i < %d", l.n, l.dim, position(i, s), v, l.n))
		}
		row := idx[i*dim : (i+1)*dim]
		for c := range row {
			row[c] = j*dim + c
		}
	}
	var shape [embedMaxRank + 1]int
	copy(shape[:], s)
	shape[len(s)] = dim
	return ad.Gather(ad.View(p, 0, l.n, dim), idx, shape[:len(s)+1]...)
}

// position formats flat position i of a tensor of shape s, in row-major
// order, as "x[a b c] (flat position i)", or "x[] …" for a scalar.
func position(i int, s []int) string {
	at, rest := make([]int, len(s)), i
	for d := len(s) - 1; d >= 0; d-- {
		if s[d] > 0 {
			at[d] = rest % s[d]
			rest /= s[d]
		}
	}
	return fmt.Sprintf("x%v (flat position %d)", at, i)
}
