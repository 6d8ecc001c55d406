package ode

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flatkit/flatkit/internal/lotkavolterra"
)

// Right-hand sides with closed-form Jacobians in u and p, for the
// finite-difference products.
type fdCase struct {
	name string
	n    int
	p    []float32
	u    []float64 // the point (converted to T)
	// jac writes Ju (n×n) and Jp (n×len(p)), row-major, at (u, p).
	jac func(Ju, Jp []float64, u []float64, p []float64)
	// tolU and tolP bound the error of the ∂u and ∂p parts relative to
	// the magnitude of their terms (float64 state; float32 uses fdTol32).
	tolU, tolP float64
}

func fdLVJac(Ju, Jp []float64, u, p []float64) {
	u1, u2 := u[0], u[1]
	Ju[0], Ju[1] = p[0]-p[1]*u2, -p[1]*u1
	Ju[2], Ju[3] = p[3]*u2, -p[2]+p[3]*u1
	Jp[0], Jp[1], Jp[2], Jp[3] = u1, -u1*u2, 0, 0
	Jp[4], Jp[5], Jp[6], Jp[7] = 0, 0, -u2, u1*u2
}

// fdRobertson is Robertson's kinetics with its rates as parameters:
// y1' = −p0 y1 + p1 y2 y3, y3' = p2 y2², y2' = −y1' − y3'.
func fdRobertson[T Float](du, u []T, p []float32, _ float64) {
	r1 := -T(p[0])*u[0] + T(p[1])*u[1]*u[2]
	r3 := T(p[2]) * u[1] * u[1]
	du[0], du[1], du[2] = r1, -r1-r3, r3
}

func fdRobertsonJac(Ju, Jp []float64, u, p []float64) {
	y1, y2, y3 := u[0], u[1], u[2]
	a := [3]float64{-p[0], p[1] * y3, p[1] * y2} // ∂r1/∂y
	b := [3]float64{0, 2 * p[2] * y2, 0}         // ∂r3/∂y
	ap := [3]float64{-y1, y2 * y3, 0}            // ∂r1/∂p
	bp := [3]float64{0, 0, y2 * y2}              // ∂r3/∂p
	for j := range 3 {
		Ju[j], Ju[3+j], Ju[6+j] = a[j], -a[j]-b[j], b[j]
		Jp[j], Jp[3+j], Jp[6+j] = ap[j], -ap[j]-bp[j], bp[j]
	}
}

// fdCurved is nonlinear in both u and p, with O(1) third derivatives:
// u1' = sin(p0 u1) + p1² u2, u2' = exp(p2 u1 u2) − p3³ u1.
func fdCurved[T Float](du, u []T, p []float32, _ float64) {
	u1, u2 := float64(u[0]), float64(u[1])
	p0, p1, p2, p3 := float64(p[0]), float64(p[1]), float64(p[2]), float64(p[3])
	du[0] = T(math.Sin(p0*u1) + p1*p1*u2)
	du[1] = T(math.Exp(p2*u1*u2) - p3*p3*p3*u1)
}

func fdCurvedJac(Ju, Jp []float64, u, p []float64) {
	u1, u2 := u[0], u[1]
	c, e := math.Cos(p[0]*u1), math.Exp(p[2]*u1*u2)
	Ju[0], Ju[1] = p[0]*c, p[1]*p[1]
	Ju[2], Ju[3] = p[2]*u2*e-p[3]*p[3]*p[3], p[2]*u1*e
	Jp[0], Jp[1], Jp[2], Jp[3] = u1*c, 2*p[1]*u2, 0, 0
	Jp[4], Jp[5], Jp[6], Jp[7] = 0, 0, u1*u2*e, -3*p[3]*p[3]*u1
}

// fdF32Arith does its parameter arithmetic in float32, as plain Go code
// with a float32 p often does: u1' = (p0 p1) u1 − p2 u2, u2' = (p1 p2) u1 u2
// with the products rounded to float32. The parameter steps must be large
// enough that this rounding (ε₃₂ relative) stays small beside them.
func fdF32Arith[T Float](du, u []T, p []float32, _ float64) {
	k1, k2 := p[0]*p[1], p[1]*p[2]
	du[0] = T(k1)*u[0] - T(p[2])*u[1]
	du[1] = T(k2) * u[0] * u[1]
}

func fdF32ArithJac(Ju, Jp []float64, u, p []float64) {
	u1, u2 := u[0], u[1]
	k1 := float64(float32(p[0]) * float32(p[1])) // as F rounds them
	k2 := float64(float32(p[1]) * float32(p[2]))
	Ju[0], Ju[1], Ju[2], Ju[3] = k1, -p[2], k2*u2, k2*u1
	Jp[0], Jp[1], Jp[2] = p[1]*u1, p[0]*u1, -u2
	Jp[3], Jp[4], Jp[5] = 0, p[2]*u1*u2, p[1]*u1*u2
}

func fdCases() []fdCase {
	return []fdCase{
		{"LotkaVolterra", 2, []float32{1.5, 1, 3, 1}, []float64{1.2, 0.8}, fdLVJac, 1e-10, 1e-12},
		{"Robertson", 3, []float32{0.04, 1e4, 3e7}, []float64{0.9, 3.6e-5, 0.1}, fdRobertsonJac, 1e-10, 1e-12},
		{"curved", 2, []float32{0.9, 1.3, 0.7, 1.1}, []float64{0.6, -0.8}, fdCurvedJac, 1e-10, 3e-5},
		{"float32 parameter arithmetic", 2, []float32{1.7, 0.3, 2.9}, []float64{0.7, 1.1}, fdF32ArithJac, 3e-10, 3e-5},
	}
}

// fdRHS is the case's right-hand side in state type T.
func fdRHS[T Float](c fdCase) func(du, u []T, p []float32, t float64) {
	switch c.name {
	case "LotkaVolterra":
		return lotkavolterra.F[T]
	case "Robertson":
		return fdRobertson[T]
	case "float32 parameter arithmetic":
		return fdF32Arith[T]
	}
	return fdCurved[T]
}

// fdDot is Σ_j a[off+j·stride]·x[j] and Σ_j of its terms' magnitudes: a
// closed-form product and the scale its rounding is of.
func fdDot[T Float](a []float64, off, stride int, x []T) (want, mag float64) {
	for j := range x {
		t := a[off+j*stride] * float64(x[j])
		want, mag = want+t, mag+math.Abs(t)
	}
	return want, mag
}

// fdErrors measures the finite-difference JVP and VJP of f against the
// closed-form Jacobians in random directions: the largest error of the ∂u
// and the ∂p parts, each relative to the magnitude of its terms
// (Σ_j |J_ij x_j|, the scale that rounding and truncation errors are of).
func fdErrors[T Float](t *testing.T, c fdCase, f func(du, u []T, p []float32, t float64), dirs int) (errU, errP float64) {
	t.Helper()
	n, np := c.n, len(c.p)
	JVP := finiteDiffJVP(f, nil)
	VJP := finiteDiffVJP(f, nil)
	u := make([]T, n)
	u64 := make([]float64, n)
	for i, x := range c.u {
		u[i] = T(x)
		u64[i] = float64(u[i])
	}
	p64 := make([]float64, np)
	for k, x := range c.p {
		p64[k] = float64(x)
	}
	Ju, Jp := make([]float64, n*n), make([]float64, n*np)
	c.jac(Ju, Jp, u64, p64)
	rng := rand.New(rand.NewPCG(21, uint64(n)))
	rnd := func(m int) []T {
		x := make([]T, m)
		for i := range x {
			x[i] = T(rng.Float64()*2 - 1)
		}
		return x
	}
	rel := func(got T, want, mag float64) float64 {
		if mag == 0 {
			return math.Abs(float64(got))
		}
		return math.Abs(float64(got)-want) / mag
	}
	jv := make([]T, n)
	zeroV := make([]T, n)
	for range dirs {
		v, dp, w := rnd(n), rnd(np), rnd(n)
		// ∂u·v alone (dp nil), and ∂p·dp alone (v = 0).
		JVP(jv, u, v, c.p, nil, 0)
		for i := range n {
			want, mag := fdDot(Ju, i*n, 1, v)
			errU = max(errU, rel(jv[i], want, mag))
		}
		JVP(jv, u, zeroV, c.p, dp, 0)
		for i := range n {
			want, mag := fdDot(Jp, i*np, 1, dp)
			errP = max(errP, rel(jv[i], want, mag))
		}
		// From zeros: accumulating into other values would add their
		// rounding to a product as small as Robertson's y2² ≈ 1e-9.
		du, dq := make([]T, n), make([]T, np)
		VJP(du, dq, w, u, c.p, 0)
		for j := range n {
			want, mag := fdDot(Ju, j, n, w)
			errU = max(errU, rel(du[j], want, mag))
		}
		for k := range np {
			want, mag := fdDot(Jp, k, np, w)
			errP = max(errP, rel(dq[k], want, mag))
		}
	}
	return errU, errP
}

// TestFiniteDiffProducts checks the finite-difference JVP and VJP against
// closed forms to the accuracy their doc comments state, in float64 and
// float32 state.
func TestFiniteDiffProducts(t *testing.T) {
	const fdTol32 = 1e-4 // float32 state: ε₃₂^(2/3) ≈ 4e-5, with margin
	for _, c := range fdCases() {
		t.Run(c.name, func(t *testing.T) {
			eu, ep := fdErrors(t, c, fdRHS[float64](c), 20)
			t.Logf("float64: relative error ∂u %.2g, ∂p %.2g", eu, ep)
			if !(eu <= c.tolU) || !(ep <= c.tolP) {
				t.Errorf("float64: relative errors ∂u %.3g, ∂p %.3g; want ≤ %.3g, %.3g", eu, ep, c.tolU, c.tolP)
			}
			eu, ep = fdErrors(t, c, fdRHS[float32](c), 20)
			t.Logf("float32: relative error ∂u %.2g, ∂p %.2g", eu, ep)
			if !(eu <= fdTol32) || !(ep <= fdTol32) {
				t.Errorf("float32: relative errors ∂u %.3g, ∂p %.3g; want ≤ %.3g", eu, ep, fdTol32)
			}
		})
	}
}

// The products evaluate F only where they must (no column for dp_k = 0, no
// ∂u difference for v = 0, nothing for w = 0, no ∂p columns for dp nil),
// add into du and dp, leave the caller's p alone, and allocate nothing once
// warm.
func TestFiniteDiffEvaluationsAndAllocs(t *testing.T) {
	evals := 0
	f := func(du, u []float64, p []float32, t float64) {
		evals++
		lotkavolterra.F(du, u, p, t)
	}
	JVP, VJP := finiteDiffJVP(f, nil), finiteDiffVJP(f, nil)
	u, p := []float64{1.2, 0.8}, []float32{1.5, 1, 3, 1}
	pCopy := append([]float32(nil), p...)
	jv, du, dq := make([]float64, 2), make([]float64, 2), make([]float64, 4)
	v, v0, w, w0 := []float64{1, 2}, []float64{0, 0}, []float64{1, -1}, []float64{0, 0}
	dp, dp2 := []float64{1, 0, 0, 2}, []float64{0, 0, 3, 0}
	cases := []struct {
		name  string
		call  func()
		evals int
	}{
		{"JVP", func() { JVP(jv, u, v, p, dp, 0) }, 2 + 2*2},
		{"JVP dp nil", func() { JVP(jv, u, v, p, nil, 0) }, 2},
		{"JVP v = 0", func() { JVP(jv, u, v0, p, dp2, 0) }, 2},
		{"VJP", func() { VJP(du, dq, w, u, p, 0) }, 2*2 + 2*4},
		{"VJP dp nil", func() { VJP(du, nil, w, u, p, 0) }, 2 * 2},
		{"VJP w = 0", func() { VJP(du, dq, w0, u, p, 0) }, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evals = 0
			c.call()
			if evals != c.evals {
				t.Errorf("%d evaluations of F, want %d", evals, c.evals)
			}
			if !slices.Equal(p, pCopy) {
				t.Fatalf("p changed to %v, was %v", p, pCopy)
			}
			if a := testing.AllocsPerRun(50, c.call); a != 0 {
				t.Errorf("warm call allocates %v times, want 0", a)
			}
		})
	}
	// JVP with v = 0 and dp = 3·e_2 is 3·∂F/∂p_2 = (0, −3 u2), exact to
	// rounding (F is linear in p): ε·|F|/δ ≈ 2e-14.
	JVP(jv, u, v0, p, dp2, 0)
	if want := -3 * u[1]; jv[0] != 0 || math.Abs(jv[1]-want) > 1e-12 {
		t.Errorf("JVP along p_2 = %v, want [0 %g]", jv, want)
	}
	// VJP adds: twice from zeros is twice once.
	clear(du)
	clear(dq)
	VJP(du, dq, w, u, p, 0)
	once := append(slices.Clone(du), dq...)
	VJP(du, dq, w, u, p, 0)
	for i, x := range append(slices.Clone(du), dq...) {
		if x != 2*once[i] {
			t.Errorf("VJP twice: element %d = %g, want 2·%g", i, x, once[i])
		}
	}
}
