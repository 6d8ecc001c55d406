package ad

// The rules of BatchNormStats, BatchNormSums and BatchNormBackData,
// written with the broadcasting ops (see batchnorm.go for the notation).
// First derivatives of a BatchNorm never run them: only a derivative of a
// derivative does, so they favour plainness over speed. Per-channel values
// are Vars of the broadcast shape keep = (1, C, 1, …).

// bnGeom is the per-channel broadcast geometry of one rule.
type bnGeom struct {
	t    *Tape
	keep [maxRank]int
	r, c int
	m    float32 // values per channel
	eps  float32
}

func bnGeomOf(r *Rule) bnGeom {
	s := r.In[0].Shape()
	g := bnGeom{t: r.t, r: len(s), c: s[1]}
	for i := range g.keep[:g.r] {
		g.keep[i] = 1
	}
	g.keep[1] = g.c
	g.m = float32(r.In[0].Size() / g.c)
	if len(r.Attrs.Floats) > 0 {
		g.eps = float32(r.Attrs.Floats[0])
	}
	return g
}

// pc reshapes a value of C elements to keep.
func (g *bnGeom) pc(v Var) Var { return Reshape(v, g.keep[:g.r]...) }

// row returns row i of a (2, C) value, of shape keep.
func (g *bnGeom) row(v Var, i int) Var { return g.pc(SliceAxis(v, 0, i, i+1)) }

// sum sums a full-size value per channel.
func (g *bnGeom) sum(v Var) Var { return SumTo(v, g.keep[:g.r]...) }

// inv returns s = (σ² + ε)^(−1/2) from the statistics S.
func (g *bnGeom) inv(S Var) Var { return Pow(Add(g.row(S, 1), g.t.Scalar(g.eps)), -0.5) }

// xhat returns x̂ = (x − μ)·s.
func (g *bnGeom) xhat(x, S, s Var) Var { return Mul(Sub(x, g.row(S, 0)), s) }

// rows stacks per-channel a and b (either may be the zero Var) into a
// (2, C) value; the zero Var if both are.
func (g *bnGeom) rows(a, b Var) Var {
	if a.IsZero() && b.IsZero() {
		return Var{}
	}
	if a.IsZero() {
		a = g.t.Full(0, g.keep[:g.r]...)
	}
	if b.IsZero() {
		b = g.t.Full(0, g.keep[:g.r]...)
	}
	return Concat(0, Reshape(a, 1, g.c), Reshape(b, 1, g.c))
}

// JVP:
//
//	μ̇ = Σẋ/m,  (σ²)˙ = 2·Σ(x − μ)·ẋ/m
func (*bnStatsPrim) JVP(r *Rule) Var {
	tx := r.Tangent(0)
	if tx.IsZero() {
		return Var{}
	}
	g := bnGeomOf(r)
	xc := Sub(r.In[0], g.row(r.Out, 0))
	return g.rows(Scale(g.sum(tx), float64(1/g.m)), Scale(g.sum(Mul(xc, tx)), float64(2/g.m)))
}

// VJP:
//
//	x̄ = μ̄/m + 2·(σ²)̄·(x − μ)/m
func (*bnStatsPrim) VJP(r *Rule, c Var) {
	if !r.Need(0) {
		return
	}
	g := bnGeomOf(r)
	xc := Sub(r.In[0], g.row(r.Out, 0))
	r.AddGrad(0, Add(Scale(g.row(c, 0), float64(1/g.m)), Mul(xc, Scale(g.row(c, 1), float64(2/g.m)))))
}

// JVP of T = (Σg; Σg·x̂):
//
//	Ṫ₀ = Σġ
//	Ṫ₁ = Σġ·x̂ + s·Σg·ẋ − s·μ̇·T₀ − ½·s²·(σ²)˙·T₁
func (*bnSumsPrim) JVP(r *Rule) Var {
	x, S, gv := r.In[0], r.In[1], r.In[2]
	tx, tS, tg := r.Tangent(0), r.Tangent(1), r.Tangent(2)
	g := bnGeomOf(r)
	s := g.inv(S)
	var r0, r1 Var
	if !tg.IsZero() {
		r0 = g.sum(tg)
		r1 = g.sum(Mul(tg, g.xhat(x, S, s)))
	}
	if !tx.IsZero() {
		r1 = addOrSet(r1, Mul(s, g.sum(Mul(gv, tx))))
	}
	if !tS.IsZero() {
		t0, t1 := g.row(r.Out, 0), g.row(r.Out, 1)
		dm := Mul(Mul(s, g.row(tS, 0)), t0)
		dv := Scale(Mul(Mul(Mul(s, s), g.row(tS, 1)), t1), 0.5)
		r1 = addOrSet(r1, Neg(Add(dm, dv)))
	}
	return g.rows(r0, r1)
}

// VJP, with (a; b) the cotangent:
//
//	ḡ = a + b·x̂,  x̄ = b·s·g,  μ̄ = −s·b·T₀,  (σ²)̄ = −½·s²·b·T₁
func (*bnSumsPrim) VJP(r *Rule, c Var) {
	x, S, gv := r.In[0], r.In[1], r.In[2]
	g := bnGeomOf(r)
	s := g.inv(S)
	a, b := g.row(c, 0), g.row(c, 1)
	if r.Need(2) {
		r.AddGrad(2, Add(a, Mul(b, g.xhat(x, S, s))))
	}
	if r.Need(0) {
		r.AddGrad(0, Mul(gv, Mul(b, s)))
	}
	if r.Need(1) {
		t0, t1 := g.row(r.Out, 0), g.row(r.Out, 1)
		dm := Neg(Mul(Mul(s, b), t0))
		dv := Scale(Mul(Mul(Mul(s, s), b), t1), -0.5)
		r.AddGrad(1, g.rows(dm, dv))
	}
}

// kOf returns k = γ·s (s without γ), per channel.
func (g *bnGeom) kOf(r *Rule, s Var) Var {
	if len(r.In) == 5 {
		return Mul(g.pc(r.In[4]), s)
	}
	return s
}

// JVP of D = k·u, with
//
//	u = g − T₀/m − x̂·T₁/m,  k = γ·s
//
// D is linear in g, T and γ, so those parts are BackData again. x enters
// through x̂, whose coefficient is −k·T₁/m, and S through x̂ and s.
func (*bnBackDataPrim) JVP(r *Rule) Var {
	x, S, gv, T := r.In[0], r.In[1], r.In[2], r.In[3]
	var gamma Var
	if len(r.In) == 5 {
		gamma = r.In[4]
	}
	tx, tS, tg, tT := r.Tangent(0), r.Tangent(1), r.Tangent(2), r.Tangent(3)
	var tgamma Var
	if len(r.In) == 5 {
		tgamma = r.Tangent(4)
	}
	g := bnGeomOf(r)
	var out Var
	if !tg.IsZero() || !tT.IsZero() {
		if tg.IsZero() {
			tg = g.t.Full(0, x.Shape()...)
		}
		if tT.IsZero() {
			tT = g.t.Full(0, 2, g.c)
		}
		out = bnBackData(x, S, tg, tT, gamma, r.Attrs)
	}
	if !tgamma.IsZero() {
		out = addOrSet(out, bnBackData(x, S, gv, T, tgamma, r.Attrs))
	}
	if tx.IsZero() && tS.IsZero() {
		return out
	}
	s := g.inv(S)
	k := g.kOf(r, s)
	kt1 := Mul(k, g.row(T, 1)) // k·T₁
	if !tx.IsZero() {
		out = addOrSet(out, Mul(tx, Scale(Mul(kt1, s), float64(-1/g.m))))
	}
	if !tS.IsZero() {
		dmu, dv := g.row(tS, 0), g.row(tS, 1)
		s2dv := Mul(Mul(s, s), dv)
		w1 := Scale(Mul(kt1, Mul(s, dmu)), float64(1/g.m))
		w2 := Scale(Mul(kt1, s2dv), float64(0.5/g.m))
		out = addOrSet(out, Add(Mul(r.Out, Scale(s2dv, -0.5)), Add(w1, Mul(g.xhat(x, S, s), w2))))
	}
	return out
}

// VJP, with d̄ the cotangent:
//
//	Q = Sums(x, S, d̄) = (Σd̄; Σd̄·x̂)
//	ḡ = k·d̄,  T̄ = −k·Q/m,  γ̄ = s·U
//	U = Σd̄·u = Σd̄·g − (T₀·Q₀ + T₁·Q₁)/m
//	x̄ = −k·s·T₁·d̄/m,  μ̄ = k·s·T₁·Q₀/m,  (σ²)̄ = −½·s²·k·(U − T₁·Q₁/m)
func (*bnBackDataPrim) VJP(r *Rule, c Var) {
	x, S, gv, T := r.In[0], r.In[1], r.In[2], r.In[3]
	g := bnGeomOf(r)
	s := g.inv(S)
	k := g.kOf(r, s)
	if r.Need(2) {
		r.AddGrad(2, Mul(c, k))
	}
	affine := len(r.In) == 5
	if !r.Need(0) && !r.Need(1) && !r.Need(3) && !(affine && r.Need(4)) {
		return
	}
	t1 := g.row(T, 1)
	ks := Mul(k, s)
	if r.Need(0) {
		r.AddGrad(0, Mul(c, Scale(Mul(ks, t1), float64(-1/g.m))))
	}
	if !r.Need(1) && !r.Need(3) && !(affine && r.Need(4)) {
		return
	}
	Q := bnSums(x, S, c, r.Attrs)
	q0, q1 := g.row(Q, 0), g.row(Q, 1)
	if r.Need(3) {
		r.AddGrad(3, g.rows(Scale(Mul(k, q0), float64(-1/g.m)), Scale(Mul(k, q1), float64(-1/g.m))))
	}
	if !r.Need(1) && !(affine && r.Need(4)) {
		return
	}
	t1q1 := Scale(Mul(t1, q1), float64(1/g.m))
	U := Sub(Sub(g.sum(Mul(c, gv)), Scale(Mul(g.row(T, 0), q0), float64(1/g.m))), t1q1)
	if affine && r.Need(4) {
		r.AddGrad(4, Reshape(Mul(s, U), g.c))
	}
	if r.Need(1) {
		dm := Scale(Mul(ks, Mul(t1, q0)), float64(1/g.m))
		dv := Scale(Mul(Mul(Mul(s, s), k), Sub(U, t1q1)), -0.5)
		r.AddGrad(1, g.rows(dm, dv))
	}
}
