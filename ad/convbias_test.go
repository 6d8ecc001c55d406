package ad_test

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
)

// convBiasFuncs returns ConvBias (or ConvBiasRelu) and the same map
// composed of Conv, a broadcast Add and Relu, as functions of one flat
// vector holding x, w and b.
func convBiasFuncs(c convCase, relu bool) (fused, composed func(p ad.Var) ad.Var) {
	nx, nw := rsSize(c.xs), rsSize(c.ws)
	cout := c.ws[0]
	bs := []int{cout}
	for range c.xs[2:] {
		bs = append(bs, 1)
	}
	parts := func(p ad.Var) (x, w, b ad.Var) {
		return ad.View(p, 0, c.xs...), ad.View(p, nx, c.ws...), ad.View(p, nx+nw, cout)
	}
	fused = func(p ad.Var) ad.Var {
		x, w, b := parts(p)
		if relu {
			return ad.ConvBiasRelu(x, w, b, c.g)
		}
		return ad.ConvBias(x, w, b, c.g)
	}
	composed = func(p ad.Var) ad.Var {
		x, w, b := parts(p)
		y := ad.Add(ad.Conv(x, w, c.g), ad.Reshape(b, bs...))
		if relu {
			y = ad.Relu(y)
		}
		return y
	}
	return fused, composed
}

// TestConvBiasMatchesComposition checks ConvBias and ConvBiasRelu against
// Conv + Add (+ Relu) on random geometry with dyadic inputs, where every
// sum is exact in float32, so values, JVPs and VJPs must agree with ==
// (the ReLU masks are then the same too); and the HVP of Σ tanh(op)
// forward-over-reverse against the composition's reverse-over-reverse.
func TestConvBiasMatchesComposition(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := drawConv(rt)
		relu := rapid.Bool().Draw(rt, "relu")
		fused, composed := convBiasFuncs(c, relu)
		n := rsSize(c.xs) + rsSize(c.ws) + c.ws[0]
		θ := dyadicSmall(rt, n, "θ")
		want, got := rsEval(rt, composed, θ), rsEval(rt, fused, θ)
		if !slices.Equal(got.Data, want.Data) || !slices.Equal(got.Shape, want.Shape) {
			rt.Fatalf("value %v %v, composition %v %v", got.Shape, got.Data, want.Shape, want.Data)
		}
		v := dyadicSmall(rt, n, "v")
		jf, err1 := ad.JVP(fused, θ, v)
		jc, err2 := ad.JVP(composed, θ, v)
		if err1 != nil || err2 != nil || !slices.Equal(jf, jc) {
			rt.Fatalf("JVP %v (%v), composition %v (%v)", jf, err1, jc, err2)
		}
		u := dyadicSmall(rt, len(want.Data), "u")
		vf, err1 := ad.VJP(fused, θ, u)
		vc, err2 := ad.VJP(composed, θ, u)
		if err1 != nil || err2 != nil || !slices.Equal(vf, vc) {
			rt.Fatalf("VJP %v (%v), composition %v (%v)", vf, err1, vc, err2)
		}
		lf := func(p ad.Var) ad.Var { return ad.Sum(ad.Tanh(fused(p))) }
		lc := func(p ad.Var) ad.Var { return ad.Sum(ad.Tanh(composed(p))) }
		d := rsSmooth(rt, n, -1, 1, "direction")
		hf, err1 := ad.HVP(lf, θ, d)
		hc, err2 := ad.HVPReverse(lc, θ, d)
		if err1 != nil || err2 != nil {
			rt.Fatalf("HVP: %v, %v", err1, err2)
		}
		scale := 1.0
		for _, x := range hc {
			scale = max(scale, float64(abs32(x)))
		}
		for i := range hf {
			if e := float64(abs32(hf[i] - hc[i])); e > 1e-5*scale {
				rt.Fatalf("HVP[%d] = %v, composition's reverse-over-reverse %v", i, hf[i], hc[i])
			}
		}
	})
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// TestConvBiasDerivatives checks ConvBias's gradient against finite
// differences, the transpose identity of its JVP and VJP exactly, and the
// HVP of Σ tanh(ConvBias) forward-over-reverse against reverse-over-reverse
// and finite differences, on random geometry.
func TestConvBiasDerivatives(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := drawConv(rt)
		f, _ := convBiasFuncs(c, false)
		n := rsSize(c.xs) + rsSize(c.ws) + c.ws[0]
		rsCheckTranspose(rt, f, dyadicSmall(rt, n, "θ"), true)
		θ := rsSmooth(rt, n, -0.7, 0.7, "θ")
		rsCheckGrad(rt, f, θ, 3e-3)
		rsCheckHVP(rt, func(p ad.Var) ad.Var { return ad.Sum(ad.Tanh(f(p))) }, θ, 3e-3)
	})
}

// TestConvBiasShapeError checks that a bias of the wrong size is a tape
// error naming what was expected and what came.
func TestConvBiasShapeError(t *testing.T) {
	for _, op := range []func(x, w, b ad.Var, g ad.ConvGeom) ad.Var{ad.ConvBias, ad.ConvBiasRelu} {
		tp := ad.NewTape()
		op(tp.Full(0, 1, 3, 5, 5), tp.Full(0, 2, 3, 3, 3), tp.Full(0, 3), ad.ConvGeom{})
		err := tp.Err()
		if err == nil || !strings.Contains(err.Error(), "bias shape [3]: want [2]") || !strings.Contains(err.Error(), "ConvBias") {
			t.Errorf("error %v, want one naming bias shape [3] and want [2]", err)
		}
	}
}
