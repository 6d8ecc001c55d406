package stiffprob

import "testing"

// The cost of the right-hand sides and Jacobians the stiff bench calls:
// go test -bench . ./internal/stiffprob
func BenchmarkBruss1DF(b *testing.B) {
	p := NewBruss1D[float64](1000)
	u, du := p.U0(), make([]float64, p.Dim())
	for b.Loop() {
		p.F(du, u, nil, 0)
	}
}

func BenchmarkBruss1DJacBand(b *testing.B) {
	p := NewBruss1D[float64](1000)
	u, J := p.U0(), make([]float64, 5*p.Dim())
	for b.Loop() {
		p.JacBand(J, u, nil, 0)
	}
}

func BenchmarkBruss2DF(b *testing.B) {
	p := NewBruss2D[float64](64)
	u, du := p.U0(), make([]float64, p.Dim())
	for b.Loop() {
		p.F(du, u, nil, 2)
	}
}

func BenchmarkBruss2DJacSparse(b *testing.B) {
	p := NewBruss2D[float64](64)
	u, J := p.U0(), make([]float64, p.Pattern().NNZ())
	for b.Loop() {
		p.JacSparse(J, u, nil, 2)
	}
}

func BenchmarkMedakzoF(b *testing.B) {
	p := Medakzo[float64]{N: 200}
	u, du := p.U0(), make([]float64, p.Dim())
	for b.Loop() {
		p.F(du, u, []float32{2}, 0)
	}
}
