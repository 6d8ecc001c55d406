package ode

import "math"

// ForwardSensitivity's system in the problem's structure. Its Jacobian is
// block lower triangular with J on every diagonal block, so a stiff
// method factors I − c·J once, in J's structure, and solves each
// sensitivity block with that factorisation (an augJacobian structure).
// BDF solves the state first and then the sensitivities, linear in them
// at the converged state, with the state's factorisation: CVODES's
// staggered corrector (method_bdf_stagger.go). This takes J from
// Problem.Jac or Problem.JVP for every structure, the dense one included.
// A Rosenbrock method has no iteration, so its solves add the coupling
// blocks' products, forward differences of the system's right-hand side
// in the state's direction, one evaluation per solve.

// augStructure is the system's structure: 1+m blocks of n and, with a
// running cost, 1+m quadratures.
func (fs *forwardSens[T]) augStructure(quad bool) augJacobian {
	a := augJacobian{Inner: fs.gs.prob.JacStructure, Blocks: 1 + fs.m, Coupling: augCoupleFD, DiffRHS: fs.gs.fdProducts}
	if quad {
		a.Quad = 1 + fs.m
	}
	if isBDF(fs.gs.method) {
		a.Coupling = augCoupleNone
	}
	return a
}

// innerJac reports whether J of the state's block can come from the
// problem alone: from Problem.JVP, or from Problem.Jac unless the method
// solves by GMRES (whose products then need JVP).
func (fs *forwardSens[T]) innerJac() bool {
	prob := &fs.gs.prob
	return prob.JVP != nil || usesJac(prob) && !isGMRES(methodLinear(fs.gs.method))
}

// staggered reports whether the system is solved with BDF's staggered
// corrector: BDF, and J of the state from the problem.
func (fs *forwardSens[T]) staggered() bool {
	return isBDF(fs.gs.method) && fs.innerJac()
}

// stateRHS is F of the state, for the staggered corrector.
func (fs *forwardSens[T]) stateRHS(du, u []T, p []float32, t float64) {
	fs.gs.prob.F(du, u, p, t)
}

// sensRHS writes the derivatives of the sensitivities and the running
// cost's quadratures, dY[n:], at Y, for the staggered corrector.
func (fs *forwardSens[T]) sensRHS(dY, Y []T, p []float32, t float64) {
	if fs.rows {
		fs.rowsRHS(dY, Y, p, t)
	} else {
		fs.jvpRHS(dY, Y, p, t)
	}
	if fs.quad {
		fs.quadRHS(dY, Y, p, t)
	}
}

// sensWeights writes the weights of the sensitivities and quadratures in
// Y[n:] into w, with the tolerances setTolerances gives them under error
// control, for the staggered corrector's convergence test.
func (fs *forwardSens[T]) sensWeights(w []float64, Y []T) {
	n, m, np := fs.n, fs.m, fs.np
	g := &fs.gs.o
	weight := func(a, r float64, v T) float64 {
		if math.IsInf(a, 1) {
			return 0
		}
		return 1 / (a + r*math.Abs(float64(v)))
	}
	qr, qa := g.quadTols()
	for k := 0; k < m; k++ {
		bar := 1.0
		if k < np {
			bar = thetaBar(float64(fs.gs.prob.P[k]))
		}
		s, wk := Y[n+k*n:n+(k+1)*n], w[k*n:(k+1)*n]
		for i, v := range s {
			a, r := g.tolAt(i)
			wk[i] = weight(a/bar, r, v)
		}
		if fs.quad {
			w[n*m+1+k] = weight(qa/bar, qr, Y[n*(1+m)+1+k])
		}
	}
	if fs.quad {
		w[n*m] = weight(qa, qr, Y[n*(1+m)])
	}
}

// jacU writes J of the state's block, in the structure's storage.
func (fs *forwardSens[T]) jacU(J, Y []T, p []float32, t float64) {
	fs.gs.prob.Jac(J, Y[:fs.n], p, t)
}

// jvpU writes J·v for v of the state's length n.
func (fs *forwardSens[T]) jvpU(jv, Y, v []T, p []float32, _ []T, t float64) {
	fs.gs.prob.JVP(jv, Y[:fs.n], v, p, nil, t)
}

// isBDF reports whether m is BDF.
func isBDF(m Method) bool {
	_, ok := methodValue(m).(BDFMethod)
	return ok
}

// methodValue is m, a stiff method's settings by value where m points to
// them.
func methodValue(m Method) Method {
	switch v := m.(type) {
	case *BDFMethod:
		return *v
	case *Rodas5PMethod:
		return *v
	case *Rosenbrock23Method:
		return *v
	}
	return m
}

// methodLinear is the linear solver setting of a stiff method, else nil.
func methodLinear(m Method) LinearSolver {
	switch v := methodValue(m).(type) {
	case BDFMethod:
		return v.Linear
	case Rodas5PMethod:
		return v.Linear
	case Rosenbrock23Method:
		return v.Linear
	}
	return nil
}

// isGMRES reports whether ls is GMRES.
func isGMRES(ls LinearSolver) bool {
	_, ok := ls.(GMRES)
	return ok
}
