package ode

// HvSolver's two systems in the problem's band, sparse or matrix-free
// structure, or solved by GMRES, for the stiff methods. Both are
// augJacobian structures, so that a stiff method factors I − c·J (or
// I − c·(−Jᵀ)) of n rows in J's structure, or runs GMRES on products with
// it, and solves each block with that; neither 2n×2n matrix is formed.
//
// The forward system [u, ṡ, q] has the Jacobian [[J, 0], [C, J]] with
// C = ∂(J·ṡ + ∂F/∂p·v_θ)/∂u, F's second derivative along the tangent:
// two blocks whose coupling product C·x is a forward difference of the
// system's right-hand side, as ForwardSensitivity takes its own
// (augCoupleFD), and the running cost's integral q a quadrature.
//
// The backward system [λ, λ̇, μ, μ̇] is linear in its state: the running
// cost's terms read u and ṡ only. Its Jacobian is −[[Jᵀ, 0], [Cᵀ, Jᵀ]]
// on (λ, λ̇) and −[[Pᵀ, 0], [Qᵀ, Pᵀ]] on (μ, μ̇), P = ∂F/∂p and Q = ∂C/∂p,
// so its product with x is the right-hand side's VJPJVP at
// (−x_λ, −x_λ̇) without the running cost: exact, one product
// (augCoupleJVP). Its inner block −Jᵀ is in the transposed structure,
// gathered from Problem.Jac as InterpolatingAdjoint's is, or swept from
// the VJP by colours.

// augmented reports whether the stiff systems are augJacobian structures:
// with a band, sparse or matrix-free structure, and with GMRES in any,
// the dense one too. GMRES then runs on the inner n×n block alone, its
// products from Problem.JVP (the forward system) or one VJP (the
// backward), its preconditioner from those products' coloured sweeps,
// and each block weighed by its own tolerances (blockSolver). Only a
// dense structure with a direct solver forms the whole Jacobians (hvRows).
func (hs *HvSolver[T]) augmented() bool {
	prob := &hs.gs.prob
	return hs.stiff && (structured(prob.JacStructure) || isGMRES(methodLinear(hs.gs.method)))
}

// inStructure sets fp and bp, the forward and backward systems' problems,
// to solve in the problem's structure block by block (augmented), and
// returns the backward solve's method.
func (hs *HvSolver[T]) inStructure(fp, bp *Problem[T], quad bool) Method {
	gs := hs.gs
	prob := &gs.prob
	fa := augJacobian{Inner: prob.JacStructure, Blocks: 2, Coupling: augCoupleFD, DiffRHS: hs.fdJVP || gs.fdProducts}
	if quad {
		fa.Quad = 1
	}
	fp.JacStructure, fp.JVP, fp.Jac = fa, hs.jvpU, nil
	st, perm := transposeStructure(prob.JacStructure, hs.n)
	bp.JacStructure = augJacobian{Inner: st, Blocks: 2, Quad: 2 * hs.np, Coupling: augCoupleJVP}
	bp.JVP, bp.Jac = hs.jvpB, nil
	hs.aj = nil
	if usesJac(prob) {
		fp.Jac = hs.jacU
		hs.aj = newAdjointJac(prob, perm)
		hs.aj.jac = hs.jacU // the Jac of the problem of the product, as HvFor sets it
		bp.Jac = hs.jacB
	}
	return transposedMethod(gs.method)
}

// jacU writes J of u's block, in the structure's storage.
func (hs *HvSolver[T]) jacU(J, y []T, p []float32, t float64) {
	hs.gs.prob.Jac(J, y[:hs.n], p, t)
}

// jvpU writes J·v for v of u's length: the inner system's products.
func (hs *HvSolver[T]) jvpU(jv, y, v []T, p []float32, _ []T, t float64) {
	hs.gs.prob.JVP(jv, y[:hs.n], v, p, nil, t)
}

// jacB writes −Jᵀ, the backward system's inner block, in the transposed
// structure's storage, from Problem.Jac.
func (hs *HvSolver[T]) jacB(JB, a []T, p []float32, t float64) {
	hs.forwardAt(t)
	hs.aj.eval(JB, hs.ub[:hs.n], p, t)
}

// jvpB is the backward system's product with its Jacobian. For v of λ's
// length it is −Jᵀv, one VJP. For v of the whole length it is the
// right-hand side's VJPJVP at (−v_λ, −v_λ̇) without the running cost:
// the whole product, whose λ rows augSys does not read.
func (hs *HvSolver[T]) jvpB(jv, a, v []T, p []float32, _ []T, t float64) {
	n, np := hs.n, hs.np
	hs.forwardAt(t)
	u := hs.ub[:n]
	clear(jv)
	if len(jv) <= n {
		for i, x := range v[:n] {
			hs.wn[i] = -x
		}
		hs.gs.prob.VJP(jv[:n], nil, hs.wn, u, p, t)
		return
	}
	for i := range n {
		hs.wn[i], hs.wdn[i] = -v[i], -v[n+i]
	}
	hs.backVJPJVP(jv[:n], jv[2*n:2*n+np], jv[n:2*n], jv[2*n+np:], hs.wn, hs.wdn, u, hs.ub[n:2*n], p, t)
}
