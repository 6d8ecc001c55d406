package layout_test

import (
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/flatkit/flatkit/layout"
)

// A Binder points every field where Restructure does.
func TestBinderMatchesRestructure(t *testing.T) {
	_, θ, lay := destructuredNet(t)
	θ2 := make([]float32, len(θ))
	for i := range θ2 {
		θ2[i] = float32(i)
	}
	b, err := layout.Bind(lay, newNet()) // a value of the same shape
	if err != nil {
		t.Fatal(err)
	}
	want, got := newNet(), newNet()
	if err := layout.Restructure(θ2, lay, want); err != nil {
		t.Fatal(err)
	}
	if err := b.Restructure(θ2, got); err != nil {
		t.Fatal(err)
	}
	same := func(what string, a, b []float32) {
		if len(a) != len(b) || cap(a) != cap(b) || len(a) > 0 && unsafe.SliceData(a) != unsafe.SliceData(b) {
			t.Errorf("%s: Binder gave %p[%d:%d], Restructure %p[%d:%d]", what, unsafe.SliceData(b), len(b), cap(b), unsafe.SliceData(a), len(a), cap(a))
		}
	}
	same("In", want.In, got.In)
	same("Blocks.0.B", want.Blocks[0].B, got.Blocks[0].B)
	same("Blocks.1.W", want.Blocks[1].W, got.Blocks[1].W)
	same("Head.W", want.Head.W, got.Head.W)
	same("Tied", want.Tied, got.Tied)
	same("Frozen", want.Frozen, got.Frozen)
	if got.Spare != nil || got.Skip[0] != 42 || got.hidden[0] != -1 {
		t.Errorf("Binder touched fields it must leave alone: %+v", got)
	}
	if b.Layout() != lay {
		t.Errorf("Layout() is not the layout bound")
	}
}

// boundHundred destructures newHundred() and binds its layout to hundred.
func boundHundred(tb testing.TB) ([]float32, *layout.Layout, *layout.Binder[hundred]) {
	tb.Helper()
	θ, lay, err := layout.Destructure(newHundred())
	if err != nil {
		tb.Fatal(err)
	}
	b, err := layout.Bind[hundred](lay, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return θ, lay, b
}

// The case: restructuring into a local struct inside a hot
// callback. A Binder does it with no allocation; layout.Restructure makes
// the struct escape through its any.
func TestBinderLocalStructAllocatesNothing(t *testing.T) {
	θ, lay, b := boundHundred(t)
	du := make([]float64, 10)
	rhs := func(du []float64, θ []float32) {
		var p hundred
		if err := b.Restructure(θ, &p); err != nil {
			panic(err)
		}
		for i := range p.Blocks {
			du[i] = float64(p.Blocks[i].J[9])
		}
	}
	if a := testing.AllocsPerRun(100, func() { rhs(du, θ) }); a != 0 {
		t.Errorf("Binder.Restructure of a local 100-leaf struct allocates %v times per call, want 0", a)
	}
	if du[3] != float64(θ[len(θ)/10*4-1]) {
		t.Errorf("du[3] = %v, want the last element of block 3, %v", du[3], θ[len(θ)/10*4-1])
	}
	viaAny := testing.AllocsPerRun(100, func() {
		var p hundred
		_ = layout.Restructure(θ, lay, &p)
		du[0] = float64(p.Blocks[0].A[0])
	})
	t.Logf("layout.Restructure of a local struct: %v allocations per call", viaAny)
}

func TestBinderErrors(t *testing.T) {
	n, θ, lay := destructuredNet(t)
	// The zero net has no Blocks and no Head: it does not fit the layout.
	if _, err := layout.Bind[net](lay, nil); err == nil || !strings.Contains(err.Error(), "layout: Bind ") {
		t.Errorf("Bind with the zero value of a struct with slices of structs: %v", err)
	}
	if _, err := layout.Bind[net](nil, nil); err == nil || !strings.Contains(err.Error(), "nil layout") {
		t.Errorf("nil layout: %v", err)
	}
	if _, err := layout.Bind[int](lay, nil); err == nil || !strings.Contains(err.Error(), "want a pointer to a struct") {
		t.Errorf("a non-struct type: %v", err)
	}
	b, err := layout.Bind(lay, newNet())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Restructure(θ[:3], newNet()); err == nil || !strings.Contains(err.Error(), "buffer has 3 floats") {
		t.Errorf("short θ: %v", err)
	}
	if err := b.Restructure(θ, nil); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("nil struct: %v", err)
	}
	short := newNet()
	short.Blocks = short.Blocks[:1]
	if err := b.Restructure(θ, short); err == nil || !strings.Contains(err.Error(), "Restructure") {
		t.Errorf("a struct of another shape: %v", err)
	}
	// A struct of another shape that still fits the layout (a nil Head
	// moved to Spare is not that; the same value is) goes the slow way.
	if err := b.Restructure(θ, n); err != nil || math.IsNaN(float64(n.In[0])) {
		t.Errorf("the destructured value itself: %v", err)
	}
}

// BenchmarkBinderODERHS calls Binder.Restructure from a right-hand side of
// the form ode.Problem.F takes (a plain closure: layout cannot import ode),
// with a 100-leaf struct local to the call, as an ensemble's RHS would;
// beside it the same RHS with layout.Restructure, whose struct escapes.
func BenchmarkBinderODERHS(b *testing.B) {
	θ, lay, bd := boundHundred(b)
	rhs := map[string]func(du, u []float64, θ []float32, _ float64){
		"Binder": func(du, u []float64, θ []float32, _ float64) {
			var p hundred
			if err := bd.Restructure(θ, &p); err != nil {
				panic(err)
			}
			for i := range du {
				du[i] = -float64(p.Blocks[i].A[0]) * u[i]
			}
		},
		"Restructure": func(du, u []float64, θ []float32, _ float64) {
			var p hundred
			if err := layout.Restructure(θ, lay, &p); err != nil {
				panic(err)
			}
			for i := range du {
				du[i] = -float64(p.Blocks[i].A[0]) * u[i]
			}
		},
	}
	for _, name := range []string{"Binder", "Restructure"} {
		f := rhs[name]
		b.Run(name, func(b *testing.B) {
			u, du := make([]float64, 10), make([]float64, 10)
			b.ReportAllocs()
			for b.Loop() {
				f(du, u, θ, 0)
			}
		})
	}
}
