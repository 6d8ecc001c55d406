package model_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/wrongcube"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/proptest"
)

// Derivatives through random stacks of layers (proptest.Stacks) and
// through fixed networks: the gradient against finite
// differences, forward mode against finite differences and against
// reverse mode, and second derivatives forward-over-reverse against
// reverse-over-reverse against finite differences of the gradient. Each
// check differentiates with respect to the parameters and the input at
// once: the vector is [θ; x].

// stackT is a proptest.T that keeps what a checker reported.
type stackT struct {
	errs []string
}

func (r *stackT) Helper() {}
func (r *stackT) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *stackT) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(r) // stop the checker as testing.T.FailNow would
}

// stackCheck runs check and returns what it reported.
func stackCheck(check func(proptest.T)) []string {
	r := &stackT{}
	func() {
		defer func() {
			if p := recover(); p != nil && p != r {
				panic(p)
			}
		}()
		check(r)
	}()
	return r.errs
}

// stackOutput returns v ↦ net(x) for v = [θ; x], θ of length nθ and x of
// shape in, applied with a fresh Ctx from ctx (nil: a nil Ctx) for each
// evaluation, so that every pass computes the same function.
func stackOutput(net model.Layer, ctx func() *model.Ctx, in []int, nθ int) func(ad.Var) ad.Var {
	return func(v ad.Var) ad.Var {
		var p ad.Var
		if nθ > 0 {
			p = ad.Slice(v, 0, nθ)
		}
		var c *model.Ctx
		if ctx != nil {
			c = ctx()
		}
		return net.Apply(c, p, ad.View(v, nθ, in...))
	}
}

// stackLoss returns v ↦ sum(w ⊙ net(x)) for v = [θ; x] and a fixed w of
// the output's shape out.
func stackLoss(net model.Layer, ctx func() *model.Ctx, in, out []int, nθ int, w []float32) func(ad.Var) ad.Var {
	y := stackOutput(net, ctx, in, nθ)
	return func(v ad.Var) ad.Var {
		wv := v.Tape().Const(flat.Tensor{Shape: out, Data: w})
		return ad.Sum(ad.Mul(wv, y(v)))
	}
}

// drawStackPoint draws a stack's parameters, input and loss weights and
// returns v = [θ; x], len(θ) and w.
func drawStackPoint(t *rapid.T, s proptest.Stack) (v []float32, nθ int, w []float32) {
	θ := proptest.ParamsFor(s).Draw(t, "θ")
	x := proptest.InputFor(s).Draw(t, "x")
	w = proptest.Floats(numel(s.Out)).Draw(t, "w")
	for i := range w {
		w[i] /= 4
	}
	return append(θ, x...), len(θ), w
}

// verdict reports errs of a finite-difference check through s: a failure
// while a non-smooth layer changed its decisions between the passes of
// the check (a ReLU input crossing 0, a max-pool winner changing) is
// inconclusive and skips the case; any other fails.
func verdict(t *rapid.T, s proptest.Stack, what string, errs []string, skipped *int) {
	t.Helper()
	if len(errs) == 0 {
		return
	}
	if s.Kinks.Crossed() {
		*skipped++
		t.Skipf("%s: a finite difference crossed a kink: %v", what, errs)
	}
	t.Fatalf("%s through %s:\n%s", what, s, strings.Join(errs, "\n"))
}

// stackCtx returns the maker of fresh contexts for s in a drawn mode.
func stackCtx(t *rapid.T, s proptest.Stack) func() *model.Ctx {
	train := rapid.Bool().Draw(t, "train")
	return func() *model.Ctx { return s.Ctx(train) }
}

// Gradients (reverse mode), JVPs (forward mode) and their transposition
// through random stacks with every kind of layer, kinks included, in test
// and training mode.
func TestStackFirstDerivatives(t *testing.T) {
	var cases, skipped int
	rapid.Check(t, func(t *rapid.T) {
		s := proptest.Stacks(proptest.StackOptions{}).Draw(t, "stack")
		v, nθ, w := drawStackPoint(t, s)
		ctx := stackCtx(t, s)
		cases++
		loss := stackLoss(s.Net, ctx, s.In, s.Out, nθ, w)
		out := stackOutput(s.Net, ctx, s.In, nθ)
		s.Kinks.Reset()
		verdict(t, s, "CheckGrad", stackCheck(func(pt proptest.T) { proptest.CheckGrad(pt, loss, v) }), &skipped)
		s.Kinks.Reset()
		verdict(t, s, "CheckJVP", stackCheck(func(pt proptest.T) { proptest.CheckJVP(pt, out, v) }), &skipped)
		// No finite differences: the decisions are those at v.
		if errs := stackCheck(func(pt proptest.T) { proptest.CheckTranspose(pt, out, v) }); len(errs) > 0 {
			t.Fatalf("CheckTranspose through %s:\n%s", s, strings.Join(errs, "\n"))
		}
	})
	if skipped > 5 && skipped > cases/5 {
		t.Errorf("%d of %d cases were inconclusive (a kink crossed): the checks see too little", skipped, cases)
	}
}

// Gradients through random stacks of wide convolutions, whose kernels in
// ad take the im2col + GEMM path (Cin/groups·prod(kernel) ≥ 32) as well as
// the direct loops.
func TestStackWideConvolutions(t *testing.T) {
	var cases, skipped int
	rapid.Check(t, func(t *rapid.T) {
		s := proptest.Stacks(proptest.StackOptions{
			MaxLayers: 3, MaxChannels: 8, MaxElems: 512, Spatial: []int{2, 3},
			Kinds: []proptest.Kind{proptest.Conv, proptest.ConvTranspose, proptest.Tanh, proptest.Relu, proptest.Skip},
		}).Draw(t, "stack")
		v, nθ, w := drawStackPoint(t, s)
		cases++
		loss := stackLoss(s.Net, nil, s.In, s.Out, nθ, w)
		s.Kinks.Reset()
		verdict(t, s, "CheckGrad", stackCheck(func(pt proptest.T) { proptest.CheckGrad(pt, loss, v) }), &skipped)
		if errs := stackCheck(func(pt proptest.T) { proptest.CheckTranspose(pt, stackOutput(s.Net, nil, s.In, nθ), v) }); len(errs) > 0 {
			t.Fatalf("CheckTranspose through %s:\n%s", s, strings.Join(errs, "\n"))
		}
	})
	if skipped > 5 && skipped > cases/5 {
		t.Errorf("%d of %d cases were inconclusive (a kink crossed): the checks see too little", skipped, cases)
	}
}

// Second derivatives through random smooth stacks, in test and training
// mode.
func TestStackSecondDerivatives(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := proptest.Stacks(proptest.StackOptions{Smooth: true}).Draw(t, "stack")
		v, nθ, w := drawStackPoint(t, s)
		loss := stackLoss(s.Net, stackCtx(t, s), s.In, s.Out, nθ, w)
		if errs := stackCheck(func(pt proptest.T) { proptest.CheckHVP(pt, loss, v) }); len(errs) > 0 {
			t.Fatalf("CheckHVP through %s:\n%s", s, strings.Join(errs, "\n"))
		}
	})
}

// hvpAgreement returns, for the loss f at v along u, how far the
// reverse-over-reverse HVP is from the forward-over-reverse one and how
// far the best central difference of the gradient is from it, each
// relative to the norm of the forward-over-reverse HVP.
func hvpAgreement(f func(ad.Var) ad.Var, v, u []float32) (rev, fd float64, err error) {
	h1, err := ad.HVP(f, v, u)
	if err != nil {
		return 0, 0, err
	}
	h2, err := ad.HVPReverse(f, v, u)
	if err != nil {
		return 0, 0, err
	}
	norm := norm64(h1, nil)
	rev = norm64(h1, h2) / norm
	fd = math.Inf(1)
	for _, step := range []float32{1e-2, 3e-3, 1e-3} {
		plus, minus := flat.Clone(v), flat.Clone(v)
		flat.Axpy(step, u, plus)
		flat.Axpy(-step, u, minus)
		_, gp, err := ad.ValueAndGrad(f, plus)
		if err != nil {
			return 0, 0, err
		}
		_, gm, err := ad.ValueAndGrad(f, minus)
		if err != nil {
			return 0, 0, err
		}
		s := 0.0
		for i := range h1 {
			d := float64(h1[i]) - (float64(gp[i])-float64(gm[i]))/(2*float64(step))
			s += d * d
		}
		fd = min(fd, math.Sqrt(s)/norm)
	}
	return rev, fd, nil
}

// norm64 returns ‖a − b‖ (‖a‖ for a nil b) in float64.
func norm64(a, b []float32) float64 {
	s := 0.0
	for i, x := range a {
		d := float64(x)
		if b != nil {
			d -= float64(b[i])
		}
		s += d * d
	}
	return math.Sqrt(s)
}

// stackPoint returns v = [θ; x] for net with a fixed seed, the loss
// weights w and a unit direction u.
func stackPoint(t *testing.T, net model.Layer, in, out []int, seed uint64) (v []float32, nθ int, w, u []float32) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	θ, err := model.Init(net, rng)
	if err != nil {
		t.Fatal(err)
	}
	normal := func(n int, scale float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(scale * rng.NormFloat64())
		}
		return x
	}
	v = append(θ, normal(numel(in), 1)...)
	u = normal(len(v), 1)
	flat.Scale(float32(1/norm64(u, nil)), u)
	return v, len(θ), normal(numel(out), 0.5), u
}

// stackRepeat returns n copies of the layers made by f, in one slice.
func stackRepeat(n int, f func() []model.Layer) []model.Layer {
	var ls []model.Layer
	for range n {
		ls = append(ls, f()...)
	}
	return ls
}

// The "done means": forward-over-reverse HVP equals
// reverse-over-reverse through Conv, MaxPool, MeanPool, Skip and a
// 60-layer chain, to float32 precision (1e-3 of the norm), and both equal
// finite differences of the gradient.
func TestHVPThroughLayers(t *testing.T) {
	tests := []struct {
		name    string
		net     model.Layer
		in, out []int
		train   bool // apply in training mode, with state
	}{
		{"Conv", model.Chain(
			model.Conv([]int{3, 3}, 2, 3, model.PadSides([]int{1, 0}, []int{1, 1}), model.Stride(2, 1)),
			model.Tanh(),
			model.Conv([]int{2, 2}, 3, 3, model.Groups(3), model.Dilation(2)),
			model.Tanh(), model.Flatten(), model.Dense(3, 2), model.Tanh(),
		), []int{2, 2, 5, 4}, []int{2, 2}, false},
		{"Conv1d and Conv3d", model.Chain(
			model.Conv([]int{3}, 2, 4, model.Pad(1)), model.Tanh(), model.Flatten(),
			model.Func("to3d", func(x ad.Var) ad.Var { return ad.Reshape(x, 2, 4, 2, 2, 2) }),
			model.Conv([]int{2, 2, 2}, 4, 2, model.Pad(1), model.Stride(2)), model.Sigmoid(),
		), []int{2, 2, 8}, []int{2, 2, 2, 2, 2}, false},
		{"ConvTranspose, BatchNorm and LayerNorm in training mode", model.Chain(
			model.ConvTranspose([]int{3, 3}, 2, 3, model.Stride(2), model.Pad(1), model.OutputPad(1)),
			model.BatchNorm(3), model.Tanh(), model.LayerNorm([]int{4, 4}),
			model.Flatten(), model.Dense(48, 2), model.Tanh(),
		), []int{2, 2, 2, 2}, []int{2, 2}, true},
		{"MaxPool", model.Chain(
			model.Conv([]int{3, 3}, 1, 2, model.Pad(1)), model.Tanh(),
			model.MaxPool([]int{2, 2}),
			model.Flatten(), model.Dense(2*2*2, 3), model.Tanh(),
		), []int{2, 1, 4, 4}, []int{2, 3}, false},
		{"MeanPool", model.Chain(
			model.Conv([]int{3, 3}, 1, 2, model.Pad(1)), model.Softplus(),
			model.MeanPool([]int{2, 2}), model.Gelu(),
			model.Flatten(), model.Dense(2*2*2, 3), model.Tanh(),
		), []int{2, 1, 4, 4}, []int{2, 3}, false},
		{"Skip", model.Chain(
			model.Skip(model.Chain(model.Conv([]int{3, 3}, 2, 2, model.Pad(1)), model.Tanh()), ad.Add),
			model.Swish(),
			model.Skip(model.Chain(model.Dense(3, 3), model.Sigmoid()), ad.Add),
		), []int{1, 2, 3, 3}, []int{1, 2, 3, 3}, false},
		{"60-layer chain of Dense and Tanh", model.Chain(stackRepeat(30, func() []model.Layer {
			return []model.Layer{model.Dense(4, 4), model.Tanh()}
		})...), []int{3, 4}, []int{3, 4}, false},
		{"60-layer chain of Skip(Conv) and Tanh", model.Chain(stackRepeat(30, func() []model.Layer {
			return []model.Layer{model.Skip(model.Conv([]int{3, 3}, 4, 4, model.Pad(1)), ad.Add), model.Tanh()}
		})...), []int{1, 4, 2, 2}, []int{1, 4, 2, 2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, nθ, w, u := stackPoint(t, tt.net, tt.in, tt.out, 1)
			var ctx func() *model.Ctx
			if tt.train {
				ctx = func() *model.Ctx {
					st, err := model.InitState(tt.net)
					if err != nil {
						t.Fatal(err)
					}
					return &model.Ctx{Train: true, State: st}
				}
			}
			rev, fd, err := hvpAgreement(stackLoss(tt.net, ctx, tt.in, tt.out, nθ, w), v, u)
			if err != nil {
				t.Fatal(err)
			}
			if rev > 1e-3 {
				t.Errorf("reverse-over-reverse HVP is %.2g (relative) from forward-over-reverse, want ≤ 1e-3", rev)
			}
			if fd > 2e-2 {
				t.Errorf("finite differences of the gradient are %.2g (relative) from the HVP, want ≤ 2e-2", fd)
			}
			t.Logf("%d parameters: reverse-over-reverse %.1e, finite differences %.1e", nθ, rev, fd)
		})
	}
}

func cubeNet(c *wrongcube.Cube) model.Layer {
	return model.Chain(
		model.Dense(3, 4),
		model.Func("Cube", func(x ad.Var) ad.Var { return ad.Apply(c, ad.Attrs{}, x) }),
		model.Dense(4, 2),
	)
}

// The checks above can fail: a layer with a wrong first derivative fails
// CheckGrad inside a stack, one with a wrong second derivative fails
// CheckHVP and the comparison of TestHVPThroughLayers, while a right one
// passes all of them. The checkers draw their directions at random, so a
// wrong rule may hide in one direction (about one point in 40 for the
// wrong VJP): it must be caught at one of eight points, and a right one
// pass at all eight.
func TestStackChecksCatchWrongLayers(t *testing.T) {
	in, out := []int{2, 3}, []int{2, 2}
	tests := []struct {
		name          string
		op            *wrongcube.Cube
		grad, hessian bool // whether the first and second derivatives are right
	}{
		{"right", wrongcube.New(1, 1, 1), true, true},
		{"wrong VJP", wrongcube.New(-1, 1, 1), false, false},
		{"wrong second derivative", wrongcube.New(1, 1, 0.5), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			net := cubeNet(tt.op)
			var gradFails, hvpFails, fdFails []string
			for seed := range uint64(8) {
				v, nθ, w, u := stackPoint(t, net, in, out, seed)
				loss := stackLoss(net, nil, in, out, nθ, w)
				gradFails = append(gradFails, stackCheck(func(pt proptest.T) { proptest.CheckGrad(pt, loss, v) })...)
				hvpFails = append(hvpFails, stackCheck(func(pt proptest.T) { proptest.CheckHVP(pt, loss, v) })...)
				if tt.grad {
					// hvpAgreement assumes a right gradient (its finite
					// differences are of the AD gradient).
					_, fd, err := hvpAgreement(loss, v, u)
					if err != nil {
						t.Fatal(err)
					}
					if fd > 2e-2 {
						fdFails = append(fdFails, fmt.Sprintf("point %d: HVP vs finite differences of the gradient: relative error %.2g", seed, fd))
					}
				}
			}
			if (len(gradFails) == 0) != tt.grad {
				t.Errorf("CheckGrad reported %q; the gradient is right: %v", gradFails, tt.grad)
			}
			if (len(hvpFails) == 0) != tt.hessian {
				t.Errorf("CheckHVP reported %q; the Hessian is right: %v", hvpFails, tt.hessian)
			}
			if tt.grad && (len(fdFails) == 0) != tt.hessian {
				t.Errorf("the HVP comparison reported %q; the Hessian is right: %v", fdFails, tt.hessian)
			}
		})
	}
}
