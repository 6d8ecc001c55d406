package ad_test

import (
	"testing"

	"github.com/flatkit/flatkit/ad"
)

// Helpers shared by the op tests of several files: the error contract of a
// failed op, and the zero-allocation pin of a reused tape's steps.

// wantOpErr checks the contract of an op recorded with bad arguments: the
// tape's error mentions every fragment, and a gradient through the op's
// result y fails rather than returning numbers.
func wantOpErr(t *testing.T, tp *ad.Tape, y ad.Var, frags ...string) {
	t.Helper()
	wantErr(t, tp.Err(), frags...)
	if _, err := tp.Grad(ad.Sum(y)); err == nil {
		t.Error("Grad after the error succeeded")
	}
}

// tapeErrCase is a build on a fresh tape that must leave a sticky error
// mentioning every fragment of want.
type tapeErrCase struct {
	name string
	run  func(tp *ad.Tape) ad.Var
	want []string
}

// checkTapeErrs runs every case in a subtest on a fresh tape and checks
// the tape's error by wantErr.
func checkTapeErrs(t *testing.T, cases []tapeErrCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp := ad.NewTape()
			c.run(tp)
			wantErr(t, tp.Err(), c.want...)
		})
	}
}

// stepPoint returns a point θ and a direction dir of n fixed, varied values
// for the allocation pins.
func stepPoint(n int) (θ, dir []float32) {
	θ, dir = make([]float32, n), make([]float32, n)
	for i := range θ {
		θ[i] = float32(i%11)/20 - 0.25
		dir[i] = float32(i%7)/7 - 0.5
	}
	return θ, dir
}

// pinGradAllocs pins a forward and gradient step of loss at θ on a reused
// tape at zero allocations in steady state: the step runs warm times to
// size the tape, then runs times under testing.AllocsPerRun.
func pinGradAllocs(t *testing.T, warm, runs int, θ []float32, loss func(ad.Var) ad.Var) {
	t.Helper()
	tp := ad.NewTape()
	step := func() {
		if _, err := tp.Grad(loss(tp.Param(θ))); err != nil {
			t.Fatal(err)
		}
		tp.Reset()
	}
	for range warm {
		step()
	}
	if a := testing.AllocsPerRun(runs, step); a != 0 {
		t.Errorf("a forward + gradient step allocates %v times, want 0", a)
	}
}

// pinStepAllocs pins a gradient step and a Hessian-vector-product step
// (along dir) of loss at θ, each on one reused tape, at zero allocations
// in steady state: each step runs once to size the tape, then runs times
// under testing.AllocsPerRun.
func pinStepAllocs(t *testing.T, runs int, θ, dir []float32, loss func(ad.Var) ad.Var) {
	t.Helper()
	tp := ad.NewTape()
	for _, s := range []struct {
		name string
		step func()
	}{
		{"gradient", func() {
			if _, err := tp.Grad(loss(tp.Param(θ))); err != nil {
				t.Fatal(err)
			}
			tp.Reset()
		}},
		{"Hessian-vector product", func() {
			p := tp.Param(θ)
			if _, err := tp.HVPOf(loss(p), p, dir); err != nil {
				t.Fatal(err)
			}
			tp.Reset()
		}},
	} {
		s.step()
		if a := testing.AllocsPerRun(runs, s.step); a != 0 {
			t.Errorf("a %s step allocates %v times, want 0", s.name, a)
		}
	}
}
