package ode_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

// Hessian-vector products of a loss with Loss.End, where the solve ends
// at T1: End is a save at T1.

// lvEnd is End(t, u) = t·(u_0·u_1)²/20, whose dL/dt the product does not
// differentiate (T1 is fixed), and its second derivative in u.
func lvEnd(t float64, u, dl []float64) (float64, float64) {
	q := u[0] * u[1]
	dl[0], dl[1] = t*q*u[1]/10, t*q*u[0]/10
	return t * q * q / 20, q * q / 20
}

func lvEndHv(t float64, u, ud, hv []float64) {
	hv[0] = t * (u[1]*u[1]*ud[0] + 2*u[0]*u[1]*ud[1]) / 10
	hv[1] = t * (2*u[0]*u[1]*ud[0] + u[0]*u[0]*ud[1]) / 10
}

// lvEndLoss is lvPointLoss with End; with exact, End's second derivative
// is lvEndHv, else differences of End's dL/du.
func lvEndLoss(exact bool) ode.HvLoss[float64] {
	l := lvPointLoss(exact)
	l.End = lvEnd
	if exact {
		l.EndHv = lvEndHv
	}
	return l
}

// lvEndAsSave is lvEndLoss(true) with End written as a fourth Point, at
// T1.
func lvEndAsSave(T1 float64) ode.HvLoss[float64] {
	l := lvPointLoss(true)
	point, pointHv := l.Point, l.PointHv
	k := len(l.At)
	l.At = append(append([]float64(nil), l.At...), T1)
	l.Point = func(i int, t float64, u, dl []float64) float64 {
		if i == k {
			v, _ := lvEnd(t, u, dl)
			return v
		}
		return point(i, t, u, dl)
	}
	l.PointHv = func(i int, t float64, u, ud, hv []float64) {
		if i == k {
			lvEndHv(t, u, ud, hv)
			return
		}
		pointHv(i, t, u, ud, hv)
	}
	return l
}

// TestHvLossEnd: on Lotka-Volterra with a loss at three save times, a
// running cost and End at T1, the Hessian by products along the unit
// vectors equals Richardson central differences of the gradient (1e-7 of
// max|H| for Vern7 and Rodas5P, as TestHessianVectorLotkaVolterra), with
// End's second derivative exact (EndHv) or by differences, and every
// product equals that of the same loss with End written as a save at T1:
// exactly with EndHv (the same solves, the same jumps), to 1e-9 of max|H|
// with End's second derivative by a central difference of step ∛ε.
func TestHvLossEnd(t *testing.T) {
	ctx := context.Background()
	const N = 6
	ref, scale := lvHessianRef(t, lvEndLoss(true).Loss)
	T1 := lvHvProblem().T1
	for _, tc := range []struct {
		name  string
		m     ode.Method
		exact bool
	}{
		{"Vern7", ode.Vern7(), true},
		{"Vern7/End-by-differences", ode.Vern7(), false},
		{"Rodas5P", ode.Rodas5P(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tol := ode.Tol(1e-11, 1e-13)
			H, err := ode.FullHessian(ctx, lvHvProblem(), tc.m, lvEndLoss(tc.exact), ode.InterpolatingAdjoint{}, tol)
			if err != nil {
				t.Fatal(err)
			}
			S, err := ode.FullHessian(ctx, lvHvProblem(), tc.m, lvEndAsSave(T1), ode.InterpolatingAdjoint{}, tol)
			if err != nil {
				t.Fatal(err)
			}
			var asym, dev, save float64
			for i := range N * N {
				asym = max(asym, math.Abs(H[i]-H[(i%N)*N+i/N])/scale)
				dev = max(dev, math.Abs(H[i]-ref[i])/scale)
				save = max(save, math.Abs(H[i]-S[i])/scale)
			}
			t.Logf("asymmetry %.2g, against differences %.2g, against End as a save %.2g of max|H|", asym, dev, save)
			if asym > 1e-9 {
				t.Errorf("H is asymmetric by %.3g of max|H|, want ≤ 1e-9", asym)
			}
			if dev > 1e-7 {
				t.Errorf("H differs from differences of the gradient by %.3g of max|H|, want ≤ 1e-7", dev)
			}
			bar := 0.0 // the same solves and the same jumps
			if !tc.exact {
				bar = 1e-9 // End's second derivative by a central difference of step ∛ε
			}
			if save > bar {
				t.Errorf("H differs from that of End written as a save at T1 by %.3g of max|H|, want ≤ %g", save, bar)
			}
		})
	}
}

// End with a schedule's terminating effect before save times is an
// error (TestHvTerminatingMatchDifferences has End where the firing ends
// the solve), and a warm product with End allocates nothing.
func TestHvLossEndTerminatingAndAllocs(t *testing.T) {
	ctx := context.Background()
	term := pkProblem(false)
	eff := term.Schedules[0].Effect
	term.Schedules[0].Effect = func(u []float64, p []float32, t float64) bool {
		eff(u, p, t)
		return t > 2
	}
	l := pkLoss()
	l.End = func(t float64, u, dl []float64) (float64, float64) {
		dl[0] = 1
		return u[0], 0
	}
	_, err := ode.HessianVector(ctx, term, ode.Tsit5(), l, []float64{1, 0, 0}, ode.InterpolatingAdjoint{})
	if err == nil || !strings.Contains(err.Error(), "terminating") {
		t.Errorf("End with a terminating effect before save times: error %v, want one naming the terminating firing", err)
	}

	hs, err := ode.NewHvSolver(lvHvProblem(), ode.Tsit5(), ode.InterpolatingAdjoint{})
	if err != nil {
		t.Fatal(err)
	}
	loss := lvEndLoss(false)
	v := []float64{0.3, -1, 0.5, 0.25, 1, -0.5}
	if _, err := hs.Hv(ctx, θLV, loss, v); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(5, func() {
		if _, err := hs.Hv(ctx, θLV, loss, v); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("%v allocations per warm product with End, want 0", a)
	}
}

// θLV is Lotka-Volterra's parameters.
var θLV = []float32{1.5, 1, 3, 1}

// With a Saved loss, and on a span integrated backwards (End's save at T1
// first in the order of the times), a loss with End gives the same
// product as with End written as a save at T1.
func TestHvLossEndSavedBackwardSpan(t *testing.T) {
	ctx := context.Background()
	prob := lvHvProblem()
	prob.T0, prob.T1 = 3, 0
	saved := func(ts []float64, us, dl [][]float64) float64 {
		var v float64
		for i, u := range us {
			a, b := 1-u[0], 1-u[1]
			dl[i][0], dl[i][1] = -a, -b
			v += (a*a + b*b) / 2
		}
		return v
	}
	end := ode.HvLoss[float64]{Loss: ode.Loss[float64]{At: []float64{2, 0}, Saved: saved, End: lvEnd}, EndHv: lvEndHv}
	asSave := ode.HvLoss[float64]{Loss: ode.Loss[float64]{At: []float64{2, 0, 0},
		Saved: func(ts []float64, us, dl [][]float64) float64 {
			v, _ := lvEnd(ts[2], us[2], dl[2])
			return v + saved(ts[:2], us[:2], dl[:2])
		}},
		SavedHv: func(ts []float64, us, uds, hvs [][]float64) {
			for i := range 2 {
				hvs[i][0], hvs[i][1] = uds[i][0], uds[i][1]
			}
			lvEndHv(ts[2], us[2], uds[2], hvs[2])
		}}
	end.SavedHv = func(ts []float64, us, uds, hvs [][]float64) {
		for i := range us {
			hvs[i][0], hvs[i][1] = uds[i][0], uds[i][1]
		}
	}
	v := []float64{0.3, -1, 0.5, 0.25, 1, -0.5}
	opts := ode.Tol(1e-10, 1e-12)
	a, err := ode.HessianVector(ctx, prob, ode.Vern7(), end, v, ode.InterpolatingAdjoint{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := append(append([]float64(nil), a.HvP...), a.HvU0...)
	b, err := ode.HessianVector(ctx, prob, ode.Vern7(), asSave, v, ode.InterpolatingAdjoint{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]float64(nil), b.HvP...), b.HvU0...)
	if e := relNorm(got, want); e > 1e-14 {
		t.Errorf("H·v with End differs from End written as a save at T1 by %.3g relative, want ≤ 1e-14 (got %v, want %v)", e, got, want)
	}
	if math.Abs(a.Value-b.Value) > 1e-14*math.Abs(b.Value) {
		t.Errorf("loss %.17g with End, %.17g with End as a save", a.Value, b.Value)
	}
}
