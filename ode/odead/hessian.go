package odead

import (
	"fmt"

	"github.com/flatkit/flatkit/ad"
)

// The second-order product of Derivs and Derivs64, ode.Problem.VJPJVP, by
// forward mode over reverse mode on one recording, with w a Param beside
// u and p:
//
//	[gu, gp] = VJPOf(y, w),   [hu, hp] = JVPOf([gu, gp], (ud, pd, wd)),
//
// the derivative of wᵀ·∂F/∂(u, p) along (wd, ud, pd): one reverse sweep
// and one forward sweep of its results. The reverse sweep's results are
// values of the recording, so the forward sweep differentiates them
// exactly; a replayable recording is replayed with both sweeps.

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
	if h := pr.out[2]; !h.IsZero() {
		// h is [hu, hp] without the parts of a zero gu or gp.
		hv := valuesOf[F](h)
		if !pr.out[0].IsZero() {
			for i := range hu {
				hu[i] += hv[i]
			}
			hv = hv[n:]
		}
		if !pr.out[1].IsZero() {
			for k := range hp {
				hp[k] += hv[k]
			}
		}
	}
	return nil
}

// recordVJPJVP records the products on pr's tape after f's result y:
// out[0:2] the VJP at w, a Param, and out[2] the derivative of their
// concatenation along (ud, pd, wd) in (u, p, w).
func recordVJPJVP[F interface{ ~float32 | ~float64 }](pr *adProg[F], y ad.Var, w, wd, ud, pd []F, n, np int) error {
	tp := pr.tape
	pr.wrt = [2]ad.Var{pr.in[0], pr.in[1]}
	pr.sh[2][0] = n
	pr.buf[2] = append(pr.buf[2][:0], w...)
	pw := stateParam(tp, pr.buf[2])
	pr.in[2] = pw
	dirs := [3]ad.Var{pr.seed(2, ud, n), {}, pr.seed(1, wd, n)}
	if pd != nil {
		dirs[1] = pr.seed(3, pd, np)
	}
	if len(y.Shape()) != 1 {
		y = ad.Reshape(y, n)
	}
	clear(pr.out[:])
	if err := tp.VJPOf(y, pw, pr.wrt[:], pr.out[0:2]); err != nil {
		return err
	}
	g := pr.out[0]
	switch {
	case g.IsZero():
		g = pr.out[1]
	case !pr.out[1].IsZero():
		g = ad.Concat(0, pr.out[0], pr.out[1])
	}
	if g.IsZero() {
		return nil
	}
	wrt := [3]ad.Var{pr.in[0], pr.in[1], pw}
	d, err := tp.JVPOf(g, wrt[:], dirs[:])
	pr.out[2] = d
	return err
}
