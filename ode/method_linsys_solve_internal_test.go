package ode

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode/linalg"
)

// linsysCase is one structure × linear solver of the Brusselator.
type linsysCase struct {
	name   string
	s      Structure
	ls     LinearSolver
	jac    bool // give the analytic Jacobian in the structure's storage
	jvp    bool // give the analytic JVP
	maxErr float64
}

func linsysCases(b linsysBruss) []linsysCase {
	pat := b.pattern()
	return []linsysCase{
		{name: "band DenseLU", s: BandJacobian{2, 2}, ls: DenseLU{}},
		{name: "sparse DenseLU", s: SparseJacobian{pat}, ls: DenseLU{}},
		{name: "band DenseLU Jac", s: BandJacobian{2, 2}, ls: DenseLU{}, jac: true},
		{name: "sparse DenseLU Jac", s: SparseJacobian{pat}, ls: DenseLU{}, jac: true},
		{name: "band DenseLU JVP", s: BandJacobian{2, 2}, ls: DenseLU{}, jvp: true},
		{name: "band BandLU", s: BandJacobian{2, 2}},
		{name: "band BandLU Jac", s: BandJacobian{2, 2}, jac: true},
		{name: "band BandLU JVP", s: BandJacobian{2, 2}, jvp: true},
		{name: "sparse SparseLU", s: SparseJacobian{pat}},
		{name: "sparse SparseLU Jac", s: SparseJacobian{pat}, jac: true},
		{name: "sparse SparseLU JVP", s: SparseJacobian{pat}, jvp: true},
		{name: "band SparseLU", s: BandJacobian{2, 2}, ls: SparseLU{}},
		{name: "sparse BandLU", s: SparseJacobian{pat}, ls: BandLU{}},
		{name: "GMRES", s: MatrixFreeJacobian{}, ls: GMRES{MaxRestarts: 10}},
		{name: "GMRES JVP", s: MatrixFreeJacobian{}, ls: GMRES{MaxRestarts: 10}, jvp: true},
		{name: "GMRES band prec", s: MatrixFreeJacobian{}, ls: GMRES{Precond: BandPreconditioner{2, 2}}},
		{name: "GMRES band prec JVP", s: MatrixFreeJacobian{}, ls: GMRES{Precond: BandPreconditioner{2, 2}}, jvp: true},
		{name: "GMRES block prec", s: MatrixFreeJacobian{}, ls: GMRES{MaxRestarts: 10, Precond: BlockDiagonalPreconditioner{2}}},
		{name: "GMRES block prec JVP", s: MatrixFreeJacobian{}, ls: GMRES{MaxRestarts: 10, Precond: BlockDiagonalPreconditioner{2}}, jvp: true},
		{name: "band GMRES block prec", s: BandJacobian{2, 2}, ls: GMRES{MaxRestarts: 10, Precond: BlockDiagonalPreconditioner{2}}},
		{name: "band GMRES band prec", s: BandJacobian{2, 2}, ls: GMRES{Precond: BandPreconditioner{2, 2}}},
	}
}

func (c linsysCase) problem(b linsysBruss) Problem[float64] {
	prob := b.problem()
	prob.JacStructure = c.s
	if c.jvp {
		prob.JVP = b.jvp
	}
	if c.jac {
		switch s := c.s.(type) {
		case BandJacobian:
			prob.Jac = b.jacBand
		case SparseJacobian:
			prob.Jac = b.jacSparse(s.Pattern)
		}
	}
	return prob
}

// TestLinsysBrusselatorSolves: Rodas5P, Rosenbrock23 and BDF on the
// Brusselator at N = 50 with every structure and solver. With a direct
// solver the final state agrees with the dense solve's within the
// tolerance (weighted RMS difference below 1). GMRES solves inexactly, so
// the steps differ (BDF's Newton iterations and its error test see
// another path): its error against a tight reference stays below three
// times the dense solve's plus the tolerance (BDF's dense error is 1.5
// here, its GMRES errors 0.6 to 4).
func TestLinsysBrusselatorSolves(t *testing.T) {
	b := newLinsysBruss(50)
	const rtol, atol = 1e-6, 1e-8
	ctx := context.Background()
	o := options{rtol: rtol, atol: atol}
	diff := func(u, v []float64) float64 {
		d := make([]float64, len(u))
		for i := range d {
			d[i] = u[i] - v[i]
		}
		return wrmsNorm(d, u, v, &o)
	}
	tight := b.problem()
	tight.JacStructure, tight.Jac = BandJacobian{2, 2}, b.jacBand
	exact, err := Solve(ctx, tight, Rodas5P(), Tol(1e-11, 1e-13))
	if err != nil {
		t.Fatal(err)
	}
	uExact := exact.U[len(exact.U)-1]
	for _, mk := range []func(LinearSolver) Method{
		func(ls LinearSolver) Method { return Rodas5PMethod{Linear: ls} },
		func(ls LinearSolver) Method { return Rosenbrock23Method{Linear: ls} },
		func(ls LinearSolver) Method { return BDFMethod{Linear: ls} },
	} {
		ref, err := Solve(ctx, b.problem(), mk(nil), Tol(rtol, atol))
		if err != nil {
			t.Fatal(err)
		}
		uRef := ref.U[len(ref.U)-1]
		errRef := diff(uRef, uExact)
		t.Logf("%s dense: error %.3g; %+v", mk(nil).Name(), errRef, ref.Stats)
		for _, c := range linsysCases(b) {
			m := mk(c.ls)
			sol, err := Solve(ctx, c.problem(b), m, Tol(rtol, atol))
			if err != nil {
				t.Errorf("%s %s: %v", m.Name(), c.name, err)
				continue
			}
			u := sol.U[len(sol.U)-1]
			d, e := diff(u, uRef), diff(u, uExact)
			t.Logf("%s %-20s: difference %.3g, error %.3g; %+v", m.Name(), c.name, d, e, sol.Stats)
			if _, iterative := c.ls.(GMRES); iterative || c.s == (MatrixFreeJacobian{}) {
				if !(e < 3*errRef+1) {
					t.Errorf("%s %s: error %.3g, dense %.3g: want < 3·dense + 1", m.Name(), c.name, e, errRef)
				}
			} else if !(d < 1) {
				t.Errorf("%s %s: weighted difference from the dense solve %.3g, want < 1", m.Name(), c.name, d)
			}
		}
	}
}

// TestLinsysAllocs: a reused integrator solves again without allocating,
// for every structure and solver.
func TestLinsysAllocs(t *testing.T) {
	b := newLinsysBruss(20)
	for _, c := range linsysCases(b) {
		for _, m := range []Method{Rodas5PMethod{Linear: c.ls}, BDFMethod{Linear: c.ls}} {
			linsysAllocs(t, b, c, m)
		}
	}
}

// linsysAllocs checks that m with case c solves again without allocating.
func linsysAllocs(t *testing.T, b linsysBruss, c linsysCase, m Method) {
	ctx := context.Background()
	it, err := NewIntegrator(c.problem(b), m, Tol(1e-6, 1e-8))
	if err != nil {
		t.Fatal(err)
	}
	u0 := b.u0()
	run := func() {
		if err := it.Reinit(u0, 0, 1, nil); err != nil {
			t.Fatal(err)
		}
		if err := it.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if a := testing.AllocsPerRun(3, run); a != 0 {
		t.Errorf("%s %s: %v allocations per solve, want 0", m.Name(), c.name, a)
	}
}

// TestLinsysSingular: a W that is singular at the fixed step ends the
// solve with Retcode Singular in every structure, as with the dense one;
// adaptive, the step is retried smaller.
func TestLinsysSingular(t *testing.T) {
	f := func(du, u []float64, _ []float32, _ float64) { du[0] = u[0] }
	const h = 0.1
	g := rodas5pTab.gamma
	jac := func(J, _ []float64, _ []float32, _ float64) { J[0] = 1 / (h * g) }
	p1, _ := linalg.NewPattern(1, 1, []linalg.Entry{{Row: 0, Col: 0}})
	for _, s := range []Structure{BandJacobian{0, 0}, SparseJacobian{p1}} {
		prob := Problem[float64]{F: f, Jac: jac, U0: []float64{1}, T1: 1, JacStructure: s}
		_, err := Solve(context.Background(), prob, Rodas5PMethod{Linear: DenseLU{}}, FixedStep(h))
		var oe *Error
		if !errors.As(err, &oe) || oe.Code != Singular {
			t.Errorf("%v: singular W gave %v, want Retcode Singular", s, err)
		} else {
			t.Log(err)
		}
		sol, err := Solve(context.Background(), prob, Rodas5PMethod{Linear: DenseLU{}}, InitialStep(h))
		if err != nil || sol.Stats.Rejected == 0 {
			t.Errorf("%v adaptive: %v, %+v; want a rejected step and success", s, err, sol.Stats)
		}
	}
}

// TestLinsysBadInput: a Jacobian written outside its band, a NaN in a
// structured Jacobian, bad patterns and impossible structure × solver
// pairs give errors that say what was wrong.
func TestLinsysBadInput(t *testing.T) {
	b := newLinsysBruss(5)
	ctx := context.Background()
	// Row 0 has no column −1: its storage position must stay 0.
	prob := b.problem()
	prob.JacStructure = BandJacobian{2, 2}
	prob.Jac = func(J, y []float64, p []float32, t float64) {
		b.jacBand(J, y, p, t)
		J[bandPos(0, -1, 2, 2)] = 7
	}
	_, err := Solve(ctx, prob, Rodas5P())
	if err == nil || !strings.Contains(err.Error(), "row 0, column -1") {
		t.Errorf("Jac written outside the band: %v, want an error naming row 0, column -1", err)
	} else {
		t.Log(err)
	}
	// A NaN at (3, 5) of a band Jacobian.
	prob.Jac = func(J, y []float64, p []float32, t float64) {
		b.jacBand(J, y, p, t)
		J[bandPos(3, 5, 2, 2)] = math.NaN()
	}
	_, err = Solve(ctx, prob, Rodas5P())
	var oe *Error
	if !errors.As(err, &oe) || oe.Code != NonFinite || !strings.Contains(err.Error(), "J[3][5]") {
		t.Errorf("NaN in the band Jacobian: %v, want NonFinite naming J[3][5]", err)
	}
	n := 2 * b.N
	p3, _ := linalg.NewPattern(3, 3, nil)
	bad := &linalg.Pattern{Rows: n, Cols: n, RowPtr: make([]int, n+1), ColIdx: []int{0}}
	for _, c := range []struct {
		s    Structure
		ls   LinearSolver
		want string
	}{
		{SparseJacobian{}, nil, "nil Pattern"},
		{SparseJacobian{p3}, nil, "3×3, want 10×10"},
		{SparseJacobian{bad}, nil, "RowPtr"},
		{BandJacobian{-1, 2}, nil, "non-negative"},
		{DenseJacobian{}, BandLU{}, "band LU cannot solve with a dense Jacobian"},
		{MatrixFreeJacobian{}, DenseLU{}, "dense LU cannot solve with a matrix-free Jacobian"},
		{nil, GMRES{Restart: -1}, "non-negative"},
		{nil, GMRES{Precond: BlockDiagonalPreconditioner{Block: 3}}, "divides the dimension 10"},
	} {
		prob := b.problem()
		prob.JacStructure = c.s
		_, err := NewIntegrator(prob, Rodas5PMethod{Linear: c.ls})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v with %v: %v, want an error containing %q", c.s, c.ls, err, c.want)
		}
	}
	// ReinitProblem keeps the structure.
	prob = b.problem()
	it, err := NewIntegrator(prob, Rodas5P())
	if err != nil {
		t.Fatal(err)
	}
	prob.JacStructure = BandJacobian{2, 2}
	if err := it.ReinitProblem(prob); err == nil {
		t.Error("ReinitProblem with another structure: no error")
	}
	prob.JacStructure = DenseJacobian{}
	if err := it.ReinitProblem(prob); err != nil {
		t.Errorf("ReinitProblem with DenseJacobian{} after nil: %v", err)
	}
}

// TestLinsysGMRESNotConverging: GMRES that does not converge rejects the
// step; adaptive, smaller steps then converge, and the solve counts the
// failures; under FixedStep, or when it never converges, the error names
// t and the residual.
func TestLinsysGMRESNotConverging(t *testing.T) {
	b := newLinsysBruss(50)
	ctx := context.Background()
	prob := b.problem()
	prob.JacStructure = MatrixFreeJacobian{}
	sol, err := Solve(ctx, prob, Rodas5PMethod{Linear: GMRES{Restart: 2}}, Tol(1e-6, 1e-8))
	if err != nil || sol.Stats.LinearFails == 0 || sol.Stats.Rejected < sol.Stats.LinearFails {
		t.Errorf("GMRES(2): %v, %+v; want success after failed solves, each a rejected step", err, sol.Stats)
	}
	_, err = Solve(ctx, prob, Rodas5PMethod{Linear: GMRES{Restart: 2}}, FixedStep(0.1))
	var oe *Error
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "did not converge") || !strings.Contains(err.Error(), "at t=0") || !strings.Contains(err.Error(), "residual") {
		t.Errorf("GMRES(2) at a fixed step 0.1: %v, want an error naming t and the residual", err)
	} else {
		t.Log(err)
	}
	// Out of steps after failed solves: the error names them before
	// stiffness.
	_, err = Solve(ctx, prob, Rodas5PMethod{Linear: GMRES{Restart: 2}}, Tol(1e-6, 1e-8), MaxSteps(20))
	if !errors.As(err, &oe) || oe.Code != MaxStepsReached || !strings.Contains(err.Error(), "GMRES solves did not converge, each rejecting its step (give GMRES a preconditioner") {
		t.Errorf("GMRES(2) with MaxSteps(20): %v, want max steps naming the failed GMRES solves", err)
	} else {
		t.Log(err)
	}
	prob.JVP = func(jv, _, _ []float64, _ []float32, _ []float64, _ float64) {
		for i := range jv {
			jv[i] = math.NaN()
		}
	}
	_, err = Solve(ctx, prob, Rodas5P(), Tol(1e-6, 1e-8))
	if err == nil || !strings.Contains(err.Error(), "did not converge") {
		t.Errorf("GMRES on a NaN JVP: %v, want an error saying it did not converge", err)
	} else {
		t.Log(err)
	}
}
