package ode

// ForwardSensitivity's system in the problem's structure. Its Jacobian is
// block lower triangular with J on every diagonal block, so a stiff
// method factors I − c·J once, in J's structure, and solves each
// sensitivity block with that factorisation (an augJacobian structure).
// BDF takes the block-diagonal Newton matrix, as CVODES's simultaneous
// corrector does: the Newton iteration corrects for the coupling. A
// Rosenbrock method has no iteration, so its solves add the coupling
// blocks' products, forward differences of the system's right-hand side
// in the state's direction, one evaluation per solve.

// augStructure is the system's structure: 1+m blocks of n and, with a
// running cost, 1+m quadratures.
func (fs *forwardSens[T]) augStructure(quad bool) augJacobian {
	a := augJacobian{Inner: fs.gs.prob.JacStructure, Blocks: 1 + fs.m, Coupling: augCoupleFD}
	if quad {
		a.Quad = 1 + fs.m
	}
	if isBDF(fs.gs.method) {
		a.Coupling = augCoupleNone
	}
	return a
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
