package proptest

import (
	"fmt"
	"slices"
	"strings"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/model"
)

// stackGen is the state of one draw.
type stackGen struct {
	t     *rapid.T
	o     StackOptions
	allow map[Kind]bool
	used  map[Kind]bool
	kinks *Kinks
}

// drawn is a drawn layer. make builds it, again if called again, with the
// same geometry and fresh watchers: Parallel uses one drawn tail on every
// branch. out is its output shape.
type drawn struct {
	make func() model.Layer
	out  []int
	desc string
}

func numel(s []int) int {
	n := 1
	for _, v := range s {
		n *= v
	}
	return n
}

// input draws an input shape with d spatial axes.
func (g *stackGen) input(d int) []int {
	t := g.t
	s := []int{rapid.IntRange(1, 2).Draw(t, "batch")}
	if d == 0 {
		s = append(s, rapid.IntRange(1, 8).Draw(t, "features"))
	} else {
		s = append(s, rapid.IntRange(1, min(g.o.MaxChannels, 4)).Draw(t, "channels"))
		hi := [4]int{0, 10, 6, 4}[d]
		for range d {
			s = append(s, rapid.IntRange(1, hi).Draw(t, "size"))
		}
	}
	for numel(s) > g.o.MaxElems {
		i := 0
		for j := range s {
			if s[j] > s[i] {
				i = j
			}
		}
		s[i]--
	}
	return s
}

// candidates lists the kinds that apply to shape s. With preserve it lists
// only those that keep the spatial shape. Channels may change, since the
// chain restores them.
func (g *stackGen) candidates(s []int, depth int, preserve bool) []Kind {
	var out []Kind
	spatial := len(s) > 2
	for _, k := range kindOrder {
		i := kinds[k]
		if !g.allow[k] || spatial && !i.spatial || !spatial && !i.flat {
			continue
		}
		if i.container {
			if depth >= g.o.MaxDepth || (k != Chain || preserve) && len(g.candidates(s, g.o.MaxDepth, true)) == 0 {
				continue
			}
		}
		if k == BatchNorm && numel(s) < minNormGroup*s[1] || k == LayerNorm && numel(s) < minNormGroup*s[0] {
			continue
		}
		if preserve {
			switch k {
			case GlobalMeanPool:
				if numel(s[2:]) != 1 {
					continue
				}
			case Flatten:
				if spatial {
					continue
				}
			}
		}
		out = append(out, k)
	}
	return out
}

// chain draws a chain of layers on input shape in. With preserve its
// output has the shape of its input.
func (g *stackGen) chain(in []int, depth int, preserve bool) drawn {
	t := g.t
	n := rapid.IntRange(1, g.o.MaxLayers).Draw(t, "layers")
	var parts []drawn
	cur := in
	for range n {
		c := g.candidates(cur, depth, preserve)
		if len(c) == 0 {
			break
		}
		d := g.layer(rapid.SampledFrom(weighted(c)).Draw(t, "kind"), cur, depth, preserve)
		parts = append(parts, d)
		cur = d.out
	}
	if preserve && !slices.Equal(cur, in) {
		parts = append(parts, g.restore(cur, in))
		cur = in
	}
	descs := make([]string, len(parts))
	for i, p := range parts {
		descs[i] = p.desc
	}
	return drawn{
		make: func() model.Layer {
			ls := make([]model.Layer, len(parts))
			for i, p := range parts {
				ls[i] = p.make()
			}
			return model.Chain(ls...)
		},
		out:  cur,
		desc: "Chain(" + strings.Join(descs, ", ") + ")",
	}
}

// restore maps cur back to in. They differ only in the channels, axis 1,
// which only a Conv, a ConvTranspose or a Dense on (N, features) changed.
func (g *stackGen) restore(cur, in []int) drawn {
	if len(cur) == 2 {
		a, b := cur[1], in[1]
		return drawn{func() model.Layer { return model.Dense(a, b) }, in, fmt.Sprintf("Dense %d→%d", a, b)}
	}
	d := len(cur) - 2
	k := make([]int, d)
	for i := range k {
		k[i] = 1
	}
	a, b := cur[1], in[1]
	if !g.allow[Conv] {
		return drawn{func() model.Layer { return model.ConvTranspose(k, a, b) }, in, fmt.Sprintf("ConvTranspose%dd k=%v %d→%d", d, k, a, b)}
	}
	return drawn{func() model.Layer { return model.Conv(k, a, b) }, in, fmt.Sprintf("Conv%dd k=%v %d→%d", d, k, a, b)}
}

// layer draws one layer of kind k on shape s.
func (g *stackGen) layer(k Kind, s []int, depth int, preserve bool) drawn {
	t := g.t
	g.used[k] = true
	same := func(f func() model.Layer, desc string) drawn { return drawn{f, s, desc} }
	switch k {
	case Dense:
		return g.dense(s, preserve)
	case Conv:
		return g.conv(s, preserve, false)
	case ConvTranspose:
		return g.conv(s, preserve, true)
	case MeanPool, MaxPool:
		return g.pool(k, s, preserve)
	case AdaptiveMeanPool:
		out := slices.Clone(s)
		for i := 2; i < len(s); i++ {
			if !preserve {
				out[i] = rapid.IntRange(1, s[i]).Draw(t, "adaptiveSize")
			}
		}
		size := slices.Clone(out[2:])
		return drawn{func() model.Layer { return model.AdaptiveMeanPool(size...) }, out, fmt.Sprintf("AdaptiveMeanPool %v", size)}
	case GlobalMeanPool:
		out := slices.Clone(s)
		for i := 2; i < len(s); i++ {
			out[i] = 1
		}
		return drawn{func() model.Layer { return model.GlobalMeanPool() }, out, "GlobalMeanPool"}
	case Flatten:
		return drawn{func() model.Layer { return model.Flatten() }, []int{s[0], numel(s[1:])}, "Flatten"}
	case LayerNorm, BatchNorm:
		eps := rapid.SampledFrom(normEps).Draw(t, "eps")
		desc := fmt.Sprintf(" eps=%g", eps)
		var noAffine model.NormOption // nil, which the layers skip, unless drawn
		if rapid.IntRange(0, 3).Draw(t, "noAffine") == 0 {
			noAffine = model.NoAffine()
			desc += " noaffine"
		}
		if k == BatchNorm {
			c := s[1]
			return same(func() model.Layer { return model.BatchNorm(c, model.NormEps(eps), noAffine) }, fmt.Sprintf("BatchNorm %d", c)+desc)
		}
		// Normalise over 1 to all but the batch axis, at least
		// minNormGroup values.
		least := 1
		for numel(s[len(s)-least:]) < minNormGroup {
			least++
		}
		shape := slices.Clone(s[len(s)-rapid.IntRange(least, len(s)-1).Draw(t, "normAxes"):])
		return same(func() model.Layer { return model.LayerNorm(shape, model.NormEps(eps), noAffine) }, fmt.Sprintf("LayerNorm %v", shape)+desc)
	case Dropout:
		p := rapid.SampledFrom([]float32{0.25, 0.5, 0}).Draw(t, "dropP")
		return same(func() model.Layer { return model.Dropout(p) }, fmt.Sprintf("Dropout(%g)", p))
	case Tanh:
		return same(func() model.Layer { return model.Tanh() }, "Tanh")
	case Sigmoid:
		return same(func() model.Layer { return model.Sigmoid() }, "Sigmoid")
	case Softplus:
		return same(func() model.Layer { return model.Softplus() }, "Softplus")
	case Gelu:
		return same(func() model.Layer { return model.Gelu() }, "Gelu")
	case Swish:
		return same(func() model.Layer { return model.Swish() }, "Swish")
	case Relu:
		return same(func() model.Layer { return watchedFunc(g.kinks, "Relu", ad.Relu) }, "Relu")
	case LeakyRelu:
		a := rapid.SampledFrom([]float32{0.01, 0.1, 0.3}).Draw(t, "slope")
		return same(func() model.Layer {
			return watchedFunc(g.kinks, "LeakyRelu", func(x ad.Var) ad.Var { return ad.LeakyRelu(x, float64(a)) })
		}, fmt.Sprintf("LeakyRelu(%g)", a))
	case Elu:
		a := rapid.SampledFrom([]float32{1, 0.5}).Draw(t, "alpha")
		return same(func() model.Layer {
			return watchedFunc(g.kinks, "Elu", func(x ad.Var) ad.Var { return ad.Elu(x, float64(a)) })
		}, fmt.Sprintf("Elu(%g)", a))
	case Skip:
		in := g.chain(s, depth+1, true)
		return same(func() model.Layer { return model.Skip(in.make(), ad.Add) }, "Skip("+in.desc+", Add)")
	case Parallel:
		return g.parallel(s, depth, preserve)
	case Chain:
		return g.chain(s, depth+1, preserve)
	}
	panic("proptest: unknown layer kind " + string(k))
}

// dense draws a Dense on the last axis of s.
func (g *stackGen) dense(s []int, preserve bool) drawn {
	in := s[len(s)-1]
	out := in
	if !preserve || len(s) == 2 {
		hi := min(g.o.MaxChannels+2, g.o.MaxElems*in/numel(s))
		out = rapid.IntRange(1, max(hi, 1)).Draw(g.t, "denseOut")
	}
	noBias := rapid.IntRange(0, 4).Draw(g.t, "noBias") == 0
	o := slices.Clone(s)
	o[len(o)-1] = out
	desc := fmt.Sprintf("Dense %d→%d", in, out)
	if noBias {
		desc += " nobias"
	}
	return drawn{func() model.Layer {
		if noBias {
			return model.Dense(in, out, model.NoBias())
		}
		return model.Dense(in, out)
	}, o, desc}
}

// normEps are the Eps of the normalisation layers drawn, and minNormGroup
// the fewest values they normalise together. A group of two or three
// values makes the layer's derivatives vary on a scale that float32 finite
// differences cannot resolve. So does a group of nearly equal values with
// PyTorch's eps of 1e-5. The rules are the same for any eps and group.
var normEps = []float32{0.1, 0.5}

const minNormGroup = 4

// weights make the layers that change shapes and hold parameters more
// frequent than the eight activations. A kind not listed has weight 1.
var weights = map[Kind]int{Dense: 4, Conv: 6, ConvTranspose: 3, MeanPool: 2, MaxPool: 2, Skip: 2, Parallel: 2}

// weighted repeats each kind of c by its weight, for a uniform draw.
func weighted(c []Kind) []Kind {
	var out []Kind
	for _, k := range c {
		for range max(weights[k], 1) {
			out = append(out, k)
		}
	}
	return out
}

// divisors returns the divisors of n in increasing order.
func divisors(n int) []int {
	var d []int
	for i := 1; i <= n; i++ {
		if n%i == 0 {
			d = append(d, i)
		}
	}
	return d
}

// conv draws a convolution on s = (N, C, spatial…), or a transposed one
// with transpose. It draws kernel 1-3, stride 1-2, per-side padding,
// dilation 1-2, output padding and groups, sometimes depthwise. With
// preserve the stride is 1 and the padding keeps the spatial size.
func (g *stackGen) conv(s []int, preserve, transpose bool) drawn {
	t := g.t
	d := len(s) - 2
	kernel, stride, lo, hi, dil, opad := make([]int, d), make([]int, d), make([]int, d), make([]int, d), make([]int, d), make([]int, d)
	out := slices.Clone(s)
	for i := range d {
		size := s[2+i]
		k := rapid.IntRange(1, 3).Draw(t, "kernel")
		dl := 1
		if k > 1 && rapid.IntRange(0, 2).Draw(t, "dilated") == 0 {
			dl = 2
		}
		st, pl, ph, op := 1, 0, 0, 0
		switch {
		case preserve:
			pl = rapid.IntRange(0, dl*(k-1)).Draw(t, "padLo")
			ph = dl*(k-1) - pl
		case transpose:
			st = rapid.IntRange(1, 2).Draw(t, "stride")
			pl = rapid.IntRange(0, k-1).Draw(t, "padLo")
			ph = rapid.IntRange(0, k-1).Draw(t, "padHi")
			op = rapid.IntRange(0, max(st, dl)-1).Draw(t, "outputPad")
			for (size-1)*st-pl-ph+dl*(k-1)+op+1 < 1 {
				if pl > 0 {
					pl--
				} else {
					ph--
				}
			}
		default:
			st = rapid.IntRange(1, 2).Draw(t, "stride")
			pl = rapid.IntRange(0, k-1).Draw(t, "padLo")
			ph = rapid.IntRange(0, k-1).Draw(t, "padHi")
			if size+pl+ph < dl*(k-1)+1 {
				dl = 1
				k = min(k, size+pl+ph)
			}
		}
		kernel[i], stride[i], lo[i], hi[i], dil[i], opad[i] = k, st, pl, ph, dl, op
		if transpose {
			out[2+i] = (size-1)*st - pl - ph + dl*(k-1) + op + 1
		} else {
			out[2+i] = (size+pl+ph-dl*(k-1)-1)/st + 1
		}
	}
	if numel(out[2:])*s[0] > g.o.MaxElems {
		// Padding or upsampling grew the activation past the bound: fall
		// back to a 1×…×1 kernel, no padding.
		for i := range d {
			kernel[i], stride[i], lo[i], hi[i], dil[i], opad[i] = 1, 1, 0, 0, 1, 0
			out[2+i] = s[2+i]
		}
	}
	cin := s[1]
	maxC := max(min(g.o.MaxChannels, g.o.MaxElems/(s[0]*numel(out[2:]))), 1)
	var groups, cout int
	if cin <= maxC && rapid.IntRange(0, 3).Draw(t, "depthwise") == 0 {
		groups, cout = cin, cin
	} else {
		var ok []int
		for _, v := range divisors(cin) {
			if v <= maxC {
				ok = append(ok, v)
			}
		}
		groups = rapid.SampledFrom(ok).Draw(t, "groups")
		cout = groups * rapid.IntRange(1, maxC/groups).Draw(t, "outPerGroup")
	}
	out[1] = cout
	noBias := rapid.IntRange(0, 4).Draw(t, "noBias") == 0
	name := "Conv"
	if transpose {
		name = "ConvTranspose"
	}
	desc := fmt.Sprintf("%s%dd k=%v %d→%d", name, d, kernel, cin, cout)
	// Both convolutions take every option but OutputPad.
	var convOpts []model.ConvOption
	var transOpts []model.ConvTransposeOption
	both := func(o interface {
		model.ConvOption
		model.ConvTransposeOption
	}) {
		convOpts, transOpts = append(convOpts, o), append(transOpts, o)
	}
	both(model.PadSides(lo, hi))
	notAll := func(v []int, x int) bool { return slices.ContainsFunc(v, func(y int) bool { return y != x }) }
	if notAll(stride, 1) {
		desc += fmt.Sprintf(" stride=%v", stride)
		both(model.Stride(stride...))
	}
	if notAll(lo, 0) || notAll(hi, 0) {
		desc += fmt.Sprintf(" pad=%v/%v", lo, hi)
	}
	if notAll(dil, 1) {
		desc += fmt.Sprintf(" dil=%v", dil)
		both(model.Dilation(dil...))
	}
	if notAll(opad, 0) {
		desc += fmt.Sprintf(" outpad=%v", opad)
		transOpts = append(transOpts, model.OutputPad(opad...))
	}
	if groups > 1 {
		desc += fmt.Sprintf(" groups=%d", groups)
		both(model.Groups(groups))
	}
	if noBias {
		desc += " nobias"
		both(model.NoBias())
	}
	if transpose {
		return drawn{func() model.Layer { return model.ConvTranspose(kernel, cin, cout, transOpts...) }, out, desc}
	}
	return drawn{func() model.Layer { return model.Conv(kernel, cin, cout, convOpts...) }, out, desc}
}

// pool draws a max- or mean-pool on s. It draws a kernel of 1-3, at most
// the size; a stride from 1 to the kernel; and padding on each side
// smaller than the kernel. With preserve the stride is 1 and the padding
// keeps the spatial size.
func (g *stackGen) pool(k Kind, s []int, preserve bool) drawn {
	t := g.t
	d := len(s) - 2
	geom := ad.PoolGeom{Kernel: make([]int, d), Stride: make([]int, d), PadLo: make([]int, d), PadHi: make([]int, d)}
	out := slices.Clone(s)
	for i := range d {
		size := s[2+i]
		kk := rapid.IntRange(1, min(3, size)).Draw(t, "poolKernel")
		st, pl, ph := 1, 0, 0
		if preserve {
			pl = rapid.IntRange(0, kk-1).Draw(t, "padLo")
			ph = kk - 1 - pl
		} else {
			st = rapid.IntRange(1, kk).Draw(t, "poolStride")
			pl = rapid.IntRange(0, kk-1).Draw(t, "padLo")
			ph = rapid.IntRange(0, kk-1).Draw(t, "padHi")
		}
		geom.Kernel[i], geom.Stride[i], geom.PadLo[i], geom.PadHi[i] = kk, st, pl, ph
		out[2+i] = (size+pl+ph-kk)/st + 1
	}
	if numel(out) > g.o.MaxElems {
		for i := range d {
			geom.PadLo[i], geom.PadHi[i], geom.Stride[i] = 0, 0, geom.Kernel[i]
			out[2+i] = (s[2+i]-geom.Kernel[i])/geom.Kernel[i] + 1
		}
	}
	desc := fmt.Sprintf("%s k=%v stride=%v pad=%v/%v", k, geom.Kernel, geom.Stride, geom.PadLo, geom.PadHi)
	opts := []model.PoolOption{model.Stride(geom.Stride...), model.PadSides(geom.PadLo, geom.PadHi)}
	if k == MeanPool {
		return drawn{func() model.Layer { return model.MeanPool(geom.Kernel, opts...) }, out, desc}
	}
	return drawn{func() model.Layer {
		return &watchedPool{Layer: model.MaxPool(geom.Kernel, opts...), k: g.kinks, id: g.kinks.watch()}
	}, out, desc}
}

// parallel draws 2 or 3 branches on s. Each is a shape-preserving chain.
// Unless preserve, each is followed by a tail of one drawn geometry, made
// anew for each branch, so that the branches' outputs have equal shapes.
func (g *stackGen) parallel(s []int, depth int, preserve bool) drawn {
	t := g.t
	n := rapid.IntRange(2, 3).Draw(t, "branches")
	var tail *drawn
	out := s
	if !preserve && rapid.Bool().Draw(t, "tail") {
		var c []Kind
		for _, k := range g.candidates(s, g.o.MaxDepth, false) {
			if !kinds[k].container {
				c = append(c, k)
			}
		}
		if len(c) > 0 {
			d := g.layer(rapid.SampledFrom(c).Draw(t, "tailKind"), s, depth, false)
			tail, out = &d, d.out
		}
	}
	branches := make([]drawn, n)
	descs := make([]string, n)
	for i := range branches {
		branches[i] = g.chain(s, depth+1, true)
		descs[i] = branches[i].desc
		if tail != nil {
			descs[i] = "Chain(" + descs[i] + ", " + tail.desc + ")"
		}
	}
	return drawn{func() model.Layer {
		ls := make([]model.Layer, n)
		for i, b := range branches {
			ls[i] = b.make()
			if tail != nil {
				ls[i] = model.Chain(ls[i], tail.make())
			}
		}
		return model.Parallel(ad.Add, ls...)
	}, out, "Parallel(Add, " + strings.Join(descs, ", ") + ")"}
}
