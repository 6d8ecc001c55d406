package stiffprob

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/flatkit/flatkit/ode/linalg"
	"pgregory.net/rapid"
)

// problem is what the Jacobian tests need of a problem.
type problem struct {
	name    string
	n       int
	u0      []float64
	p       []float32
	t       float64
	f       func(du, u []float64, p []float32, t float64)
	jac     func(J, u []float64, p []float32, t float64) // dense
	jacBand func(J, u []float64, p []float32, t float64) // band 2, 2, or nil
	pattern *linalg.Pattern                              // with jacSparse, or nil
	sparse  func(J, u []float64, p []float32, t float64)
}

func testProblems() []problem {
	var ps []problem
	for _, n := range []int{1, 2, 3, 7} {
		b := NewBruss1D[float64](n)
		ps = append(ps, problem{name: fmt.Sprintf("Bruss1D N=%d", n), n: b.Dim(), u0: b.U0(), f: b.F,
			jac: b.Jac, jacBand: b.JacBand, pattern: b.Pattern(), sparse: b.JacSparse})
	}
	for _, n := range []int{3, 4, 5} {
		b := NewBruss2D[float64](n)
		for _, t := range []float64{0, 2} {
			ps = append(ps, problem{name: fmt.Sprintf("Bruss2D N=%d t=%g", n, t), n: b.Dim(), u0: b.U0(), t: t,
				f: b.F, jac: b.Jac, pattern: b.Pattern(), sparse: b.JacSparse})
		}
	}
	var pl Pollu[float64]
	for _, p := range [][]float32{nil, PolluRates()} {
		ps = append(ps, problem{name: fmt.Sprintf("Pollu at y0 p=%d", len(p)), n: 20, u0: pl.U0(), p: p, f: pl.F,
			jac: pl.Jac, pattern: pl.Pattern(), sparse: pl.JacSparse},
			problem{name: fmt.Sprintf("Pollu at y(60) p=%d", len(p)), n: 20, u0: PolluRef, p: p, f: pl.F,
				jac: pl.Jac, pattern: pl.Pattern(), sparse: pl.JacSparse})
	}
	for _, n := range []int{2, 3, 6} {
		m := Medakzo[float64]{N: n}
		u0 := m.U0()
		for i := range u0 {
			u0[i] += 0.5
		}
		for _, p := range [][]float32{{2}, {0}, nil} {
			ps = append(ps, problem{name: fmt.Sprintf("Medakzo N=%d p=%v", n, p), n: m.Dim(), u0: u0, p: p, t: 3,
				f: m.F, jac: m.Jac, jacBand: m.JacBand})
		}
	}
	return ps
}

// TestJacobiansCentralDifferences checks each dense Jacobian against
// central differences of F in random directions about random states
// near the initial one, and against the whole difference-quotient
// Jacobian column by column, so that an entry F depends on but Jac leaves
// out is caught too.
func TestJacobiansCentralDifferences(t *testing.T) {
	for _, pr := range testProblems() {
		t.Run(pr.name, func(t *testing.T) {
			n := pr.n
			J := make([]float64, n*n)
			rapid.Check(t, func(rt *rapid.T) {
				u := make([]float64, n)
				for i := range u {
					u[i] = pr.u0[i] * (1 + rapid.Float64Range(-0.3, 0.3).Draw(rt, "du"))
					u[i] += rapid.Float64Range(-0.1, 0.1).Draw(rt, "shift")
				}
				v := make([]float64, n)
				for i := range v {
					v[i] = rapid.Float64Range(-1, 1).Draw(rt, "v")
				}
				pr.jac(J, u, pr.p, pr.t)
				fd := centralDiff(pr, u, v)
				// scale is the size of row i of J·v; mag that of the terms
				// of F_i, Σ_j |J_ij u_j|, whose rounding the difference
				// quotient divides by h.
				jv, scale, mag := make([]float64, n), make([]float64, n), make([]float64, n)
				for i := 0; i < n; i++ {
					for j := 0; j < n; j++ {
						jv[i] += J[i*n+j] * v[j]
						scale[i] += math.Abs(J[i*n+j] * v[j])
						mag[i] += math.Abs(J[i*n+j] * u[j])
					}
				}
				for i := range jv {
					if math.Abs(jv[i]-fd[i]) > 1e-6*scale[i]+1e-9*(1+mag[i]) {
						rt.Fatalf("row %d: J·v = %.15g, central difference %.15g (scale %g)", i, jv[i], fd[i], scale[i])
					}
				}
			})
			// The whole Jacobian by columns at the initial state.
			pr.jac(J, pr.u0, pr.p, pr.t)
			e := make([]float64, n)
			for j := 0; j < n; j++ {
				clear(e)
				e[j] = 1
				col := centralDiff(pr, pr.u0, e)
				for i := 0; i < n; i++ {
					if d := math.Abs(J[i*n+j] - col[i]); d > 1e-6*(1+math.Abs(col[i])) {
						t.Fatalf("entry (%d, %d): Jac %.15g, central difference %.15g", i, j, J[i*n+j], col[i])
					}
				}
			}
		})
	}
}

// centralDiff is (F(u + h v) − F(u − h v)) / 2h.
func centralDiff(pr problem, u, v []float64) []float64 {
	n := len(u)
	const h = 1e-5
	up, um, fp, fm := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range u {
		up[i], um[i] = u[i]+h*v[i], u[i]-h*v[i]
	}
	pr.f(fp, up, pr.p, pr.t)
	pr.f(fm, um, pr.p, pr.t)
	for i := range fp {
		fp[i] = (fp[i] - fm[i]) / (2 * h)
	}
	return fp
}

// TestJacobianStorages checks that the band and CSR Jacobians hold
// exactly the dense Jacobian's entries, and that the dense Jacobian is
// zero outside the band and the pattern.
func TestJacobianStorages(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, pr := range testProblems() {
		n := pr.n
		u := make([]float64, n)
		for i := range u {
			u[i] = pr.u0[i] + rng.Float64()
		}
		J := make([]float64, n*n)
		pr.jac(J, u, pr.p, pr.t)
		if pr.jacBand != nil {
			B := make([]float64, 5*n)
			for i := range B {
				B[i] = math.NaN() // JacBand must write every slot
			}
			pr.jacBand(B, u, pr.p, pr.t)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					if d := j - i; d < -2 || d > 2 {
						if J[i*n+j] != 0 {
							t.Errorf("%s: entry (%d, %d) = %g outside the band", pr.name, i, j, J[i*n+j])
						}
						continue
					}
					if b := B[i*5+j-i+2]; b != J[i*n+j] {
						t.Errorf("%s: band entry (%d, %d) = %g, dense %g", pr.name, i, j, b, J[i*n+j])
					}
				}
			}
		}
		if pr.pattern != nil {
			if err := pr.pattern.Validate(); err != nil {
				t.Fatalf("%s: %v", pr.name, err)
			}
			S := make([]float64, pr.pattern.NNZ())
			for i := range S {
				S[i] = math.NaN()
			}
			pr.sparse(S, u, pr.p, pr.t)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					k := pr.pattern.Index(i, j)
					if k < 0 {
						if J[i*n+j] != 0 {
							t.Errorf("%s: entry (%d, %d) = %g outside the pattern", pr.name, i, j, J[i*n+j])
						}
						continue
					}
					if S[k] != J[i*n+j] {
						t.Errorf("%s: CSR entry (%d, %d) = %g, dense %g", pr.name, i, j, S[k], J[i*n+j])
					}
				}
			}
		}
	}
}

// TestBruss2DPublished checks the right-hand side at t = 0, N = 32
// against the values the SciML tutorial publishes. Julia's du[m] is
// 1-based and column-major over u[i, j, k] (N×N×2): m = i + (j−1)N +
// (k−1)N² with 1-based i, j, k, which is state m − 1 here.
func TestBruss2DPublished(t *testing.T) {
	b := NewBruss2D[float64](32)
	du := make([]float64, b.Dim())
	b.F(du, b.U0(), nil, 0)
	for _, c := range []struct {
		m    int // Julia's index
		want float64
	}{{34, 802.9807693762164}, {1058, 985.3120721709204}, {2000, -403.5817880634729}, {2048, 1431.1460373522068}} {
		got := du[c.m-1]
		if got != c.want {
			if math.Abs(got-c.want) > 1e-13*math.Abs(c.want) {
				t.Errorf("du[%d] = %.17g, want %.17g", c.m, got, c.want)
			} else {
				t.Logf("du[%d] = %.17g, published %.17g: %.2g relative", c.m, got, c.want, math.Abs(got-c.want)/math.Abs(c.want))
			}
		}
	}
}

// TestBruss2DForcing checks that the forcing adds 5 to u' in the disc
// from t = 1.1 on, and nothing elsewhere or before.
func TestBruss2DForcing(t *testing.T) {
	b := NewBruss2D[float64](32)
	u := b.U0()
	d0, d1 := make([]float64, b.Dim()), make([]float64, b.Dim())
	b.F(d0, u, nil, math.Nextafter(1.1, 0))
	b.F(d1, u, nil, 1.1)
	inDisc := 0
	for q := range d0 {
		want := 0.0
		if q < 32*32 && b.Forced(q%32, q/32, 1.1) {
			want = 5
			inDisc++
		}
		if d1[q]-d0[q] != want {
			t.Fatalf("state %d: F(1.1) − F(1.1⁻) = %g, want %g", q, d1[q]-d0[q], want)
		}
	}
	if inDisc == 0 {
		t.Fatal("no grid point in the forcing's disc")
	}
}

// TestBruss2DColouring colours the pattern at N = 32 and 64, checks the
// colouring (no two columns of a group share a row) and that it needs at
// most 12 groups.
func TestBruss2DColouring(t *testing.T) {
	for _, n := range []int{32, 64} {
		p := NewBruss2D[float64](n).Pattern()
		colours, k := linalg.Colour(p)
		for i := 0; i < p.Rows; i++ {
			seen := map[int]int{}
			for _, j := range p.Row(i) {
				if o, ok := seen[colours[j]]; ok {
					t.Fatalf("N=%d: row %d has columns %d and %d both in group %d", n, i, o, j, colours[j])
				}
				seen[colours[j]] = j
			}
		}
		t.Logf("N=%d: %d colours for %d columns", n, k, p.Cols)
		if k > 12 {
			t.Errorf("N=%d: %d colours, want at most 12", n, k)
		}
	}
}

// TestMedakzoPhi checks that φ comes from p when given and from t
// otherwise, and that Segments gives each segment its φ.
func TestMedakzoPhi(t *testing.T) {
	m := Medakzo[float64]{N: 5}
	u := m.U0()
	du := make([]float64, m.Dim())
	for _, c := range []struct {
		p    []float32
		t    float64
		want float64
	}{{nil, 5, 2}, {nil, math.Nextafter(5, 6), 0}, {[]float32{0}, 1, 0}, {[]float32{2}, 7, 2}} {
		m.F(du, u, c.p, c.t)
		// u = 0, v = 1: f_1 = φβ/Δζ² − αφ/(2Δζ).
		a, b, dz := m.coeffs(1)
		want := (c.want*b)/(dz*dz) - a*c.want/(2*dz)
		if math.Abs(du[0]-want) > 1e-12*math.Abs(want)+1e-300 {
			t.Errorf("p %v, t %g: f_1 = %g, want %g (φ = %g)", c.p, c.t, du[0], want, c.want)
		}
	}
	s := m.Segments()
	if len(s) != 2 || s[0].P[0] != 2 || s[1].P[0] != 0 || s[0].T1 != 5 || s[1].T0 != 5 || s[1].T1 != 20 {
		t.Errorf("Segments %v", s)
	}
}

// TestFloat32 checks that the float32 instances agree with the float64
// ones to float32 precision.
func TestFloat32(t *testing.T) {
	check := func(name string, f32 func(du, u []float32, p []float32, t float64), f64 func(du, u []float64, p []float32, t float64), u64 []float64, p []float32, tt float64) {
		u32 := make([]float32, len(u64))
		for i, v := range u64 {
			u32[i] = float32(v)
			u64[i] = float64(u32[i])
		}
		d32, d64 := make([]float32, len(u64)), make([]float64, len(u64))
		f32(d32, u32, p, tt)
		f64(d64, u64, p, tt)
		scale := 0.0
		for _, v := range d64 {
			scale = max(scale, math.Abs(v))
		}
		for i := range d64 {
			if math.Abs(float64(d32[i])-d64[i]) > 1e-4*scale {
				t.Errorf("%s: du[%d] = %g (float32), %g (float64)", name, i, d32[i], d64[i])
			}
		}
	}
	check("Bruss1D", NewBruss1D[float32](20).F, NewBruss1D[float64](20).F, NewBruss1D[float64](20).U0(), nil, 0)
	check("Bruss2D", NewBruss2D[float32](8).F, NewBruss2D[float64](8).F, NewBruss2D[float64](8).U0(), nil, 2)
	check("Pollu", Pollu[float32]{}.F, Pollu[float64]{}.F, PolluRef, nil, 0)
	m := Medakzo[float64]{N: 10}
	u := m.U0()
	for i := range u {
		u[i] += 0.25
	}
	check("Medakzo", Medakzo[float32]{N: 10}.F, m.F, u, []float32{2}, 0)
}

// TestAllocs checks that F and the Jacobians allocate nothing.
func TestAllocs(t *testing.T) {
	b1 := NewBruss1D[float64](50)
	b2 := NewBruss2D[float64](16)
	m := Medakzo[float64]{N: 50}
	u1, u2, um, up := b1.U0(), b2.U0(), m.U0(), Pollu[float64]{}.U0()
	d1, d2, dm, dp := make([]float64, len(u1)), make([]float64, len(u2)), make([]float64, len(um)), make([]float64, 20)
	J1, Jb, Js1 := make([]float64, len(u1)*len(u1)), make([]float64, 5*len(u1)), make([]float64, b1.Pattern().NNZ())
	Js2, Jm := make([]float64, b2.Pattern().NNZ()), make([]float64, 5*len(um))
	Jp := make([]float64, 400)
	p := []float32{2}
	for name, fn := range map[string]func(){
		"Bruss1D.F": func() { b1.F(d1, u1, nil, 0) }, "Bruss1D.Jac": func() { b1.Jac(J1, u1, nil, 0) },
		"Bruss1D.JacBand": func() { b1.JacBand(Jb, u1, nil, 0) }, "Bruss1D.JacSparse": func() { b1.JacSparse(Js1, u1, nil, 0) },
		"Bruss2D.F": func() { b2.F(d2, u2, nil, 2) }, "Bruss2D.JacSparse": func() { b2.JacSparse(Js2, u2, nil, 2) },
		"Medakzo.F": func() { m.F(dm, um, p, 0) }, "Medakzo.JacBand": func() { m.JacBand(Jm, um, p, 0) },
		"Pollu.F": func() { Pollu[float64]{}.F(dp, up, nil, 0) }, "Pollu.Jac": func() { Pollu[float64]{}.Jac(Jp, up, nil, 0) },
	} {
		if a := testing.AllocsPerRun(10, fn); a != 0 {
			t.Errorf("%s: %v allocations, want 0", name, a)
		}
	}
}

// TestPow15 checks pow15 against z·√z in 200-bit arithmetic, rounded
// once: correctly rounded on random arguments and on the grid's.
func TestPow15(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	zs := []float64{0, 1, 0.25, 4}
	for i := 0; i < 32; i++ {
		x := float64(i) / 31
		zs = append(zs, x*(1-x))
	}
	for range 20000 {
		zs = append(zs, rng.Float64()*math.Pow(2, float64(rng.IntN(40)-20)))
	}
	bad := 0
	for _, z := range zs {
		want := exactPow15(z)
		if got := pow15(z); got != want {
			bad++
			if bad < 5 {
				t.Errorf("pow15(%v) = %v, want %v", z, got, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d not correctly rounded", bad, len(zs))
	}
}

func exactPow15(z float64) float64 {
	const prec = 200
	bz := new(big.Float).SetPrec(prec).SetFloat64(z)
	s := new(big.Float).SetPrec(prec).Sqrt(bz)
	f, _ := s.Mul(s, bz).Float64()
	return f
}

// TestBruss2DSegmentsForcing checks that Segments passes the forcing in
// P: off in [0, 1.1] even at its end, t = 1.1, and on in [1.1, 11.5] from
// its start.
func TestBruss2DSegmentsForcing(t *testing.T) {
	b := NewBruss2D[float64](8)
	u := b.U0()
	s := b.Segments()
	if len(s) != 2 || s[0].T1 != 1.1 || s[1].T0 != 1.1 {
		t.Fatalf("Segments %v, want [0, 1.1] and [1.1, 11.5]", s)
	}
	off, end, start := make([]float64, b.Dim()), make([]float64, b.Dim()), make([]float64, b.Dim())
	b.F(off, u, nil, 1)
	b.F(end, u, s[0].P, s[0].T1)
	b.F(start, u, s[1].P, s[1].T0)
	for q := range off {
		if end[q] != off[q] {
			t.Fatalf("state %d: F at the end of the first segment is %g, want %g, unforced", q, end[q], off[q])
		}
		want := 0.0
		if q < 8*8 && b.Forced(q%8, q/8, 1.1) {
			want = 5
		}
		if d := start[q] - off[q]; d != want {
			t.Fatalf("state %d: F at the start of the second segment is forced by %g, want %g", q, d, want)
		}
	}
}
