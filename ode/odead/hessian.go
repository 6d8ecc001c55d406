package odead

import (
	"fmt"

	"github.com/flatkit/flatkit/ad"
)

// The second-order product of Derivs and Derivs64, ode.Problem.VJPJVP, by
// forward mode over reverse mode on one recording:
//
//	[gu, gp] = VJPOf(y, w),   [hu, hp] = VJPOf(y, wd) + JVPOf([gu, gp], (ud, pd)),
//
// the derivative of wᵀ·∂F/∂(u, p) along (wd, ud, pd). The reverse sweep's
// results are values of the recording, so the forward sweep differentiates
// them exactly; a replayable recording is replayed with both sweeps.

// The second-order product's recordings, after func.go's.
const (
	progVJPJVP  = nProgs + iota // both Params, swept to both and then forward
	progVJPJVPu                 // the same with a nil pd
	nHvProgs    = 2
)

func (a *adRHS[F]) callVJPJVP(gu, gp, hu, hp, w, wd, u, ud []F, p []float32, pd []F, t float64) {
	a.report(a.evalVJPJVP(gu, gp, hu, hp, w, wd, u, ud, p, pd, t))
}

// evalVJPJVP adds wᵀ∂F/∂u into gu, wᵀ∂F/∂p into gp, and their derivative
// along (wd, ud, pd) into hu and hp. pd nil seeds nothing at p.
func (a *adRHS[F]) evalVJPJVP(gu, gp, hu, hp, w, wd, u, ud []F, p []float32, pd []F, t float64) error {
	n, np := a.n, len(p)
	if len(gu) != n || len(hu) != n || len(w) != n || len(wd) != n || len(ud) != n || len(gp) != np || len(hp) != np || pd != nil && len(pd) != np {
		return fmt.Errorf("VJPJVP: gu, hu, w, wd and ud have %d, %d, %d, %d and %d elements, gp, hp and pd %d, %d and %d; want %d (the states) and %d (the parameters) or a nil pd",
			len(gu), len(hu), len(w), len(wd), len(ud), len(gp), len(hp), len(pd), n, np)
	}
	wk := a.get()
	k := progVJPJVP
	if pd == nil {
		k = progVJPJVPu
	}
	pr := &wk.progs[k]
	defer a.done(wk, pr)
	if !a.begin(pr, u, p, t, w, wd, ud, pd) {
		y, err := a.record(pr, u, p, t, recUAndP)
		if err != nil {
			return err
		}
		if err := recordVJPJVP(pr, y, w, wd, ud, pd, n, np); err != nil {
			return err
		}
		pr.rows = pr.rows[:0]
		for _, v := range pr.out {
			if !v.IsZero() {
				pr.rows = append(pr.rows, v)
			}
		}
		a.end(pr, p, pr.rows)
	}
	addValues(gu, pr.out[0])
	addValues(gp, pr.out[1])
	addValues(hu, pr.out[2])
	addValues(hp, pr.out[3])
	addValues(hu, pr.out[4])
	addValues(hp, pr.out[5])
	return nil
}

// recordVJPJVP records the products on pr's tape after f's result y:
// out[0:2] the VJP at w, out[2:4] the VJP at wd, out[4:6] the derivative
// of out[0:2] along (ud, pd).
func recordVJPJVP[F interface{ ~float32 | ~float64 }](pr *adProg[F], y ad.Var, w, wd, ud, pd []F, n, np int) error {
	tp := pr.tape
	pr.wrt = [2]ad.Var{pr.in[0], pr.in[1]}
	sw := pr.seed(0, w, n)
	swd := pr.seed(1, wd, n)
	dirs := [2]ad.Var{pr.seed(2, ud, n)}
	if pd != nil {
		dirs[1] = pr.seed(3, pd, np)
	}
	if len(y.Shape()) != 1 {
		y = ad.Reshape(y, n)
	}
	clear(pr.out[:])
	if err := tp.VJPOf(y, sw, pr.wrt[:], pr.out[0:2]); err != nil {
		return err
	}
	if err := tp.VJPOf(y, swd, pr.wrt[:], pr.out[2:4]); err != nil {
		return err
	}
	for i := range 2 {
		if g := pr.out[i]; !g.IsZero() {
			d, err := tp.JVPOf(g, pr.wrt[:], dirs[:])
			if err != nil {
				return err
			}
			pr.out[4+i] = d
		}
	}
	return nil
}
