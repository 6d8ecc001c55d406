package ad

import (
	"fmt"
	"slices"
)

// Batch normalisation in training mode as fused primitives. Written with
// the broadcasting ops, one BatchNorm is about eleven ops: six full-size
// passes forward and as many again, with their temporaries, backward. Here
// it is four passes over the data: the statistics (one read), the
// normalisation (a read and a write), and backward the per-channel sums
// of ȳ and ȳ·x̂ (one read) and the input's cotangent (a read and a write).
//
// Four primitives, for x of shape (N, C, spatial…) with m = N·prod(spatial)
// values per channel, S = (μ; σ²) the (2, C) batch statistics and
// s = 1/√(σ² + ε):
//
//	BatchNormStats(x)           = S: μ and the biased σ², accumulated in float64
//	BatchNorm(x, S, γ, β)       = (x − μ)·γ·s + β
//	BatchNormSums(x, S, g)      = (Σ g; Σ g·x̂), x̂ = (x − μ)·s
//	BatchNormBackData(x, S, g, T, γ) = γ·s·(g − T₀/m − x̂·T₁/m)
//
// The normalisation's S input is a residual: BatchNorm (the function)
// makes it from x, so the normalisation's rules differentiate the whole map
// x ↦ y (S's dependence on x included) and give S nothing. Its Jacobian
// with respect to x is γ·s·(I − 𝟙𝟙ᵀ/m − x̂x̂ᵀ/m) per channel, a symmetric
// map, so both its VJP and its JVP are BackData after Sums; γ and β enter
// linearly, as (x̂, 1) which is the normalisation itself with (γ̇, β̇) in
// place of (γ, β). Stats, Sums and BackData are ordinary functions of all
// their inputs; their rules are written with the broadcasting ops (slow,
// but only second and higher derivatives use them), so derivatives of any
// order compose.

type (
	bnStatsPrim    struct{}
	bnNormPrim     struct{}
	bnSumsPrim     struct{}
	bnBackDataPrim struct{}
)

var (
	bnStatsOp    = &bnStatsPrim{}
	bnNormOp     = &bnNormPrim{}
	bnSumsOp     = &bnSumsPrim{}
	bnBackDataOp = &bnBackDataPrim{}
)

// BatchNorm normalises x per channel with its batch statistics, as
// PyTorch's BatchNorm in training mode. x is (N, C) or (N, C, spatial…),
// with the channels on axis 1:
//
//	y = (x − μ)/√(σ² + eps)·gamma + beta
//
// μ and the biased variance σ² are taken over the N·prod(spatial) values of
// each channel. gamma and beta are (C), or both the zero Var for no affine
// map. stats is (2, C), for a caller's running statistics: μ in row 0 and
// σ² in row 1, accumulated in float64. It is differentiable too.
//
// y's derivatives, of any order and in both modes, account for the
// statistics' dependence on x.
func BatchNorm(x, gamma, beta Var, eps float32) (y, stats Var) {
	if x.t == nil {
		panic("ad: BatchNorm of the zero Var")
	}
	if gamma.IsZero() != beta.IsZero() {
		return x.t.fail(errorf("BatchNorm: gamma and beta must be both given or both the zero Var")), x.t.failed()
	}
	stats = Apply(bnStatsOp, Attrs{}, x)
	eps1 := [1]float64{float64(eps)}
	a := Attrs{Floats: eps1[:]}
	if gamma.IsZero() {
		return Apply(bnNormOp, a, x, stats), stats
	}
	return Apply(bnNormOp, a, x, stats, gamma, beta), stats
}

// bnShape checks x's shape for the batch-norm primitives and returns C.
func bnShape(x []int) (int, error) {
	if len(x) < 2 || len(x) > maxRank {
		return 0, fmt.Errorf("input shape %v, want (N, C) or (N, C, spatial…) of rank 2 to %d", slices.Clone(x), maxRank)
	}
	if x[0]*x[1] == 0 {
		return 0, fmt.Errorf("input shape %v is empty, want N ≥ 1 and C ≥ 1", slices.Clone(x))
	}
	return x[1], nil
}

// bnCheck checks that s is the shape want: (C), (2, C) or x's shape.
func bnCheck(what string, s []int, want ...int) error {
	if !slices.Equal(s, want) {
		return fmt.Errorf("%s has shape %v, want %v", what, slices.Clone(s), slices.Clone(want))
	}
	return nil
}

// bnInputs checks the inputs and attributes that the primitives with an
// optional affine map (BatchNorm and BackData) share: x, in either n or
// nAffine inputs (want lists them), the stats and eps. It returns C.
func bnInputs(in [][]int, a Attrs, n, nAffine int, want string) (int, error) {
	c, err := bnShape(in[0])
	if err != nil {
		return 0, err
	}
	if len(in) != n && len(in) != nAffine || len(a.Floats) != 1 {
		return 0, fmt.Errorf("%d inputs and %d float attributes, want %s and eps", len(in), len(a.Floats), want)
	}
	return c, bnCheck("stats", in[1], 2, c)
}

func (*bnStatsPrim) Name() string { return "BatchNormStats" }
func (*bnStatsPrim) Shape(dst []int, in [][]int, _ Attrs) ([]int, error) {
	c, err := bnShape(in[0])
	if err != nil {
		return dst, err
	}
	return append(dst, 2, c), nil
}

func (*bnStatsPrim) Forward(f *Forward) {
	bnRun(bnJob{kind: bnKindStats, out: f.Out.Data, x: f.In[0].Data, d: bnDimsOf(f.In[0].Shape)})
}

func (*bnNormPrim) Name() string { return "BatchNorm" }
func (*bnNormPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	c, err := bnInputs(in, a, 2, 4, "x, stats (and gamma, beta)")
	if err != nil {
		return dst, err
	}
	if len(in) == 4 {
		if err := bnCheck("gamma", in[2], c); err != nil {
			return dst, err
		}
		if err := bnCheck("beta", in[3], c); err != nil {
			return dst, err
		}
	}
	return append(dst, in[0]...), nil
}

func (*bnNormPrim) Forward(f *Forward) {
	j := bnJob{kind: bnKindNorm, out: f.Out.Data, x: f.In[0].Data, st: f.In[1].Data, eps: float32(f.Attrs.Floats[0]), d: bnDimsOf(f.In[0].Shape)}
	if len(f.In) == 4 {
		j.gamma, j.beta = f.In[2].Data, f.In[3].Data
	}
	bnRun(j)
}

func (*bnSumsPrim) Name() string { return "BatchNormSums" }
func (*bnSumsPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	c, err := bnShape(in[0])
	if err != nil {
		return dst, err
	}
	if len(a.Floats) != 1 {
		return dst, fmt.Errorf("%d float attributes, want eps", len(a.Floats))
	}
	if err := bnCheck("stats", in[1], 2, c); err != nil {
		return dst, err
	}
	if err := bnCheck("g", in[2], in[0]...); err != nil {
		return dst, err
	}
	return append(dst, 2, c), nil
}

func (*bnSumsPrim) Forward(f *Forward) {
	bnRun(bnJob{kind: bnKindSums, out: f.Out.Data, x: f.In[0].Data, st: f.In[1].Data, g: f.In[2].Data,
		eps: float32(f.Attrs.Floats[0]), d: bnDimsOf(f.In[0].Shape)})
}

func (*bnBackDataPrim) Name() string { return "BatchNormBackData" }
func (*bnBackDataPrim) Shape(dst []int, in [][]int, a Attrs) ([]int, error) {
	c, err := bnInputs(in, a, 4, 5, "x, stats, g, sums (and gamma)")
	if err != nil {
		return dst, err
	}
	if err := bnCheck("g", in[2], in[0]...); err != nil {
		return dst, err
	}
	if err := bnCheck("sums", in[3], 2, c); err != nil {
		return dst, err
	}
	if len(in) == 5 {
		if err := bnCheck("gamma", in[4], c); err != nil {
			return dst, err
		}
	}
	return append(dst, in[0]...), nil
}

func (*bnBackDataPrim) Forward(f *Forward) {
	j := bnJob{kind: bnKindBackData, out: f.Out.Data, x: f.In[0].Data, st: f.In[1].Data, g: f.In[2].Data,
		t: f.In[3].Data, eps: float32(f.Attrs.Floats[0]), d: bnDimsOf(f.In[0].Shape)}
	if len(f.In) == 5 {
		j.gamma = f.In[4].Data
	}
	bnRun(j)
}

// bnSums records BatchNormSums(x, S, g).
func bnSums(x, S, g Var, a Attrs) Var { return Apply(bnSumsOp, a, x, S, g) }

// bnBackData records BatchNormBackData(x, S, g, T, γ), γ the zero Var for
// none.
func bnBackData(x, S, g, T, gamma Var, a Attrs) Var {
	if gamma.IsZero() {
		return Apply(bnBackDataOp, a, x, S, g, T)
	}
	return Apply(bnBackDataOp, a, x, S, g, T, gamma)
}

// JVP:
//
//	ẏ = BackData(x, S, ẋ, Sums(x, S, ẋ), γ) + BatchNorm(x, S, γ̇, β̇)
func (*bnNormPrim) JVP(r *Rule) Var {
	x, S := r.In[0], r.In[1]
	var gamma Var
	if len(r.In) == 4 {
		gamma = r.In[2]
	}
	var out Var
	if tx := r.Tangent(0); !tx.IsZero() {
		out = bnBackData(x, S, tx, bnSums(x, S, tx, r.Attrs), gamma, r.Attrs)
	}
	if len(r.In) == 4 {
		tg, tb := r.Tangent(2), r.Tangent(3)
		if !tg.IsZero() || !tb.IsZero() {
			c := gamma.Shape()[0]
			if tg.IsZero() {
				tg = r.t.Full(0, c)
			}
			if tb.IsZero() {
				tb = r.t.Full(0, c)
			}
			out = addOrSet(out, Apply(bnNormOp, r.Attrs, x, S, tg, tb))
		}
	}
	return out
}

// VJP, with T = Sums(x, S, ȳ):
//
//	x̄ = BackData(x, S, ȳ, T, γ),  γ̄ = T₁,  β̄ = T₀
//
// S gets nothing: see the comment at the top.
func (*bnNormPrim) VJP(r *Rule, c Var) {
	x, S := r.In[0], r.In[1]
	affine := len(r.In) == 4
	if !r.Need(0) && !(affine && (r.Need(2) || r.Need(3))) {
		return
	}
	T := bnSums(x, S, c, r.Attrs)
	var gamma Var
	if affine {
		gamma = r.In[2]
		C := gamma.Shape()[0]
		if r.Need(2) {
			r.AddGrad(2, Reshape(SliceAxis(T, 0, 1, 2), C))
		}
		if r.Need(3) {
			r.AddGrad(3, Reshape(SliceAxis(T, 0, 0, 1), C))
		}
	}
	if r.Need(0) {
		r.AddGrad(0, bnBackData(x, S, c, T, gamma, r.Attrs))
	}
}
