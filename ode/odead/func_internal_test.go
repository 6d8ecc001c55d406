package odead

import (
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/model"
)

// TestDerivsReplayOrRecord: Derivs replays exactly when it should: a
// function declared Replayable is kept after its first call unless ad
// refuses it (Max); any other function, a NeuralRHS too, is recorded
// anew.
func TestDerivsReplayOrRecord(t *testing.T) {
	dense := model.Chain(model.Dense(2, 4), model.Tanh(), model.Dense(4, 2))
	withMax := model.Chain(model.Dense(2, 4), model.Func("max", func(x ad.Var) ad.Var { return ad.Add(x, ad.Max(x, 1)) }), model.Dense(4, 2))
	wrap := func(f func(u, p ad.Var, t float64) ad.Var) func(u, p ad.Var, t float64) ad.Var {
		return func(u, p ad.Var, t float64) ad.Var { return f(u, p, t) }
	}
	cases := []struct {
		name string
		net  model.Layer
		f    func(u, p ad.Var, t float64) ad.Var
		opts []Option
		want bool
	}{
		{"NeuralRHS", dense, NeuralRHS(dense), nil, false},
		{"NeuralRHS declared", dense, NeuralRHS(dense), []Option{Replayable()}, true},
		{"wrapped", dense, wrap(NeuralRHS(dense)), nil, false},
		{"declared", dense, wrap(NeuralRHS(dense)), []Option{Replayable()}, true},
		{"max", withMax, NeuralRHS(withMax), []Option{Replayable()}, false},
	}
	for _, c := range cases {
		θ := make([]float32, 4*2+4+2*4+2)
		for i := range θ {
			θ[i] = 0.1 * float32(i%7-3)
		}
		a := newADRHS[float32](c.f, 2, c.opts)
		u, du, dp, w := []float32{0.5, -1}, make([]float32, 2), make([]float32, len(θ)), []float32{1, 2}
		for range 2 {
			if err := a.evalF(du, u, θ, 0); err != nil {
				t.Fatal(err)
			}
			if err := a.evalVJP(du, dp, w, u, θ, 0); err != nil {
				t.Fatal(err)
			}
		}
		wk := a.get()
		if got := wk.progs[progF].ready && wk.progs[progVJP].ready; got != c.want {
			t.Errorf("%s: replayed %v, want %v", c.name, got, c.want)
		}
		a.put(wk)
	}
}

// JVP and VJP with slices of the wrong lengths say which lengths they want.
func TestDerivsLengthErrors(t *testing.T) {
	dense := model.Chain(model.Dense(2, 4), model.Tanh(), model.Dense(4, 2))
	a := newADRHS[float32](NeuralRHS(dense), 2, nil)
	θ := make([]float32, 4*2+4+2*4+2)
	u, v := []float32{0.5, -1}, []float32{1, 2}
	err := a.evalJVP(make([]float32, 3), u, v, θ, nil, 0)
	if want := "JVP: jv has 3 elements, v 2, dp 0, want 2 (the states), 2 (len(u)) and 22 (the parameters) or a nil dp"; err == nil || err.Error() != want {
		t.Errorf("JVP: got %v, want %q", err, want)
	}
	err = a.evalVJP(make([]float32, 2), make([]float32, 5), v, u, θ, 0)
	if want := "VJP: du has 2 elements, w 2, dp 5, want 2 and 2 (the states) and 22 (the parameters) or a nil dp"; err == nil || err.Error() != want {
		t.Errorf("VJP: got %v, want %q", err, want)
	}
}
