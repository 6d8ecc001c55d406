package ad_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// mlp is 3→4→1 tanh on a batch of 2, reading its parameters as views of p.
func mlp(x flat.Tensor) func(p ad.Var) ad.Var {
	return func(p ad.Var) ad.Var {
		t := p.Tape()
		w1 := ad.View(p, 0, 4, 3)
		b1 := ad.View(p, 12, 4)
		w2 := ad.View(p, 16, 1, 4)
		b2 := ad.View(p, 20, 1)
		h := ad.Tanh(ad.Add(ad.MatMulT(t.Const(x), w1, false, true), b1))
		y := ad.Add(ad.MatMulT(h, w2, false, true), b2)
		return ad.Sum(ad.Mul(y, y))
	}
}

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64()) * 0.7
	}
	return v
}

func eval(t *testing.T, f func(ad.Var) ad.Var, θ []float32) float64 {
	t.Helper()
	tp := ad.NewTape()
	y := f(tp.Param(θ))
	if tp.Err() != nil {
		t.Fatal(tp.Err())
	}
	return float64(y.Item())
}

func TestMLPGradientMatchesFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := flat.Tensor{Shape: []int{2, 3}, Data: randVec(rng, 6)}
	f := mlp(x)
	θ := randVec(rng, 21)
	v, g, err := ad.ValueAndGrad(f, θ)
	if err != nil {
		t.Fatal(err)
	}
	dir := randVec(rng, 21)
	h := float32(3e-3)
	plus, minus := flat.Clone(θ), flat.Clone(θ)
	flat.Axpy(h, dir, plus)
	flat.Axpy(-h, dir, minus)
	fd := (eval(t, f, plus) - eval(t, f, minus)) / (2 * float64(h))
	gd := float64(flat.Dot(g, dir))
	if math.Abs(fd-gd) > 1e-2*math.Max(1, math.Abs(fd)) {
		t.Errorf("value %v: ⟨g, dir⟩ = %v, finite difference %v", v, gd, fd)
	}
	jv, err := adJVP(f, θ, dir)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(jv[0])-gd) > 1e-4*math.Max(1, math.Abs(gd)) {
		t.Errorf("JVP %v, ⟨g, dir⟩ %v", jv[0], gd)
	}
	hv, err := ad_HVP(f, θ, dir)
	if err != nil {
		t.Fatal(err)
	}
	hv2, err := ad_HVPReverse(f, θ, dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range hv {
		if d := math.Abs(float64(hv[i] - hv2[i])); d > 1e-4*math.Max(1, math.Abs(float64(hv[i]))) {
			t.Errorf("HVP[%d]: forward-over-reverse %v, reverse-over-reverse %v", i, hv[i], hv2[i])
		}
	}
	// Finite differences of the gradient along dir.
	_, gp, _ := ad.ValueAndGrad(f, plus)
	_, gm, _ := ad.ValueAndGrad(f, minus)
	for i := range hv {
		fdh := (gp[i] - gm[i]) / (2 * h)
		if d := math.Abs(float64(fdh - hv[i])); d > 2e-2*math.Max(1, math.Abs(float64(hv[i]))) {
			t.Errorf("HVP[%d] = %v, finite difference of the gradient %v", i, hv[i], fdh)
		}
	}
}

var (
	adJVP         = ad.JVP
	ad_HVP        = ad.HVP
	ad_HVPReverse = ad.HVPReverse
)

func TestPerturbationConfusion(t *testing.T) {
	// d/dx [x · d/dy (x + y)] = 1 at any x (Siskind & Pearlmutter).
	f := func(x ad.Var) ad.Var {
		inner := ad.GradVar(func(y ad.Var) ad.Var { return ad.Sum(ad.Add(x, y)) }, x.Tape().Full(1, 1))
		return ad.Sum(ad.Mul(x, inner))
	}
	for _, x0 := range []float32{-2, 0.5, 3} {
		_, g, err := ad.ValueAndGrad(f, []float32{x0})
		if err != nil {
			t.Fatal(err)
		}
		if g[0] != 1 {
			t.Errorf("at x = %v: got %v, want 1", x0, g[0])
		}
	}
	// The closure form: ∇_z (z·x) at z = x is x, not 2x.
	h := func(x ad.Var) ad.Var {
		return ad.Sum(ad.GradVar(func(z ad.Var) ad.Var { return ad.Sum(ad.Mul(z, x)) }, x))
	}
	_, g, err := ad.ValueAndGrad(h, []float32{3})
	if err != nil {
		t.Fatal(err)
	}
	if g[0] != 1 {
		t.Errorf("d/dx ∇_z(z·x)|z=x = %v, want 1", g[0])
	}
}

func TestTrainingStepAllocatesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := flat.Tensor{Shape: []int{2, 3}, Data: randVec(rng, 6)}
	f := mlp(x)
	θ := randVec(rng, 21)
	pinGradAllocs(t, 1, 50, θ, f)
}

func TestTapeHVPAllocatesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := flat.Tensor{Shape: []int{2, 3}, Data: randVec(rng, 6)}
	f := mlp(x)
	θ := randVec(rng, 21)
	dir := randVec(rng, 21)
	want, err := ad.HVP(f, θ, dir)
	if err != nil {
		t.Fatal(err)
	}
	tp := ad.NewTape()
	var got []float32
	step := func() {
		p := tp.Param(θ)
		hv, err := tp.HVPOf(f(p), p, dir)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got[:0], hv...)
		tp.Reset()
	}
	step()
	if !slices.Equal(got, want) {
		t.Errorf("Tape.HVPOf = %v, ad.HVP = %v", got, want)
	}
	if a := testing.AllocsPerRun(20, step); a != 0 {
		t.Errorf("Tape.HVPOf allocates %v times per step, want 0", a)
	}
}
