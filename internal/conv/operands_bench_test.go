package conv

import (
	"testing"

	"github.com/flatkit/flatkit/internal/cputime"
)

// loopMACs times f, a convolution of g, by cputime.Loop and reports its
// multiply-adds per second ("GMAC/s") beside.
func loopMACs(b *testing.B, g *Geom, f func()) {
	b.Helper()
	cputime.Loop(b, f)
	macs := float64(g.N*g.Cout*g.OutVol()) * float64(g.CinG()*g.KVol())
	b.ReportMetric(macs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
}

// benchOperands makes the input, filter and output of g for a benchmark:
// x[i] = i%7 − 3 and w[i] = i%5 − 2 (small integers, so no denormals),
// y zero until a forward pass writes it.
func benchOperands(g *Geom) (x, w, y []float32) {
	x = make([]float32, g.N*g.Cin*g.InVol())
	w = make([]float32, g.Cout*g.CinG()*g.KVol())
	y = make([]float32, g.N*g.Cout*g.OutVol())
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	for i := range w {
		w[i] = float32(i%5) - 2
	}
	return x, w, y
}
