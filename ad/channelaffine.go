package ad

import "fmt"

// ChannelAffine returns (x − mean)·scale + shift per channel, for x of
// shape (N, C) or (N, C, spatial…) and mean, scale and shift of shape (C).
// It is batch normalisation in test mode, with scale = γ/√(running σ² + ε).
// It runs in one pass, split over goroutines by channel for a large x, with
// the same bits for any number of them. It is differentiable in all four
// inputs, to any order.
func ChannelAffine(x, mean, scale, shift Var) Var {
	return Apply(channelAffineOp, Attrs{}, x, mean, scale, shift)
}

type channelAffinePrim struct{}

var channelAffineOp = &channelAffinePrim{}

func (*channelAffinePrim) Name() string { return "ChannelAffine" }
func (*channelAffinePrim) Shape(dst []int, in [][]int, _ Attrs) ([]int, error) {
	c, err := bnShape(in[0])
	if err != nil {
		return dst, err
	}
	for i, what := range []string{"mean", "scale", "shift"} {
		if err := bnCheck(what, in[1+i], c); err != nil {
			return dst, fmt.Errorf("%w (one per channel of x %v)", err, in[0])
		}
	}
	return append(dst, in[0]...), nil
}

func (*channelAffinePrim) Forward(f *Forward) {
	bnRun(bnJob{kind: bnKindAffine, out: f.Out.Data, x: f.In[0].Data, st: f.In[1].Data,
		gamma: f.In[2].Data, beta: f.In[3].Data, d: bnDimsOf(f.In[0].Shape)})
}

// JVP, each part left out where its tangents are zero:
//
//	ẏ = (ẋ − μ̇)·a + (x − μ)·ȧ + ḃ
//	  = ChannelAffine(ẋ, 0, a, 0) + ChannelAffine(x, μ, ȧ, ḃ − μ̇·a)
func (*channelAffinePrim) JVP(r *Rule) Var {
	x, mu, a := r.In[0], r.In[1], r.In[2]
	tx, tmu, ta, tb := r.Tangent(0), r.Tangent(1), r.Tangent(2), r.Tangent(3)
	c := a.Shape()[0]
	var out Var
	if !tx.IsZero() {
		zero := r.t.Full(0, c)
		out = ChannelAffine(tx, zero, a, zero)
	}
	if ta.IsZero() && tb.IsZero() && tmu.IsZero() {
		return out
	}
	shift := tb
	if !tmu.IsZero() {
		shift = addOrSet(shift, Neg(Mul(tmu, a)))
	}
	if shift.IsZero() {
		shift = r.t.Full(0, c)
	}
	if ta.IsZero() {
		ta = r.t.Full(0, c)
	}
	return addOrSet(out, ChannelAffine(x, mu, ta, shift))
}

// VJP: x̄ = c·a, ā = Σ c·(x − μ), μ̄ = −a·Σc, b̄ = Σc, the sums per channel.
func (*channelAffinePrim) VJP(r *Rule, cot Var) {
	x, mu, a := r.In[0], r.In[1], r.In[2]
	s := x.Shape()
	C := s[1]
	var keep [maxRank]int
	for i := range s {
		keep[i] = 1
	}
	keep[1] = C
	k := keep[:len(s)]
	if r.Need(0) {
		zero := r.t.Full(0, C)
		r.AddGrad(0, ChannelAffine(cot, zero, a, zero))
	}
	if r.Need(2) {
		r.AddGrad(2, Reshape(SumTo(Mul(cot, Sub(x, Reshape(mu, k...))), k...), C))
	}
	if r.Need(1) || r.Need(3) {
		sc := Reshape(SumTo(cot, k...), C)
		r.AddGrad(3, sc)
		if r.Need(1) {
			r.AddGrad(1, Neg(Mul(a, sc)))
		}
	}
}
