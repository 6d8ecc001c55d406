package ad

import "testing"

// TestBackwardWritesMatMulIntoGradient checks that Backward computes the
// cotangents of a dense layer's weight (a View of θ) and of its input (a
// View of the Param x) straight into the gradient buffers: the MatMul nodes
// of the sweep hold those buffers as their data, so nothing is copied.
func TestBackwardWritesMatMulIntoGradient(t *testing.T) {
	const in, out = 8, 5
	θ := make([]float32, out*in+out)
	x := make([]float32, in)
	for i := range θ {
		θ[i] = float32(i%7) - 3
	}
	for i := range x {
		x[i] = float32(i) / 4
	}
	tp := NewTape()
	for range 2 {
		p, xp := tp.Param(θ), tp.Param(x)
		y := Add(MatMulT(View(xp, 0, 1, in), View(p, 0, out, in), false, true), View(p, out*in, out))
		loss := Sum(y)
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		gw, gx := tp.GradWrt(p)[:out*in], tp.GradWrt(xp)
		var sawW, sawX bool
		for i := loss.id + 1; int(i) < len(tp.nodes); i++ {
			nd := &tp.nodes[i]
			if nd.prim != matmulOp {
				continue
			}
			sawW = sawW || &nd.data[0] == &gw[0] && len(nd.data) == len(gw)
			sawX = sawX || &nd.data[0] == &gx[0] && len(nd.data) == len(gx)
		}
		if !sawW || !sawX {
			t.Errorf("weight cotangent computed in the gradient: %t; input cotangent: %t; want both", sawW, sawX)
		}
		for i := range out {
			for j := range in {
				if gw[i*in+j] != x[j] {
					t.Fatalf("dW[%d][%d] = %v, want %v", i, j, gw[i*in+j], x[j])
				}
			}
		}
		tp.Reset()
	}
}
