package linalg_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/flatkit/flatkit/internal/cputime"
	"github.com/flatkit/flatkit/ode/linalg"
)

// gmLaplace2D is W = I − γ·J for a two-species reaction-diffusion
// system on a periodic nx×ny grid, the species interleaved at each point:
// J = D·Δ (five-point Laplacian per species) plus a 2×2 Brusselator-like
// reaction block at each point. It is the shape of the Newton systems of
// the 2-D Brusselator.
type gmLaplace2D struct {
	nx, ny int
	gamma  float64
	diff   [2]float64 // D/h² of each species
	react  []float64  // the reaction blocks, 4 per point, row-major
}

// gmNewLaplace2D builds the operator with γ·D/h² = 2.5·scale for u and
// 1.25·scale for v.
func gmNewLaplace2D(nx, ny int, scale float64) *gmLaplace2D {
	o := &gmLaplace2D{nx: nx, ny: ny, gamma: 0.01, diff: [2]float64{250 * scale, 125 * scale}}
	o.react = make([]float64, 4*nx*ny)
	const b = 3.4
	for p := range nx * ny {
		x, y := float64(p%nx)/float64(nx), float64(p/nx)/float64(ny)
		u := 1 + 0.5*math.Sin(2*math.Pi*x)*math.Cos(2*math.Pi*y)
		v := b / u
		r := o.react[4*p : 4*p+4]
		r[0], r[1] = 2*u*v-(b+1), u*u
		r[2], r[3] = b-2*u*v, -u*u
	}
	return o
}

func (o *gmLaplace2D) len() int { return 2 * o.nx * o.ny }

// apply writes dst = W·v.
func (o *gmLaplace2D) apply(dst, v []float64) {
	nx, ny, g := o.nx, o.ny, o.gamma
	for j := range ny {
		jm, jp := (j+ny-1)%ny*nx, (j+1)%ny*nx
		for i := range nx {
			im, ip := (i+nx-1)%nx, (i+1)%nx
			p := j*nx + i
			r := o.react[4*p : 4*p+4 : 4*p+4]
			for s := range 2 {
				c := v[2*p+s]
				lap := v[2*(j*nx+im)+s] + v[2*(j*nx+ip)+s] + v[2*(jm+i)+s] + v[2*(jp+i)+s] - 4*c
				jv := o.diff[s]*lap + r[2*s]*v[2*p] + r[2*s+1]*v[2*p+1]
				dst[2*p+s] = c - g*jv
			}
		}
	}
}

// blocks is J's diagonal 2×2 blocks: the reaction and the Laplacian's
// diagonal.
func (o *gmLaplace2D) blocks() []float64 {
	j := make([]float64, len(o.react))
	copy(j, o.react)
	for p := range o.nx * o.ny {
		j[4*p] -= 4 * o.diff[0]
		j[4*p+3] -= 4 * o.diff[1]
	}
	return j
}

// gmBlockPrec is the block-diagonal preconditioner of a gmLaplace2D.
type gmBlockPrec struct{ lu *linalg.BlockLU[float64] }

func (p *gmBlockPrec) apply(dst, r []float64) { p.lu.SolveTo(dst, r) }

func gmNewBlockPrec(o *gmLaplace2D, block int) *gmBlockPrec {
	lu := linalg.NewBlockLU[float64](o.len(), block)
	if block != 2 {
		panic("gmNewBlockPrec: block 2 only")
	}
	if k := lu.FactorShifted(o.blocks(), o.gamma); k >= 0 {
		panic(fmt.Sprintf("gmNewBlockPrec: singular at column %d", k))
	}
	return &gmBlockPrec{lu}
}

// BenchmarkGMRES solves W·x = b on the 2-D reaction-diffusion operator to
// a weighted RMS residual of 1e-6 (of a right-hand side of norm about 1),
// restarting after 20 vectors, with and without the block-diagonal
// preconditioner. iters/op is the number of products with W.
func BenchmarkGMRES(b *testing.B) {
	for _, grid := range []int{32, 64} {
		o := gmNewLaplace2D(grid, grid, 1)
		n := o.len()
		pc := gmNewBlockPrec(o, 2)
		rhs := make([]float64, n)
		w := make([]float64, n)
		for i := range rhs {
			rhs[i] = math.Sin(0.37 * float64(i))
			w[i] = 1 + 0.5*math.Cos(float64(i))
		}
		for _, name := range []string{"none", "blockdiag"} {
			b.Run(fmt.Sprintf("n=%d/prec=%s", n, name), func(b *testing.B) {
				var prec func(dst, r []float64)
				if name == "blockdiag" {
					prec = pc.apply
				}
				g := linalg.NewGMRES[float64](n, 20)
				x := make([]float64, n)
				var iters int
				var ok bool
				cputime.Loop(b, func() {
					iters, _, ok = g.Solve(o.apply, prec, rhs, x, w, 1e-6, 50)
				})
				if !ok {
					b.Fatalf("not converged in %d iterations", iters)
				}
				b.ReportMetric(float64(iters), "iters/op")
			})
		}
	}
}

// BenchmarkBlockLU factors and solves the block-diagonal preconditioner
// of the 64×64 grid (n = 8192, 2×2 blocks).
func BenchmarkBlockLU(b *testing.B) {
	o := gmNewLaplace2D(64, 64, 1)
	j := o.blocks()
	lu := linalg.NewBlockLU[float64](o.len(), 2)
	x := make([]float64, o.len())
	b.Run("factor", func(b *testing.B) {
		cputime.Loop(b, func() { lu.FactorShifted(j, o.gamma) })
	})
	b.Run("solve", func(b *testing.B) {
		cputime.Loop(b, func() { lu.Solve(x) })
	})
}
