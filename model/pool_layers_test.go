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
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/proptest"
)

// plUnflatten returns the row-major multi-index of i in dims.
func plUnflatten(i int, dims []int) []int {
	v := make([]int, len(dims))
	for j := len(dims) - 1; j >= 0; j-- {
		v[j] = i % dims[j]
		i /= dims[j]
	}
	return v
}

// plWindows returns, per spatial axis, the input cells [lo, hi) of each
// output and the axis's share of the divisor.
type plWindow func(axis, o int) (lo, hi, div int)

// plReference pools x (shape xs) over windows given per axis, in float64:
// the maximum of the cells inside the input, or their sum divided by the
// product of the axes' divisors.
func plReference(xs, outSp []int, x []float32, win plWindow, isMax bool) []float64 {
	d := len(outSp)
	inSp := xs[2:]
	nIn, nOut := numel(inSp), numel(outSp)
	y := make([]float64, xs[0]*xs[1]*nOut)
	for pl := range xs[0] * xs[1] {
		for o := range nOut {
			ov := plUnflatten(o, outSp)
			best, sum, div := math.Inf(-1), 0.0, 1
			for j := range d {
				_, _, dv := win(j, ov[j])
				div *= dv
			}
			for i := range nIn {
				iv := plUnflatten(i, inSp)
				in := true
				for j := range d {
					lo, hi, _ := win(j, ov[j])
					in = in && iv[j] >= lo && iv[j] < hi
				}
				if in {
					v := float64(x[pl*nIn+i])
					best = math.Max(best, v)
					sum += v
				}
			}
			if isMax {
				y[pl*nOut+o] = best
			} else {
				y[pl*nOut+o] = sum / float64(div)
			}
		}
	}
	return y
}

type plCase struct {
	name           string
	isMax          bool
	kernel, stride []int // stride nil: the kernel
	lo, hi         []int
	xs             []int
	wantSpatial    []int
}

func (c plCase) layer() *model.PoolLayer {
	var opts []model.PoolOption
	if c.stride != nil {
		opts = append(opts, model.Stride(c.stride...))
	}
	if c.lo != nil {
		opts = append(opts, model.PadSides(c.lo, c.hi))
	}
	if c.isMax {
		return model.MaxPool(c.kernel, opts...)
	}
	return model.MeanPool(c.kernel, opts...)
}

// window is PyTorch's: output o covers [o·stride − padLo, … + kernel),
// and the divisor counts the padding.
func (c plCase) window(j, o int) (lo, hi, div int) {
	s := c.kernel[j]
	if c.stride != nil {
		s = c.stride[j]
	}
	plo := 0
	if c.lo != nil {
		plo = c.lo[j]
	}
	lo = o*s - plo
	return lo, lo + c.kernel[j], c.kernel[j]
}

var plCases = []plCase{
	{name: "max 2d default stride", isMax: true, kernel: []int{2, 2}, xs: []int{2, 3, 5, 4}, wantSpatial: []int{2, 2}},
	{name: "max 2d stride pad", isMax: true, kernel: []int{3, 3}, stride: []int{2, 1}, lo: []int{1, 1}, hi: []int{1, 1},
		xs: []int{1, 2, 5, 5}, wantSpatial: []int{3, 5}},
	{name: "max 1d asymmetric pad", isMax: true, kernel: []int{3}, stride: []int{2}, lo: []int{0}, hi: []int{2},
		xs: []int{2, 2, 7}, wantSpatial: []int{4}},
	{name: "max 3d", isMax: true, kernel: []int{2, 2, 1}, xs: []int{1, 2, 3, 4, 2}, wantSpatial: []int{1, 2, 2}},
	{name: "mean 2d stride pad", kernel: []int{3, 3}, stride: []int{2, 2}, lo: []int{1, 1}, hi: []int{1, 1},
		xs: []int{2, 2, 5, 6}, wantSpatial: []int{3, 3}},
	{name: "mean 1d", kernel: []int{2}, xs: []int{3, 2, 7}, wantSpatial: []int{3}},
	{name: "mean 3d asymmetric pad", kernel: []int{2, 2, 2}, stride: []int{1, 2, 1}, lo: []int{1, 0, 0}, hi: []int{0, 1, 1},
		xs: []int{1, 2, 3, 3, 2}, wantSpatial: []int{3, 2, 2}},
}

func TestPoolsMatchLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range plCases {
		t.Run(c.name, func(t *testing.T) {
			x := randn(rng, numel(c.xs))
			got := applyLayer(t, c.layer(), nil, nil, flat.Tensor{Shape: c.xs, Data: x})
			want := plReference(c.xs, c.wantSpatial, x, c.window, c.isMax)
			clCompare(t, got, append(slices.Clone(c.xs[:2]), c.wantSpatial...), want, 1e-6)
		})
	}
	adaptive := []struct {
		name    string
		out, xs []int
	}{
		{"1d 7 to 3", []int{3}, []int{2, 2, 7}},
		{"2d 5×4 to 3×2", []int{3, 2}, []int{1, 3, 5, 4}},
		{"3d", []int{2, 1, 2}, []int{1, 2, 3, 4, 3}},
		{"2d upsampling 2×3 to 3×4", []int{3, 4}, []int{1, 1, 2, 3}},
	}
	for _, c := range adaptive {
		t.Run("adaptive "+c.name, func(t *testing.T) {
			x := randn(rng, numel(c.xs))
			got := applyLayer(t, model.AdaptiveMeanPool(c.out...), nil, nil, flat.Tensor{Shape: c.xs, Data: x})
			win := func(j, o int) (lo, hi, div int) {
				L, n := c.xs[2+j], c.out[j]
				lo = int(math.Floor(float64(o*L) / float64(n)))
				hi = int(math.Ceil(float64((o+1)*L) / float64(n)))
				return lo, hi, hi - lo
			}
			want := plReference(c.xs, c.out, x, win, false)
			clCompare(t, got, append(slices.Clone(c.xs[:2]), c.out...), want, 1e-6)
		})
	}
	for _, xs := range [][]int{{2, 3, 4, 5}, {2, 2, 7}, {1, 2, 2, 3, 2}} {
		t.Run("global", func(t *testing.T) {
			x := randn(rng, numel(xs))
			got := applyLayer(t, model.GlobalMeanPool(), nil, nil, flat.Tensor{Shape: xs, Data: x})
			ones := make([]int, len(xs)-2)
			for i := range ones {
				ones[i] = 1
			}
			win := func(j, _ int) (lo, hi, div int) { return 0, xs[2+j], xs[2+j] }
			want := plReference(xs, ones, x, win, false)
			clCompare(t, got, append(slices.Clone(xs[:2]), ones...), want, 1e-6)
		})
	}
}

// plLoss is a curved scalar function of the pooled input x = θ: the
// squares of the outputs weighted by fixed coefficients.
func plLoss(l model.Layer, xs []int) func(p ad.Var) ad.Var {
	return func(p ad.Var) ad.Var {
		y := l.Apply(nil, ad.Var{}, ad.View(p, 0, xs...))
		n := len(y.Data())
		c := make([]float32, n)
		for i := range c {
			c[i] = float32(i%5)/4 - 0.4
		}
		return ad.Sum(ad.Mul(ad.Square(y), p.Tape().Const(flat.Tensor{Shape: y.Shape(), Data: c})))
	}
}

func TestPoolDerivatives(t *testing.T) {
	type dcase struct {
		name string
		l    model.Layer
		xs   []int
		max  bool
	}
	var cases []dcase
	for _, c := range plCases {
		cases = append(cases, dcase{c.name, c.layer(), c.xs, c.isMax})
	}
	cases = append(cases,
		dcase{"adaptive 2d", model.AdaptiveMeanPool(3, 2), []int{1, 2, 5, 4}, false},
		dcase{"global 2d", model.GlobalMeanPool(), []int{2, 2, 3, 3}, false},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := plLoss(c.l, c.xs)
			n := numel(c.xs)
			rapid.Check(t, func(rt *rapid.T) {
				var θ []float32
				if c.max {
					// No ties, and 4× apart so that no finite-difference
					// step reorders a window.
					θ = proptest.NoTies(n).Draw(rt, "x")
					for i := range θ {
						θ[i] *= 4 * float32(n) / 20
					}
				} else {
					θ = proptest.Floats(n).Draw(rt, "x")
				}
				checkDerivatives(rt, f, θ)
			})
		})
	}
}

func TestPoolErrors(t *testing.T) {
	config := []layerCase{
		{"in a chain", model.Chain(model.Relu(), model.Relu(), model.MaxPool([]int{2}, model.Stride(0))),
			[]string{"2: MaxPool", "Stride"}},
		{"pad ≥ kernel", model.MaxPool([]int{3, 2}, model.Pad(2)), []string{"MaxPool", "axis 1", "want each < the kernel 2"}},
		{"pad sides", model.MeanPool([]int{3}, model.PadSides([]int{1}, []int{3})), []string{"MeanPool", "3 after", "kernel 3"}},
		{"kernel rank", model.MeanPool([]int{2, 2, 2, 2}), []string{"MeanPool", "4 spatial axes, want 1 to 3"}},
		{"kernel size", model.MaxPool([]int{2, 0}), []string{"MaxPool", "kernel [2 0] has 0 on axis 1"}},
		{"stride", model.MaxPool([]int{2, 2}, model.Stride(0)), []string{"MaxPool", "Stride", "want ≥ 1"}},
		{"stride values", model.MeanPool([]int{2, 2}, model.Stride(1, 1, 1)), []string{"MeanPool", "Stride", "want 1 or 2"}},
		{"adaptive sizes", model.AdaptiveMeanPool(), []string{"AdaptiveMeanPool", "0 spatial axes"}},
		{"adaptive zero", model.Chain(model.AdaptiveMeanPool(2, 0)), []string{"0: AdaptiveMeanPool", "0 on axis 1, want ≥ 1"}},
	}
	for _, tt := range config {
		t.Run(tt.name, func(t *testing.T) {
			checkLayoutError(t, tt.net, tt.want)
			tape := ad.NewTape()
			xp := tape.Param(make([]float32, 16))
			y := tt.net.Apply(nil, ad.Var{}, ad.View(xp, 0, 1, 1, 4, 4))
			if _, err := tape.Grad(ad.Sum(y)); err == nil || !strings.Contains(err.Error(), "Pool") {
				t.Errorf("Apply: error %v, want one naming the layer", err)
			}
		})
	}

	apply := []struct {
		name  string
		l     model.Layer
		shape []int
		want  string
	}{
		{"max rank", model.MaxPool([]int{2, 2}), []int{1, 1, 4}, "MaxPool([2 2]): input shape [1 1 4], want (N, C, 2 spatial axes)"},
		{"mean small", model.MeanPool([]int{3, 3}, model.PadSides([]int{0, 1}, []int{0, 0})), []int{1, 1, 4, 1},
			"MeanPool([3 3]): input shape [1 1 4 1]: spatial axis 1 has size 1 padded to 2, want ≥ the kernel 3"},
		{"adaptive rank", model.AdaptiveMeanPool(2), []int{1, 1, 4, 4}, "AdaptiveMeanPool([2]): input shape [1 1 4 4], want (N, C, 1 spatial axes)"},
		{"global rank", model.GlobalMeanPool(), []int{2, 3}, "GlobalMeanPool"},
	}
	for _, tt := range apply {
		t.Run(tt.name, func(t *testing.T) {
			tape := ad.NewTape()
			xp := tape.Param(make([]float32, numel(tt.shape)))
			y := tt.l.Apply(nil, ad.Var{}, ad.View(xp, 0, tt.shape...))
			if _, err := tape.Grad(ad.Sum(y)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestPoolsTakeAnIndexButNoParameters(t *testing.T) {
	net := model.Chain(
		model.Conv([]int{3, 3}, 1, 2),
		model.MaxPool([]int{2, 2}),
		model.ConvTranspose([]int{2, 2}, 2, 3, model.Stride(2)),
		model.MeanPool([]int{2, 2}),
		model.AdaptiveMeanPool(1, 1),
		model.GlobalMeanPool(),
		model.Flatten(),
		model.Dense(3, 1),
	)
	lay := mustLayout(t, net)
	want := []string{"0.weight", "0.bias", "2.weight", "2.bias", "7.weight", "7.bias"}
	if got := paths(t, lay); !slices.Equal(got, want) {
		t.Errorf("paths %v, want %v", got, want)
	}
	if l, _ := lay.Find("2.weight"); !slices.Equal(l.Shape, []int{2, 3, 2, 2}) {
		t.Errorf("ConvTranspose weight shape %v, want (in, out/groups, k…) = [2 3 2 2]", l.Shape)
	}
	θ, err := model.Init(net, rand.New(rand.NewPCG(23, 24)))
	if err != nil {
		t.Fatal(err)
	}
	y := applyLayer(t, net, nil, θ, flat.Tensor{Shape: []int{2, 1, 9, 9}, Data: randn(rand.New(rand.NewPCG(25, 26)), 162)})
	if !slices.Equal(y.Shape, []int{2, 1}) {
		t.Errorf("output shape %v, want [2 1]", y.Shape)
	}
}
