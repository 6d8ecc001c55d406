package ad_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flatkit/flatkit/ad"
)

// twoArg is y(u, p) for u of 3 and p of 4 elements, 5 outputs: a part that
// mixes u and p, one that depends on u only through p's weights, and one
// that depends on p only.
func twoArg(u, p ad.Var) ad.Var {
	y1 := ad.Mul(ad.Square(u), ad.Slice(p, 0, 3))
	y2 := ad.Reshape(ad.Sum(ad.Mul(ad.Tanh(u), ad.Slice(p, 1, 4))), 1)
	y3 := ad.Exp(ad.Slice(p, 3, 4))
	return ad.Concat(0, y1, y2, y3)
}

// twoArgFlat is twoArg of θ = [u; p], for the one-argument functional API.
func twoArgFlat(θ ad.Var) ad.Var { return twoArg(ad.View(θ, 0, 3), ad.View(θ, 3, 4)) }

func orZero(d []float32, n int) []float32 {
	if d == nil {
		return make([]float32, n)
	}
	return d
}

// TestTangentAndAddVJP checks the products with two Params against the
// functional JVP and VJP of the same function of the concatenated vector.
func TestTangentAndAddVJP(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	u, p := randVec(rng, 3), randVec(rng, 4)
	θ := append(append([]float32{}, u...), p...)
	v, dp, w := randVec(rng, 3), randVec(rng, 4), randVec(rng, 5)
	cases := []struct {
		name         string
		v, dp        []float32 // directions; nil is zero
		wantU, wantP bool      // which VJP destinations are given
	}{
		{"both", v, dp, true, true},
		{"u only", v, nil, true, false},
		{"p only", nil, dp, false, true},
		{"neither", nil, nil, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			check := func(what string, got, want []float32) {
				t.Helper()
				if diff := cmp.Diff(want, got, approx); diff != "" {
					t.Errorf("%s (-functional +tape):\n%s", what, diff)
				}
			}
			wantJV, err := ad.JVP(twoArgFlat, θ, append(append([]float32{}, orZero(c.v, 3)...), orZero(c.dp, 4)...))
			if err != nil {
				t.Fatal(err)
			}
			wantVJ, err := ad.VJP(twoArgFlat, θ, w)
			if err != nil {
				t.Fatal(err)
			}
			tp := ad.NewTape()
			uv, pv := tp.Param(u), tp.Param(p)
			y := twoArg(uv, pv)
			jv, err := tp.Tangent(y, []ad.Var{uv, pv}, [][]float32{c.v, c.dp})
			if err != nil {
				t.Fatal(err)
			}
			check("Tangent", jv, wantJV)
			// Products accumulate: start from ones, and a second call on
			// the same recording adds the same again.
			var du, dq []float32
			if c.wantU {
				du = []float32{1, 1, 1}
			}
			if c.wantP {
				dq = []float32{1, 1, 1, 1}
			}
			for range 2 {
				if err := tp.AddVJP(y, w, []ad.Var{uv, pv}, [][]float32{du, dq}); err != nil {
					t.Fatal(err)
				}
			}
			twice := func(g []float32) []float32 {
				r := make([]float32, len(g))
				for i, x := range g {
					r[i] = 1 + 2*x
				}
				return r
			}
			if c.wantU {
				check("AddVJP ∂u", du, twice(wantVJ[:3]))
			}
			if c.wantP {
				check("AddVJP ∂p", dq, twice(wantVJ[3:]))
			}
			// Tangent again after the sweeps: the same answer.
			jv2, err := tp.Tangent(y, []ad.Var{uv, pv}, [][]float32{c.v, c.dp})
			if err != nil {
				t.Fatal(err)
			}
			check("Tangent after AddVJP", jv2, wantJV)
		})
	}
}

// A Param y does not depend on (recorded after it, or simply unused) gives
// zeros, not an error.
func TestTangentIndependentParam(t *testing.T) {
	tp := ad.NewTape()
	u := tp.Param([]float32{1, 2})
	y := ad.Scale(u, 3)
	late := tp.Param([]float32{5})
	jv, err := tp.Tangent(y, []ad.Var{late, u}, [][]float32{{1}, {1, -1}})
	if err != nil || !cmp.Equal(jv, []float32{3, -3}) {
		t.Errorf("Tangent with a late Param = %v, %v; want [3 -3]", jv, err)
	}
	jv, err = tp.Tangent(y, []ad.Var{late}, [][]float32{{1}})
	if err != nil || !cmp.Equal(jv, []float32{0, 0}) {
		t.Errorf("Tangent with respect to a Param recorded after y = %v, %v; want zeros", jv, err)
	}
	dl := []float32{7}
	if err := tp.AddVJP(y, []float32{1, 1}, []ad.Var{late}, [][]float32{dl}); err != nil || dl[0] != 7 {
		t.Errorf("AddVJP into a Param recorded after y: %v, %v; want it unchanged", dl, err)
	}
	// y itself a Param: the tangent is the direction, the VJP is w.
	du := []float32{0, 0}
	if err := tp.AddVJP(u, []float32{2, 3}, []ad.Var{u}, [][]float32{du}); err != nil || !cmp.Equal(du, []float32{2, 3}) {
		t.Errorf("AddVJP of a Param = %v, %v; want [2 3]", du, err)
	}
}

func TestTangentErrors(t *testing.T) {
	cases := []struct {
		name string
		run  func(tp *ad.Tape, u, p, y ad.Var) error
		want string
	}{
		{"no Params", func(tp *ad.Tape, u, p, y ad.Var) error {
			_, err := tp.Tangent(y, nil, nil)
			return err
		}, "no Params"},
		{"not a Param", func(tp *ad.Tape, u, p, y ad.Var) error {
			_, err := tp.Tangent(y, []ad.Var{ad.Scale(u, 2)}, [][]float32{{1, 2, 3}})
			return err
		}, "not a Param"},
		{"same Param twice", func(tp *ad.Tape, u, p, y ad.Var) error {
			return tp.AddVJP(y, make([]float32, 5), []ad.Var{u, u}, [][]float32{make([]float32, 3), make([]float32, 3)})
		}, "same Param"},
		{"direction count", func(tp *ad.Tape, u, p, y ad.Var) error {
			_, err := tp.Tangent(y, []ad.Var{u, p}, [][]float32{{1, 2, 3}})
			return err
		}, "1 directions for 2 Params, want 2"},
		{"direction length", func(tp *ad.Tape, u, p, y ad.Var) error {
			_, err := tp.Tangent(y, []ad.Var{u, p}, [][]float32{{1, 2}, nil})
			return err
		}, "dirs[0] has 2 elements, want 3"},
		{"w length", func(tp *ad.Tape, u, p, y ad.Var) error {
			return tp.AddVJP(y, make([]float32, 4), []ad.Var{u}, [][]float32{make([]float32, 3)})
		}, "w has 4 elements, want 5"},
		{"destination length", func(tp *ad.Tape, u, p, y ad.Var) error {
			return tp.AddVJP(y, make([]float32, 5), []ad.Var{u, p}, [][]float32{nil, make([]float32, 3)})
		}, "dst[1] has 3 elements, want 4"},
		{"stale y", func(tp *ad.Tape, u, p, y ad.Var) error {
			tp.Reset()
			q := tp.Param([]float32{1})
			_, err := tp.Tangent(y, []ad.Var{q}, [][]float32{{1}})
			return err
		}, "before a Reset"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp := ad.NewTape()
			u, p := tp.Param([]float32{1, 2, 3}), tp.Param([]float32{1, 2, 3, 4})
			err := c.run(tp, u, p, twoArg(u, p))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if tp.Err() == nil {
				t.Errorf("the error %v is not kept on the tape", err)
			}
		})
	}
}

func TestTangentAndAddVJPAllocateNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	u, p := randVec(rng, 3), randVec(rng, 4)
	v, dp, w := randVec(rng, 3), randVec(rng, 4), randVec(rng, 5)
	du, dq := make([]float32, 3), make([]float32, 4)
	tp := ad.NewTape()
	wrt := make([]ad.Var, 2)
	dirs, dst := [][]float32{v, dp}, [][]float32{du, dq}
	step := func() {
		wrt[0], wrt[1] = tp.Param(u), tp.Param(p)
		y := twoArg(wrt[0], wrt[1])
		if _, err := tp.Tangent(y, wrt, dirs); err != nil {
			t.Fatal(err)
		}
		if err := tp.AddVJP(y, w, wrt, dst); err != nil {
			t.Fatal(err)
		}
		tp.Reset()
	}
	step()
	if a := testing.AllocsPerRun(20, step); a != 0 {
		t.Errorf("Tangent and AddVJP on a reused tape allocate %v times per step, want 0", a)
	}
}
