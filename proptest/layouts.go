package proptest

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"pgregory.net/rapid"

	"github.com/flatkit/flatkit/layout"
)

// T is the part of *testing.T and *rapid.T that checkers use.
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// LayoutSpec is a drawn layout together with the builder calls that made it,
// so a failing case can be read and rebuilt.
type LayoutSpec struct {
	Layout *layout.Layout
	Calls  []string // e.g. `Add("0.weight", 3, 1)`, `Tie("t0", "0.weight")`
}

func (s LayoutSpec) String() string { return strings.Join(s.Calls, "; ") }

// Layouts draws random layouts. They have up to three levels of groups,
// some of them empty, with PyTorch-like index names and word names. Leaves
// have rank 0 to 4, with dimensions from 1 to 7, primes and ones included.
// There are a few ties and frozen marks.
func Layouts() *rapid.Generator[*layout.Layout] {
	return rapid.Map(LayoutSpecs(), func(s LayoutSpec) *layout.Layout { return s.Layout })
}

// LayoutSpecs is Layouts with the builder calls kept.
func LayoutSpecs() *rapid.Generator[LayoutSpec] {
	return rapid.Custom(func(t *rapid.T) LayoutSpec {
		b := layout.NewBuilder()
		var calls []string
		var leaves []string
		var groups []string
		var fill func(g *layout.Builder, prefix string, depth int)
		fill = func(g *layout.Builder, prefix string, depth int) {
			n := rapid.IntRange(0, 4).Draw(t, "children")
			indexNames := rapid.Bool().Draw(t, "indexNames")
			for i := 0; i < n; i++ {
				name := strconv.Itoa(i)
				if !indexNames {
					name = string(rune('a'+i)) + "w"
				}
				if depth < 3 && rapid.IntRange(0, 2).Draw(t, "isGroup") == 0 {
					groups = append(groups, prefix+name)
					calls = append(calls, fmt.Sprintf("Group(%q)", prefix+name))
					fill(g.Group(name), prefix+name+".", depth+1)
					continue
				}
				shape := rapid.SliceOfN(rapid.SampledFrom([]int{1, 2, 3, 5, 7}), 0, 4).Draw(t, "shape")
				g.Add(name, shape...)
				leaves = append(leaves, prefix+name)
				calls = append(calls, fmt.Sprintf("Add(%q, %v)", prefix+name, shape))
			}
		}
		fill(b, "", 0)
		if len(leaves) > 0 {
			for i, n := 0, rapid.IntRange(0, 3).Draw(t, "ties"); i < n; i++ {
				target := rapid.SampledFrom(leaves).Draw(t, "tieTarget")
				alias := "tie" + strconv.Itoa(i)
				if len(groups) > 0 && rapid.Bool().Draw(t, "tieInGroup") {
					alias = rapid.SampledFrom(groups).Draw(t, "tieGroup") + "." + alias
				}
				b.Tie(alias, target)
				calls = append(calls, fmt.Sprintf("Tie(%q, %q)", alias, target))
			}
			for i, n := 0, rapid.IntRange(0, 2).Draw(t, "frozen"); i < n; i++ {
				p := rapid.SampledFrom(append(leaves, groups...)).Draw(t, "freeze")
				b.Freeze(p)
				calls = append(calls, fmt.Sprintf("Freeze(%q)", p))
			}
		}
		lay, err := b.Build()
		if err != nil {
			t.Fatalf("proptest: drawn layout does not build: %v\ncalls: %s", err, strings.Join(calls, "; "))
		}
		return LayoutSpec{Layout: lay, Calls: calls}
	})
}

// Params draws a parameter vector for lay: finite values in [-4, 4], away
// from zero by at least 1/64 so that no element sits on a kink.
func Params(lay *layout.Layout) *rapid.Generator[[]float32] {
	return Floats(lay.Len())
}

// Floats draws n finite values in ±[1/64, 4].
func Floats(n int) *rapid.Generator[[]float32] {
	mag := rapid.Float32Range(1.0/64, 4)
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) float32 {
		x := mag.Draw(t, "x")
		if rapid.Bool().Draw(t, "neg") {
			return -x
		}
		return x
	}), n, n)
}

// AnyFloats draws n arbitrary float32 bit patterns, NaN payloads,
// infinities and subnormals included. It serves checks that must be
// bit-exact.
func AnyFloats(n int) *rapid.Generator[[]float32] {
	return rapid.SliceOfN(rapid.Map(rapid.Uint32(), math.Float32frombits), n, n)
}
