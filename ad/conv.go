package ad

import (
	"fmt"
	"slices"

	"github.com/flatkit/flatkit/internal/conv"
	"github.com/flatkit/flatkit/internal/geom"
)

// ConvGeom is the geometry shared by Conv, ConvTranspose and ConvFilter,
// NNlib-style: one value of plain fields, for 1-, 2- and 3-D convolutions in
// PyTorch's layout. Per spatial axis, the output size o follows from the
// input size s and the kernel size k:
//
//	x: (N, Cin, s1, …)   w: (Cout, Cin/Groups, k1, …)   y: (N, Cout, o1, …)
//	o = (s + PadLo + PadHi − Dilation·(k−1) − 1)/Stride + 1
//
// Each slice holds one value per spatial axis, or a single value used for
// every axis, or is empty for the default; PoolGeom follows the same rule.
// An empty PadHi means the same padding as PadLo: symmetric, as PyTorch's
// padding is. The zero ConvGeom is stride 1, no padding, dilation 1 and one
// group. Groups = Cin = Cout is a depthwise convolution.
type ConvGeom struct {
	Stride   []int // default 1
	PadLo    []int // zeros added before each spatial axis; default 0
	PadHi    []int // zeros added after each spatial axis; default PadLo
	Dilation []int // spacing of the kernel taps; default 1
	Groups   int   // default 1; must divide Cin and Cout
}

// Conv returns the convolution of x with the filter w: a cross-correlation,
// as in PyTorch. x is (N, Cin, spatial…) with 1 to 3 spatial axes, w is
// (Cout, Cin/Groups, k…), and the result is (N, Cout, out…).
func Conv(x, w Var, g ConvGeom) Var {
	return applyConv(convOp, g, x.Shape(), nil, x, w)
}

// ConvBias returns Conv(x, w, g) + b, with the bias b of shape (Cout)
// added along the channel axis: a conv layer's affine map as one op. The blocked
// kernel starts its sums at the bias, so the bias costs no pass over the
// output; its derivatives are those of Conv and of a broadcast add.
func ConvBias(x, w, b Var, g ConvGeom) Var {
	return applyConv(convBiasOp, g, x.Shape(), nil, x, w, b)
}

// ConvBiasRelu returns the Relu of ConvBias as one op. Where the blocked
// kernel applies, ReLU is taken in registers before the sums are stored,
// so the pair costs no pass over the output. Its derivative masks
// the cotangent by the output's sign, as Relu's: Relu'(0) = 0.
func ConvBiasRelu(x, w, b Var, g ConvGeom) Var {
	return applyConv(convBiasReluOp, g, x.Shape(), nil, x, w, b)
}

// ConvTranspose returns the transposed convolution of u with w: the data
// gradient of Conv, NNlib's ∇conv_data, the adjoint of x ↦ Conv(x, w, g).
// u is (N, Cout, out…) and w is (Cout, Cin/Groups, k…). xShape is the
// shape of the result, (N, Cin, spatial…): the input shape of the
// convolution it transposes. With stride > 1 several input sizes give the
// same output size, so it must be given.
func ConvTranspose(u, w Var, g ConvGeom, xShape ...int) Var {
	return applyConv(convTOp, g, xShape, xShape, u, w)
}

// ConvFilter returns the filter gradient of Conv, NNlib's ∇conv_filter: the
// adjoint of w ↦ Conv(x, w, g), applied to u of the output's shape,
// (N, Cout, out…). wShape is the filter's shape, (Cout, Cin/Groups, k…).
func ConvFilter(x, u Var, g ConvGeom, wShape ...int) Var {
	return applyConv(convFOp, g, x.Shape(), wShape, x, u)
}

type (
	convPrim  struct{}
	convTPrim struct{}
	convFPrim struct{}
	// convBiasPrim is ConvBias, and ConvBiasRelu when relu is set.
	convBiasPrim struct{ relu bool }
)

var (
	convOp         = &convPrim{}
	convTOp        = &convTPrim{}
	convFOp        = &convFPrim{}
	convBiasOp     = &convBiasPrim{}
	convBiasReluOp = &convBiasPrim{relu: true}
)

// The attributes of the three primitives are
//
//	[r, stride×r, padLo×r, padHi×r, dilation×r, groups, target×(r+2)]
//
// where r is the number of spatial axes and target is the result's shape
// for ConvTranspose (x) and ConvFilter (w), and zeros for Conv.

// applyConv expands g for a rank taken from rankShape (a shape with two
// leading axes) and applies p to in, assembling the attributes in the
// tape's arena.
func applyConv(p Primitive, g ConvGeom, rankShape, target []int, in ...Var) Var {
	var t *Tape
	for _, v := range in {
		if v.t != nil {
			t = v.t
			break
		}
	}
	ok := t != nil && t.err == nil
	for _, v := range in {
		ok = ok && t.check(p.Name(), v)
	}
	if !ok {
		return Apply(p, Attrs{}, in...) // panics on zero Vars, or returns the failed Var
	}
	r := len(rankShape) - 2
	if r < 1 || r > 3 {
		return t.fail(errorf("%s: want shape (N, C, spatial…) with 1 to 3 spatial axes, got %v", p.Name(), slices.Clone(rankShape)))
	}
	if target != nil && len(target) != r+2 {
		return t.fail(errorf("%s: target shape %v has rank %d, want %d", p.Name(), slices.Clone(target), len(target), r+2))
	}
	ints := t.ints.alloc(5*r + 4)
	ints[0] = r
	for i, f := range [...]struct {
		name string
		v    []int
		def  int
	}{{"ConvGeom.Stride", g.Stride, 1}, {"ConvGeom.Dilation", g.Dilation, 1}} {
		if err := geom.Axes(ints[1+3*i*r:1+(3*i+1)*r], f.name, f.v, f.def); err != nil {
			return t.fail(errorf("%s: %w", p.Name(), err))
		}
	}
	if err := geom.Pads(ints[1+r:1+2*r], ints[1+2*r:1+3*r], "ConvGeom.PadLo", "ConvGeom.PadHi", g.PadLo, g.PadHi); err != nil {
		return t.fail(errorf("%s: %w", p.Name(), err))
	}
	ints[1+4*r] = g.Groups
	if g.Groups == 0 {
		ints[1+4*r] = 1
	}
	tail := ints[2+4*r:]
	if target != nil {
		copy(tail, target)
	} else {
		clear(tail)
	}
	return Apply(p, Attrs{Ints: ints}, in...)
}

// convAttrs are the decoded attributes.
type convAttrs struct {
	r                          int
	stride, plo, phi, dil, tgt []int
	groups                     int
}

func decodeConv(a Attrs) (convAttrs, error) {
	if len(a.Ints) == 0 {
		return convAttrs{}, fmt.Errorf("attributes are empty; want [r, stride, padLo, padHi, dilation, groups, target]")
	}
	r := a.Ints[0]
	if r < 1 || r > 3 || len(a.Ints) != 5*r+4 {
		return convAttrs{}, fmt.Errorf("malformed attributes %v: want rank 1 to 3 and 5·rank+4 values", a.Ints)
	}
	x := a.Ints
	return convAttrs{r: r, stride: x[1 : 1+r], plo: x[1+r : 1+2*r], phi: x[1+2*r : 1+3*r],
		dil: x[1+3*r : 1+4*r], groups: x[1+4*r], tgt: x[2+4*r:]}, nil
}

// geom checks the shapes of x and w against the attributes and returns the
// kernel geometry (spatial axes padded to three).
func (c *convAttrs) geom(xs, ws []int) (conv.Geom, error) {
	var g conv.Geom
	r := c.r
	if len(xs) != r+2 {
		return g, fmt.Errorf("input shape %v has rank %d, want %d: (N, Cin, %d spatial axes)", xs, len(xs), r+2, r)
	}
	if len(ws) != r+2 {
		return g, fmt.Errorf("filter shape %v has rank %d, want %d: (Cout, Cin/groups, %d kernel axes)", ws, len(ws), r+2, r)
	}
	if c.groups < 1 {
		return g, fmt.Errorf("groups = %d, want ≥ 1", c.groups)
	}
	g.N, g.Cin, g.Cout, g.Groups = xs[0], xs[1], ws[0], c.groups
	switch {
	case g.Cin%g.Groups != 0 || g.Cout%g.Groups != 0:
		return g, fmt.Errorf("groups = %d must divide Cin = %d and Cout = %d", g.Groups, g.Cin, g.Cout)
	case ws[1]*g.Groups != g.Cin:
		return g, fmt.Errorf("filter shape %v: want %d input channels per group (Cin %d / groups %d), got %d", ws, g.Cin/g.Groups, g.Cin, g.Groups, ws[1])
	}
	for i := range xs {
		if xs[i] < 0 || ws[i] < 0 {
			return g, fmt.Errorf("negative dimension in shapes %v and %v, want each ≥ 0", xs, ws)
		}
	}
	for a := 0; a < 3; a++ {
		g.In[a], g.K[a], g.Out[a], g.Stride[a], g.Dil[a] = 1, 1, 1, 1, 1
	}
	for j := 0; j < r; j++ {
		a := 3 - r + j
		s, k, st, d, lo, hi := xs[2+j], ws[2+j], c.stride[j], c.dil[j], c.plo[j], c.phi[j]
		switch {
		case st < 1:
			return g, fmt.Errorf("stride %v: want every value ≥ 1", c.stride)
		case d < 1:
			return g, fmt.Errorf("dilation %v: want every value ≥ 1", c.dil)
		case lo < 0 || hi < 0:
			return g, fmt.Errorf("padding lo %v hi %v: want every value ≥ 0", c.plo, c.phi)
		case k < 1:
			return g, fmt.Errorf("filter shape %v: kernel size must be ≥ 1", ws)
		}
		span := d*(k-1) + 1
		if s+lo+hi < span {
			return g, fmt.Errorf("spatial axis %d: padded input size %d+%d+%d is smaller than the dilated kernel %d (input %v, filter %v)", j, s, lo, hi, span, xs, ws)
		}
		g.In[a], g.K[a], g.Stride[a], g.Dil[a], g.PadLo[a] = s, k, st, d, lo
		g.Out[a] = (s+lo+hi-span)/st + 1
	}
	return g, nil
}

// knownGeom is geom for shapes that Shape has already checked, with the
// output shape ys (N, Cout, out…) given: the kernels' Forward methods
// build their geometry without checking it again or dividing.
func (c *convAttrs) knownGeom(xs, ws, ys []int) conv.Geom {
	g := conv.Geom{N: xs[0], Cin: xs[1], Cout: ws[0], Groups: c.groups}
	for a := 0; a < 3; a++ {
		g.In[a], g.K[a], g.Out[a], g.Stride[a], g.Dil[a] = 1, 1, 1, 1, 1
	}
	for j := 0; j < c.r; j++ {
		a := 3 - c.r + j
		g.In[a], g.K[a], g.Out[a] = xs[2+j], ws[2+j], ys[2+j]
		g.Stride[a], g.Dil[a], g.PadLo[a] = c.stride[j], c.dil[j], c.plo[j]
	}
	return g
}

// outShape appends the convolution's output shape (N, Cout, out…).
func (c *convAttrs) outShape(dst []int, g *conv.Geom) []int {
	dst = append(dst, g.N, g.Cout)
	return append(dst, g.Out[3-c.r:]...)
}

// withTarget returns a's attributes with the target shape replaced, in the
// tape's arena.
func withTarget(t *Tape, a Attrs, target []int) Attrs {
	ints := t.ints.alloc(len(a.Ints))
	copy(ints, a.Ints)
	copy(ints[len(ints)-len(target):], target)
	return Attrs{Ints: ints}
}

// adjointShape is the Shape rule of ConvTranspose and ConvFilter. Each is
// the adjoint of Conv in one argument, so its output has the target shape
// (the attributes' tgt), and the convolution of x with w must have the
// shape the other operand has (have, named by what in the error).
func (c *convAttrs) adjointShape(dst, x, w, have []int, what string) ([]int, error) {
	g, err := c.geom(x, w)
	if err != nil {
		return dst, err
	}
	n0 := len(dst)
	dst = c.outShape(dst, &g)
	if !slices.Equal(dst[n0:], have) {
		return dst[:n0], fmt.Errorf("%s shape %v: want %v, the output shape of a convolution of %v with filter %v", what, have, dst[n0:], x, w)
	}
	return append(dst[:n0], c.tgt...), nil
}

func (*convPrim) Name() string { return "Conv" }

func (*convPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	c, g, err := decodeConvGeom(a, in)
	if err != nil {
		return dst, err
	}
	return c.outShape(dst, &g), nil
}

// decodeConvGeom decodes a convolution's attributes and its geometry for
// the input and filter shapes in[0] and in[1].
func decodeConvGeom(a Attrs, in [][]int) (convAttrs, conv.Geom, error) {
	c, err := decodeConv(a)
	if err != nil {
		return c, conv.Geom{}, err
	}
	g, err := c.geom(in[0], in[1])
	return c, g, err
}

func (*convPrim) Forward(f *Forward) {
	c, _ := decodeConv(f.Attrs)
	g := c.knownGeom(f.In[0].Shape, f.In[1].Shape, f.Out.Shape)
	conv.Forward(f.Out.Data, f.In[0].Data, f.In[1].Data, &g)
}

// JVP: Conv is bilinear, so
//
//	d Conv(x, w) = Conv(dx, w) + Conv(x, dw)
func (*convPrim) JVP(r *Rule) Var { return bilinearJVP(convOp, r) }

// VJP:
//
//	x̄ = ConvTranspose(ȳ, w),  w̄ = ConvFilter(x, ȳ)
func (*convPrim) VJP(r *Rule, cot Var) {
	x := r.In[0]
	if r.Need(0) {
		r.AddGrad(0, Apply(convTOp, withTarget(r.t, r.Attrs, x.Shape()), cot, r.In[1]))
	}
	filterGrad(r, 1, x, cot)
}

// filterGrad adds w̄ = ConvFilter(x, c̄) for the weight, input i of r. A
// layer's weight is a View of the parameters used once, so in a Backward
// the filter gradient is computed straight into its range of the gradient
// buffer (Rule.gradDest), not copied there at the end of the sweep: a
// ResNet-18's 11M weights made that copy 44 MB a step.
func filterGrad(r *Rule, i int, x, cot Var) {
	if !r.Need(i) {
		return
	}
	w := r.In[i]
	r.AddGrad(i, applyInto(r.gradDest(i), convFOp, withTarget(r.t, r.Attrs, w.Shape()), x, cot))
}

func (*convTPrim) Name() string { return "ConvTranspose" }

func (*convTPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	c, err := decodeConv(a)
	if err != nil {
		return dst, err
	}
	return c.adjointShape(dst, c.tgt, in[1], in[0], "input")
}

func (*convTPrim) Forward(f *Forward) {
	c, _ := decodeConv(f.Attrs)
	g := c.knownGeom(c.tgt, f.In[1].Shape, f.In[0].Shape)
	conv.Data(f.Out.Data, f.In[0].Data, f.In[1].Data, &g)
}

// JVP: ConvTranspose is bilinear in (u, w).
func (*convTPrim) JVP(r *Rule) Var { return bilinearJVP(convTOp, r) }

// VJP, from the adjoint identities of the first line:
//
//	⟨ConvT(u, w), z⟩ = ⟨u, Conv(z, w)⟩ = ⟨w, ConvFilter(z, u)⟩
//	ū = Conv(z̄, w),  w̄ = ConvFilter(z̄, u)
func (*convTPrim) VJP(r *Rule, cot Var) {
	u, w := r.In[0], r.In[1]
	if r.Need(0) {
		r.AddGrad(0, Apply(convOp, r.Attrs, cot, w))
	}
	if r.Need(1) {
		r.AddGrad(1, Apply(convFOp, withTarget(r.t, r.Attrs, w.Shape()), cot, u))
	}
}

func (*convFPrim) Name() string { return "ConvFilter" }

func (*convFPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	c, err := decodeConv(a)
	if err != nil {
		return dst, err
	}
	return c.adjointShape(dst, in[0], c.tgt, in[1], "output cotangent")
}

func (*convFPrim) Forward(f *Forward) {
	c, _ := decodeConv(f.Attrs)
	g := c.knownGeom(f.In[0].Shape, c.tgt, f.In[1].Shape)
	conv.Filter(f.Out.Data, f.In[0].Data, f.In[1].Data, &g)
}

// JVP: ConvFilter is bilinear in (x, u).
func (*convFPrim) JVP(r *Rule) Var { return bilinearJVP(convFOp, r) }

// VJP, from the adjoint identities of the first line:
//
//	⟨ConvFilter(x, u), v⟩ = ⟨Conv(x, v), u⟩ = ⟨x, ConvT(u, v)⟩
//	x̄ = ConvTranspose(u, v̄),  ū = Conv(x, v̄)
func (*convFPrim) VJP(r *Rule, cot Var) {
	x, u := r.In[0], r.In[1]
	if r.Need(0) {
		r.AddGrad(0, Apply(convTOp, withTarget(r.t, r.Attrs, x.Shape()), u, cot))
	}
	if r.Need(1) {
		r.AddGrad(1, Apply(convOp, r.Attrs, x, cot))
	}
}

func (p *convBiasPrim) Name() string {
	if p.relu {
		return "ConvBiasRelu"
	}
	return "ConvBias"
}

func (*convBiasPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	c, g, err := decodeConvGeom(a, in)
	if err != nil {
		return dst, err
	}
	if len(in[2]) != 1 || in[2][0] != g.Cout {
		return dst, fmt.Errorf("bias shape %v: want [%d], one value per output channel", in[2], g.Cout)
	}
	return c.outShape(dst, &g), nil
}

func (p *convBiasPrim) Forward(f *Forward) {
	c, _ := decodeConv(f.Attrs)
	g := c.knownGeom(f.In[0].Shape, f.In[1].Shape, f.Out.Shape)
	conv.ForwardBias(f.Out.Data, f.In[0].Data, f.In[1].Data, f.In[2].Data, p.relu, &g)
}

// biasShape returns (Cout, 1, …, 1) for an output of y's rank, in buf: the
// bias as it broadcasts against the output.
func biasShape(buf *[maxRank]int, y []int) []int {
	s := buf[:len(y)-1]
	s[0] = y[1]
	for i := 1; i < len(s); i++ {
		s[i] = 1
	}
	return s
}

// JVP, masked by the output's sign for ConvBiasRelu:
//
//	ẏ = Conv(ẋ, w) + Conv(x, ẇ) + ḃ
func (p *convBiasPrim) JVP(r *Rule) Var {
	t := bilinearJVP(convOp, r)
	if tb := r.Tangent(2); !tb.IsZero() {
		var buf [maxRank]int
		ys := r.Out.Shape()
		bb := Reshape(tb, biasShape(&buf, ys)...)
		if t.IsZero() {
			t = BroadcastTo(bb, ys...)
		} else {
			t = Add(t, bb)
		}
	}
	if p.relu && !t.IsZero() {
		t = maskPositive(t, r.Out)
	}
	return t
}

// VJP, with c̄ the cotangent, masked by the output's sign for ConvBiasRelu:
//
//	x̄ = ConvTranspose(c̄, w),  w̄ = ConvFilter(x, c̄)
//
// and b̄ is c̄ summed over every axis but the channels.
func (p *convBiasPrim) VJP(r *Rule, cot Var) {
	x := r.In[0]
	if p.relu {
		cot = maskPositive(cot, r.Out)
	}
	if r.Need(0) {
		r.AddGrad(0, Apply(convTOp, withTarget(r.t, r.Attrs, x.Shape()), cot, r.In[1]))
	}
	filterGrad(r, 1, x, cot)
	if r.Need(2) {
		var buf [maxRank]int
		r.AddGrad(2, Reshape(SumTo(cot, biasShape(&buf, cot.Shape())...), r.In[2].Shape()...))
	}
}
