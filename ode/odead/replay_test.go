package odead_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/bitwise"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/ode"
	"github.com/flatkit/flatkit/ode/odead"
)

// replayNets are networks (1, 3) → (1, 3) over the layer families; the
// last two hold ops that ad refuses to replay (Max, MaxPool), which must
// fall back to recording anew.
func replayNets() []struct {
	name       string
	net        model.Layer
	replayable bool
} {
	cube := model.Func("cube", func(x ad.Var) ad.Var { return ad.Mul(x, ad.Square(x)) })
	chan1 := func(n int) model.Layer {
		return model.Func("chan", func(x ad.Var) ad.Var { return ad.Reshape(x, 1, 1, n) })
	}
	return []struct {
		name       string
		net        model.Layer
		replayable bool
	}{
		{"spiral", model.Chain(cube, model.Dense(3, 8), model.Tanh(), model.Dense(8, 3)), true},
		{"norm-skip", model.Chain(model.Dense(3, 6), model.LayerNorm([]int{6}), model.Gelu(), model.Softplus(),
			model.Skip(model.Dense(6, 6), ad.Add), model.Sigmoid(), model.Dense(6, 3)), true},
		{"parallel", model.Chain(model.Dense(3, 4), model.Relu(), model.LeakyRelu(0.1), model.Elu(0.5), model.Swish(),
			model.Parallel(ad.Add, model.Dense(4, 4), model.Dense(4, 4)), model.Softmax(1), model.Dense(4, 3)), true},
		{"conv", model.Chain(chan1(3), model.Conv([]int{2}, 1, 2, model.Pad(1)), model.Tanh(),
			model.MeanPool([]int{2}), model.Flatten(), model.Dense(4, 3)), true},
		{"max", model.Chain(model.Dense(3, 4), model.Func("max", func(x ad.Var) ad.Var { return ad.Add(x, ad.Max(x, 1)) }),
			model.Dense(4, 3)), false},
		{"maxpool", model.Chain(model.Dense(3, 4), chan1(4), model.MaxPool([]int{2}), model.Flatten(), model.Dense(2, 3)), false},
	}
}

type adProducts struct {
	F   func(du, u, p []float32, t float64)
	Jac func(J, u, p []float32, t float64)
	JVP func(jv, u, v, p, dp []float32, t float64)
	VJP func(du, dp, w, u, p []float32, t float64)
}

func products(f func(u, p ad.Var, t float64) ad.Var, n int, opts ...odead.Option) adProducts {
	d := odead.Derivs(f, n, opts...)
	return adProducts{d.F, d.Jac, d.JVP, d.VJP}
}

// TestDerivsReplayMatchesRecording: the products of a NeuralRHS
// declared Replayable (which Derivs replays) equal, bit for bit, those
// of the same function recorded anew at every call, over several calls
// at random points, for every layer family; a function declared
// Replayable that ad finds value-dependent (Max, MaxPool) is recorded
// anew and stays right.
func TestDerivsReplayMatchesRecording(t *testing.T) {
	const n = 3
	for _, c := range replayNets() {
		t.Run(c.name, func(t *testing.T) {
			rhs := odead.NeuralRHS(c.net)
			fresh := products(rhs, n) // not declared Replayable: no replay
			kinds := []adProducts{products(rhs, n, odead.Replayable()), products(func(u, p ad.Var, t float64) ad.Var { return rhs(u, p, t) }, n, odead.Replayable())}
			rapid.Check(t, func(rt *rapid.T) {
				θ, err := model.Init(c.net, rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 1)))
				if err != nil {
					rt.Fatal(err)
				}
				np := len(θ)
				for call := range 3 {
					u, v, w := drawVec(rt, n, -2, 2, "u"), drawVec(rt, n, -2, 2, "v"), drawVec(rt, n, -2, 2, "w")
					dp := drawVec(rt, np, -1, 1, "dp")
					du0, dp0 := drawVec(rt, n, -1, 1, "du0"), drawVec(rt, np, -1, 1, "dp0")
					for ki, d := range kinds {
						check := func(what string, got, want []float32) {
							if !bitwise.Equal(got, want) {
								rt.Fatalf("call %d, kind %d: %s replayed %v, recorded %v", call, ki, what, got, want)
							}
						}
						a, b := make([]float32, n*n), make([]float32, n*n)
						d.F(a[:n], u, θ, 0)
						fresh.F(b[:n], u, θ, 0)
						check("F", a[:n], b[:n])
						d.Jac(a, u, θ, 0)
						fresh.Jac(b, u, θ, 0)
						check("Jac", a, b)
						for _, dpp := range [][]float32{dp, nil} {
							d.JVP(a[:n], u, v, θ, dpp, 0)
							fresh.JVP(b[:n], u, v, θ, dpp, 0)
							check("JVP", a[:n], b[:n])
							ga, gb := append([]float32(nil), du0...), append([]float32(nil), du0...)
							pa, pb := append([]float32(nil), dp0...), append([]float32(nil), dp0...)
							if dpp == nil {
								pa, pb = nil, nil
							}
							d.VJP(ga, pa, w, u, θ, 0)
							fresh.VJP(gb, pb, w, u, θ, 0)
							check("VJP du", ga, gb)
							check("VJP dp", pa, pb)
						}
					}
				}
			})
		})
	}
}

// TestDerivsStayWarmAcrossGC: the tapes outlive garbage collections (a
// sync.Pool is emptied by two), so a replayed product allocates nothing
// even right after one.
func TestDerivsStayWarmAcrossGC(t *testing.T) {
	net := spiralNet()
	θ, err := model.Init(net, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	d := products(odead.NeuralRHS(net), 2, odead.Replayable())
	u, w, du, dp := []float32{1, 0.5}, []float32{1, -1}, make([]float32, 2), make([]float32, len(θ))
	d.F(du, u, θ, 0)
	d.VJP(du, dp, w, u, θ, 0)
	allocs := testing.AllocsPerRun(20, func() {
		runtime.GC()
		runtime.GC()
		d.F(du, u, θ, 0)
		d.VJP(du, dp, w, u, θ, 0)
	})
	if allocs != 0 {
		t.Errorf("F and VJP after two GCs: %v allocations, want 0", allocs)
	}
}

// TestFuncErrorReachesSolve: a right-hand side that fails on its tape
// (here a wrong output size, and an error of the user's) makes Solve end
// with Failed whose Err is that error.
func TestFuncErrorReachesSolve(t *testing.T) {
	bad := func(u, _ ad.Var, _ float64) ad.Var { return ad.Slice(u, 0, 2) }
	errMine := errors.New("my right-hand side is broken")
	mine := func(u, _ ad.Var, _ float64) ad.Var { return u.Tape().Fail(errMine) }
	for _, c := range []struct {
		name string
		f    func(u, p ad.Var, t float64) ad.Var
		want string
		is   error
	}{
		{"size", bad, "f returned 2 values (shape [2]), want 3", nil},
		{"user", mine, "my right-hand side is broken", errMine},
	} {
		prob := odead.Func(c.f, 3)
		prob.U0, prob.T1 = []float32{1, 0, 0}, 1
		_, err := ode.Solve(context.Background(), prob, ode.Tsit5())
		var oe *ode.Error
		if !errors.As(err, &oe) || oe.Code != ode.Failed {
			t.Fatalf("%s: solve: %v, want Failed", c.name, err)
		}
		if oe.Err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: solve: %v (Err %v), want the tape's error %q", c.name, err, oe.Err, c.want)
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: errors.Is(%v, the user's error) = false", c.name, err)
		}
	}
	// A function that is not ad's keeps the plain NonFinite error.
	nanF := func(du, _ []float32, _ []float32, _ float64) { du[0] = float32(math.NaN()) }
	_, err := ode.Solve(context.Background(), ode.Problem[float32]{F: nanF, U0: []float32{1}, T1: 1}, ode.Tsit5())
	var oe *ode.Error
	if !errors.As(err, &oe) || oe.Code != ode.NonFinite || oe.Err != nil {
		t.Errorf("solve of a NaN F: %v, want NonFinite without a cause", err)
	}
}

// TestDerivsReadArgumentsInPlace: the same slices for u, p and the
// directions, written with new values between calls (a solver's buffers),
// give the products of a fresh recording at every call: a replay sees the
// new values, of p too, which it reads where it was recorded.
func TestDerivsReadArgumentsInPlace(t *testing.T) {
	const n = 3
	c := replayNets()[0]
	rhs := odead.NeuralRHS(c.net)
	fresh := products(rhs, n)
	d := products(rhs, n, odead.Replayable())
	rapid.Check(t, func(rt *rapid.T) {
		θ, err := model.Init(c.net, rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 1)))
		if err != nil {
			rt.Fatal(err)
		}
		np := len(θ)
		u, v, w, dp := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, np)
		for call := range 4 {
			copy(u, drawVec(rt, n, -2, 2, "u"))
			copy(v, drawVec(rt, n, -2, 2, "v"))
			copy(w, drawVec(rt, n, -2, 2, "w"))
			copy(dp, drawVec(rt, np, -1, 1, "dp"))
			if call > 0 {
				copy(θ, drawVec(rt, np, -1, 1, "θ"))
			}
			check := func(what string, got, want []float32) {
				if !bitwise.Equal(got, want) {
					rt.Fatalf("call %d: %s replayed %v, recorded %v", call, what, got, want)
				}
			}
			a, b := make([]float32, n), make([]float32, n)
			d.F(a, u, θ, 0)
			fresh.F(b, u, θ, 0)
			check("F", a, b)
			d.JVP(a, u, v, θ, dp, 0)
			fresh.JVP(b, u, v, θ, dp, 0)
			check("JVP", a, b)
			ga, gb := make([]float32, n), make([]float32, n)
			pa, pb := make([]float32, np), make([]float32, np)
			d.VJP(ga, pa, w, u, θ, 0)
			fresh.VJP(gb, pb, w, u, θ, 0)
			check("VJP du", ga, gb)
			check("VJP dp", pa, pb)
		}
	})
}
