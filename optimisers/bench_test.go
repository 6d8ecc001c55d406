package optimisers_test

import (
	"testing"

	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
)

const benchN = 1_000_000

func benchUpdate(b *testing.B, rule optimisers.Rule) {
	lay, err := layout.NewBuilder().Add("w", benchN).Build()
	if err != nil {
		b.Fatal(err)
	}
	opt, err := optimisers.Setup(rule, lay)
	if err != nil {
		b.Fatal(err)
	}
	θ, g := ramp(benchN, 0.5, 1), ramp(benchN, 0.1, 1)
	b.SetBytes(7 * 4 * benchN) // Adam reads θ, g, m, v and writes θ, m, v
	b.ReportAllocs()
	for b.Loop() {
		if err := opt.Update(θ, g); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdam is one fused pass over 1 000 000 parameters.
func BenchmarkAdam(b *testing.B) { benchUpdate(b, optimisers.Adam(1e-3)) }

// BenchmarkAdamChain is Chain(ClipGlobalNorm, WeightDecay, Adam): a norm pass,
// then per leaf a copy of g, two modifier loops and Adam's fused loop.
func BenchmarkAdamChain(b *testing.B) {
	benchUpdate(b, optimisers.Chain(optimisers.ClipGlobalNorm(1), optimisers.WeightDecay(1e-4), optimisers.Adam(1e-3)))
}

// BenchmarkCopy7 moves as many bytes as Adam: three 4 MB vectors copied
// (read and written, like θ, m and v) and a fourth read (like g).
func BenchmarkCopy7(b *testing.B) {
	src := [4][]float32{ramp(benchN, 1, 1), ramp(benchN, 1, 1), ramp(benchN, 1, 1), ramp(benchN, 1, 1)}
	dst := [3][]float32{make([]float32, benchN), make([]float32, benchN), make([]float32, benchN)}
	b.SetBytes(7 * 4 * benchN)
	var sink float32
	for b.Loop() {
		copy(dst[0], src[0])
		copy(dst[1], src[1])
		copy(dst[2], src[2])
		var s0, s1, s2, s3 float32
		x := src[3]
		for i := 0; i+4 <= len(x); i += 4 {
			s0 += x[i]
			s1 += x[i+1]
			s2 += x[i+2]
			s3 += x[i+3]
		}
		sink += s0 + s1 + s2 + s3
	}
	_ = sink
}
