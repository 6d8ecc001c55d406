package model_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/race"
	"github.com/flatkit/flatkit/internal/relerr"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/proptest"
)

// clCompare checks got against want (float64) within tol·(1 + |want|).
func clCompare(t *testing.T, got flat.Tensor, wantShape []int, want []float64, tol float64) {
	t.Helper()
	if !slices.Equal(got.Shape, wantShape) {
		t.Fatalf("shape %v, want %v", got.Shape, wantShape)
	}
	if err := relerr.Check("element", got.Data, want, tol); err != nil {
		t.Fatal(err)
	}
}

// ctCase is a ConvTranspose configuration with its geometry spelled out
// for the reference loop.
type ctCase struct {
	name            string
	kernel          []int
	in, out, groups int
	stride, lo, hi  []int
	dil, outPad     []int
	noBias          bool
	act             bool // tanh
	xs              []int
	wantSpatial     []int
}

func (c ctCase) options() []model.ConvTransposeOption {
	opts := []model.ConvTransposeOption{model.Stride(c.stride...), model.PadSides(c.lo, c.hi), model.Dilation(c.dil...), model.OutputPad(c.outPad...)}
	if c.groups > 1 {
		opts = append(opts, model.Groups(c.groups))
	}
	if c.noBias {
		opts = append(opts, model.NoBias())
	}
	if c.act {
		opts = append(opts, model.Activation(ad.Tanh))
	}
	return opts
}

func (c ctCase) layer() *model.ConvTransposeLayer {
	return model.ConvTranspose(c.kernel, c.in, c.out, c.options()...)
}

var ctCases = []ctCase{
	{name: "1d stride 2 output pad 1", kernel: []int{3}, in: 2, out: 3, groups: 1,
		stride: []int{2}, lo: []int{0}, hi: []int{0}, dil: []int{1}, outPad: []int{1},
		xs: []int{2, 2, 4}, wantSpatial: []int{10}},
	{name: "2d groups asymmetric pad", kernel: []int{3, 2}, in: 4, out: 6, groups: 2,
		stride: []int{2, 1}, lo: []int{1, 0}, hi: []int{0, 1}, dil: []int{1, 1}, outPad: []int{1, 0},
		xs: []int{2, 4, 3, 4}, wantSpatial: []int{7, 4}},
	{name: "2d output pad past padHi (dilation 2, stride 1)", kernel: []int{2, 3}, in: 3, out: 2, groups: 1,
		stride: []int{1, 2}, lo: []int{1, 0}, hi: []int{0, 1}, dil: []int{2, 1}, outPad: []int{1, 1},
		xs: []int{1, 3, 3, 3}, wantSpatial: []int{5, 7}, act: true},
	{name: "3d stride 2 pad 1 no bias", kernel: []int{2, 3, 2}, in: 2, out: 2, groups: 2,
		stride: []int{2, 2, 1}, lo: []int{1, 1, 0}, hi: []int{1, 0, 1}, dil: []int{1, 1, 1}, outPad: []int{1, 0, 0},
		xs: []int{1, 2, 2, 3, 2}, noBias: true, wantSpatial: []int{3, 6, 2}},
}

// ctReference is PyTorch's transposed convolution in float64, written as
// a scatter: input cell i of channel ic adds x·w[ic, oc, t] to output cell
// i·stride − padLo + dilation·t of each channel oc of its group.
func ctReference(c ctCase, x, θ []float32) (shape []int, y []float64) {
	d := len(c.kernel)
	n, cin := c.xs[0], c.xs[1]
	outSp := make([]int, d)
	for j := range d {
		outSp[j] = (c.xs[2+j]-1)*c.stride[j] - c.lo[j] - c.hi[j] + c.dil[j]*(c.kernel[j]-1) + c.outPad[j] + 1
	}
	shape = append([]int{n, c.out}, outSp...)
	y = make([]float64, numel(shape))
	opg := c.out / c.groups
	ipg := cin / c.groups
	nk := numel(c.kernel)
	nw := cin * opg * nk
	inSp := c.xs[2:]
	nIn, nOut := numel(inSp), numel(outSp)
	idx := func(flatI int, dims []int) []int { // row-major unflatten
		v := make([]int, len(dims))
		for j := len(dims) - 1; j >= 0; j-- {
			v[j] = flatI % dims[j]
			flatI /= dims[j]
		}
		return v
	}
	for b := range n {
		for ic := range cin {
			g := ic / ipg
			for i := range nIn {
				iv := idx(i, inSp)
				xv := float64(x[(b*cin+ic)*nIn+i])
				for tk := range nk {
					tv := idx(tk, c.kernel)
					o, ok := 0, true
					for j := range d {
						p := iv[j]*c.stride[j] - c.lo[j] + c.dil[j]*tv[j]
						if p < 0 || p >= outSp[j] {
							ok = false
							break
						}
						o = o*outSp[j] + p
					}
					if !ok {
						continue
					}
					for q := range opg {
						oc := g*opg + q
						w := float64(θ[(ic*opg+q)*nk+tk])
						y[(b*c.out+oc)*nOut+o] += xv * w
					}
				}
			}
		}
	}
	for b := range n {
		for oc := range c.out {
			for o := range nOut {
				v := &y[(b*c.out+oc)*nOut+o]
				if !c.noBias {
					*v += float64(θ[nw+oc])
				}
				if c.act {
					*v = math.Tanh(*v)
				}
			}
		}
	}
	return shape, y
}

func TestConvTransposeMatchesLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range ctCases {
		t.Run(c.name, func(t *testing.T) {
			l := c.layer()
			θ, err := model.Init(l, rng)
			if err != nil {
				t.Fatal(err)
			}
			for i := range θ { // larger than the default init, so every term matters
				θ[i] = float32(rng.NormFloat64())
			}
			x := randn(rng, numel(c.xs))
			got := applyLayer(t, l, nil, θ, flat.Tensor{Shape: c.xs, Data: x})
			shape, want := ctReference(c, x, θ)
			if !slices.Equal(shape[2:], c.wantSpatial) {
				t.Fatalf("reference output %v, want spatial %v (test table is wrong)", shape, c.wantSpatial)
			}
			clCompare(t, got, shape, want, 1e-5)
		})
	}
}

// TestConvTransposeIsTheAdjointOfConv checks ⟨ConvTranspose(u), z⟩ =
// ⟨u, Conv(z)⟩ for the same weight, where Conv goes from out to in
// channels with the same stride, padding, dilation and groups: the
// defining property, independent of the reference loop.
func TestConvTransposeIsTheAdjointOfConv(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, c := range ctCases {
		for j, op := range c.outPad {
			if op >= c.stride[j] {
				// The convolution of the padded output would be
				// longer than the input: check this case's geometry
				// without the output pad.
				c.outPad = make([]int, len(c.kernel))
				break
			}
		}
		c.act, c.noBias = false, true
		t.Run(c.name, func(t *testing.T) {
			ct := c.layer()
			cv := model.Conv(c.kernel, c.out, c.in, model.Stride(c.stride...), model.PadSides(c.lo, c.hi),
				model.Dilation(c.dil...), model.Groups(c.groups), model.NoBias())
			θ := randn(rng, numel(c.xs[1:2])*c.out/c.groups*numel(c.kernel))
			u := randn(rng, numel(c.xs))
			y := applyLayer(t, ct, nil, θ, flat.Tensor{Shape: c.xs, Data: u})
			z := randn(rng, len(y.Data))
			cz := applyLayer(t, cv, nil, θ, flat.Tensor{Shape: y.Shape, Data: z})
			if !slices.Equal(cz.Shape, c.xs) {
				t.Fatalf("Conv of the output has shape %v, want the input's %v", cz.Shape, c.xs)
			}
			var lhs, rhs, scale float64
			for i := range z {
				lhs += float64(y.Data[i]) * float64(z[i])
				scale += math.Abs(float64(y.Data[i]) * float64(z[i]))
			}
			for i := range u {
				rhs += float64(u[i]) * float64(cz.Data[i])
			}
			if math.Abs(lhs-rhs) > 1e-5*scale {
				t.Errorf("⟨ConvTranspose u, z⟩ = %g, ⟨u, Conv z⟩ = %g", lhs, rhs)
			}
		})
	}
}

// ctLoss is a scalar function of θ = [input; layer parameters] through l,
// curved in both (tanh of a bilinear form).
func ctLoss(l model.Layer, xs []int) func(p ad.Var) ad.Var {
	nx := numel(xs)
	return func(p ad.Var) ad.Var {
		n := p.Shape()[0]
		x := ad.View(p, 0, xs...)
		y := l.Apply(nil, ad.Slice(p, nx, n), x)
		return ad.Sum(ad.Tanh(y))
	}
}

func TestConvTransposeDerivatives(t *testing.T) {
	for _, c := range ctCases {
		t.Run(c.name, func(t *testing.T) {
			l := c.layer()
			lay := mustLayout(t, l)
			f := ctLoss(l, c.xs)
			rapid.Check(t, func(rt *rapid.T) {
				θ := proptest.Floats(numel(c.xs)+lay.Len()).Draw(rt, "θ")
				for i := range θ { // keep tanh away from saturation
					θ[i] *= 0.25
				}
				checkDerivatives(rt, f, θ)
			})
		})
	}
}

func TestConvTransposeErrors(t *testing.T) {
	config := []layerCase{
		{"groups", model.Chain(model.Relu(), model.ConvTranspose([]int{3}, 3, 4, model.Groups(2))),
			[]string{"1: ConvTranspose", "groups 2"}},
		{"output pad ≥ stride and dilation", model.ConvTranspose([]int{3, 3}, 1, 1, model.Stride(2), model.OutputPad(0, 2)),
			[]string{"ConvTranspose", "OutputPad", "axis 1", "< stride 2 or < dilation 1"}},
		{"output pad values", model.ConvTranspose([]int{3, 3}, 1, 1, model.Stride(2), model.OutputPad(1, 1, 1)),
			[]string{"ConvTranspose", "OutputPad", "want 1 or 2"}},
		{"kernel", model.ConvTranspose([]int{3, 0}, 1, 1), []string{"ConvTranspose", "kernel [3 0]"}},
		{"channels", model.ConvTranspose([]int{3}, 0, 1), []string{"ConvTranspose", "in 0"}},
	}
	for _, tt := range config {
		t.Run(tt.name, func(t *testing.T) {
			checkLayoutError(t, tt.net, tt.want)
			tape := ad.NewTape()
			y := tt.net.Apply(nil, tape.Param(make([]float32, 10)), tape.Const(flat.Tensor{Shape: []int{1, 1, 5}, Data: make([]float32, 5)}))
			if _, err := tape.Grad(ad.Sum(y)); err == nil || !strings.Contains(err.Error(), "ConvTranspose") {
				t.Errorf("Apply: error %v, want one naming ConvTranspose", err)
			}
		})
	}

	l := model.ConvTranspose([]int{3, 3}, 2, 4, model.Pad(3))
	apply := []struct {
		name  string
		θ     int
		shape []int
		want  string
	}{
		{"input channels", 2*4*9 + 4, []int{1, 3, 4, 4}, "ConvTranspose([3 3], 2, 4): input shape [1 3 4 4], want (N, 2, 2 spatial axes)"},
		{"input rank", 2*4*9 + 4, []int{1, 2, 4}, "input shape [1 2 4], want (N, 2, 2 spatial axes)"},
		{"parameters", 2 * 4 * 9, []int{1, 2, 4, 4}, "ConvTranspose: parameter Var has shape [72], want (76)"},
		{"output size", 2*4*9 + 4, []int{1, 2, 2, 2}, "output size -2 on spatial axis 0, want ≥ 1"},
	}
	for _, tt := range apply {
		t.Run(tt.name, func(t *testing.T) {
			tape := ad.NewTape()
			x := tape.Const(flat.Tensor{Shape: tt.shape, Data: make([]float32, numel(tt.shape))})
			y := l.Apply(nil, tape.Param(make([]float32, tt.θ)), x)
			if _, err := tape.Grad(ad.Sum(y)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestLayersStepAllocatesNothing pins a forward+gradient step through
// ConvTranspose (both ways of placing the output pad) and every pooling
// layer on a reused tape at zero allocations.
func TestLayersStepAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops items under -race")
	}
	net := model.Chain(
		model.Conv([]int{3, 3}, 2, 4, model.Pad(1)),
		model.MaxPool([]int{2, 2}),
		model.ConvTranspose([]int{3, 3}, 4, 4, model.Stride(2), model.Pad(1), model.OutputPad(1), model.Groups(2)),
		model.Relu(),
		model.MeanPool([]int{3, 3}, model.Stride(1), model.PadSides([]int{1, 0}, []int{0, 1})),
		model.ConvTranspose([]int{2, 2}, 4, 3, model.Dilation(2), model.OutputPad(1), model.Activation(ad.Tanh)),
		model.AdaptiveMeanPool(3, 2),
		model.GlobalMeanPool(),
		model.Flatten(),
		model.Dense(3, 2),
	)
	θ, err := model.Init(net, rand.New(rand.NewPCG(17, 18)))
	if err != nil {
		t.Fatal(err)
	}
	xs := []int{2, 2, 6, 6}
	x := flat.Tensor{Shape: xs, Data: randn(rand.New(rand.NewPCG(19, 20)), numel(xs))}
	checkStepAllocs(t, "a forward+gradient step", net, nil, ad.NewTape(), θ, x, 20)
}
