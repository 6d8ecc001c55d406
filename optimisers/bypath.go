package optimisers

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/flatkit/flatkit/layout"
)

// PathRule assigns Rule to the leaves whose paths match Pattern; see ByPath.
type PathRule struct {
	Pattern string
	Rule    Rule
}

// ByPathRule trains each leaf of a layout with the rule of the first
// PathRule whose pattern matches it. Make one with ByPath and give it to
// Setup. It cannot sit inside a Chain or Scheduled, but each PathRule's
// rule can be any chain.
type ByPathRule struct {
	lay   *layout.Layout
	rules []PathRule
}

// ByPath returns a rule that trains each leaf of lay with the rule of the
// first PathRule whose pattern matches it:
//
//	optimisers.ByPath(lay, []optimisers.PathRule{
//		{"*.bias", optimisers.Adam(1e-3)},                                              // no weight decay on biases
//		{"encoder", optimisers.Chain(optimisers.WeightDecay(1e-4), optimisers.Adam(1e-4))}, // a smaller rate for the encoder
//		{"*", optimisers.Chain(optimisers.WeightDecay(1e-4), optimisers.Adam(1e-3))},
//	})
//
// Patterns are globs over dotted layout paths. `*` matches any run of
// characters, dots included, so "*.bias" is every bias at any depth and
// "*" alone is every leaf. `?` matches one character, and every other
// character matches itself. A pattern matches a leaf if it matches the
// leaf's path or one of its tied paths; aliases count as the leaf's own. It
// also matches a leaf if it matches the path of a group holding either. So
// "encoder" matches everything under the group encoder, as "encoder.*"
// does.
//
// Setup reports these errors:
//   - a leaf that is not frozen and that no pattern matches, naming the
//     leaf;
//   - a pattern that matches no leaf at all;
//   - a pattern that assigns no leaf because earlier patterns took every
//     leaf it matches, naming both;
//   - a layout other than lay.
//
// A final catch-all "*" may assign no leaf. A frozen leaf that no pattern
// matches has no rule, and Thaw of it is an error. Each PathRule's rule
// keeps its state and counts for its own leaves, side by side in the same
// slots. A global rule such as ClipGlobalNorm in one of them sees only that
// rule's leaves.
//
// By hand, outside an optimiser, Slots is the most any rule needs. Init and
// Apply then take θ and dx of the whole layout and apply each trained
// leaf's rule to that leaf's range.
func ByPath(lay *layout.Layout, rules []PathRule) ByPathRule {
	return ByPathRule{lay: lay, rules: slices.Clone(rules)}
}

// Rules returns a copy of the PathRules.
func (r ByPathRule) Rules() []PathRule { return slices.Clone(r.rules) }

// Layout returns the layout the rule was made for.
func (r ByPathRule) Layout() *layout.Layout { return r.lay }

// Validate checks every rule and the assignment of leaves to them.
func (r ByPathRule) Validate() error {
	if r.lay == nil {
		return errorf("ByPath: nil layout")
	}
	if len(r.rules) == 0 {
		return errorf("ByPath: no PathRule, want at least one")
	}
	for i, pr := range r.rules {
		if pr.Pattern == "" {
			return errorf("ByPath: rule %d has an empty pattern, want a non-empty one", i)
		}
		if pr.Rule == nil {
			return errorf("ByPath: rule %d (%q) is nil", i, pr.Pattern)
		}
		if err := validate(pr.Rule); err != nil {
			return errorf("ByPath: rule %d (%q): %w", i, pr.Pattern, err)
		}
		if _, err := flattenRule(nil, pr.Rule, nil); err != nil {
			return errorf("ByPath: rule %d (%q): %w", i, pr.Pattern, err)
		}
	}
	_, err := r.assign(r.lay)
	return err
}

// assign returns one assignment per PathRule, for the layout lay given to
// Setup.
func (r ByPathRule) assign(lay *layout.Layout) ([]assignment, error) {
	if r.lay == nil {
		return nil, errorf("ByPath: nil layout")
	}
	if lay != r.lay && !lay.Equal(r.lay) {
		if err := r.lay.Compatible(lay); err != nil {
			return nil, errorf("ByPath was made for another layout: %w", err)
		}
		return nil, errorf("ByPath was made for another layout (the same leaves, but ties, frozen leaves or groups differ)")
	}
	as := make([]assignment, len(r.rules))
	matched := make([]bool, len(r.rules))
	takenBy := make([]int, len(r.rules)) // for a pattern that assigns nothing: the first pattern that took one of its leaves
	for i := range as {
		as[i] = assignment{rule: r.rules[i].Rule, pattern: r.rules[i].Pattern}
		takenBy[i] = -1
	}
	for li := range lay.NumLeaves() {
		lf := lay.Leaf(li)
		first := -1
		for i, pr := range r.rules {
			if !matchLeaf(pr.Pattern, lf) {
				continue
			}
			matched[i] = true
			if first < 0 {
				first = i
			} else if takenBy[i] < 0 {
				takenBy[i] = first
			}
		}
		if first < 0 {
			if lf.Frozen {
				continue // no rule; Thaw of it is an error
			}
			return nil, errorf("ByPath: leaf %q matches no pattern (%s); add a catch-all \"*\" or freeze the leaf", lf.Path, patternList(r.rules))
		}
		as[first].leaves = append(as[first].leaves, li)
	}
	for i, pr := range r.rules {
		switch {
		case i == len(r.rules)-1 && pr.Pattern == "*":
			// A final catch-all may have nothing left to catch.
		case !matched[i]:
			return nil, errorf("ByPath: pattern %q (rule %d) matches no leaf of the layout, want at least one", pr.Pattern, i)
		case len(as[i].leaves) == 0:
			return nil, errorf("ByPath: pattern %q (rule %d) assigns no leaf: the leaves it matches are taken by earlier patterns (first by %q, rule %d)",
				pr.Pattern, i, r.rules[takenBy[i]].Pattern, takenBy[i])
		}
	}
	return as, nil
}

func patternList(rules []PathRule) string {
	ps := make([]string, len(rules))
	for i, pr := range rules {
		ps[i] = fmt.Sprintf("%q", pr.Pattern)
	}
	return "patterns " + strings.Join(ps, ", ")
}

// matchLeaf reports whether pattern matches the leaf's path, one of its
// aliases, or a group path above either.
func matchLeaf(pattern string, lf layout.Leaf) bool {
	if matchPath(pattern, lf.Path) {
		return true
	}
	for _, a := range lf.Aliases {
		if matchPath(pattern, a) {
			return true
		}
	}
	return false
}

// matchPath reports whether pattern matches p or one of its dotted prefixes.
func matchPath(pattern, p string) bool {
	for {
		if glob(pattern, p) {
			return true
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

// glob matches s against a pattern where '*' matches any run of bytes
// (dots included) and '?' any one character.
func glob(pattern, s string) bool {
	// The classic iterative matcher with one backtrack point for the last star.
	px, sx := 0, 0
	starP, starS := -1, 0
	for sx < len(s) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				starP, starS = px, sx
				px++
				continue
			case '?':
				_, w := utf8.DecodeRuneInString(s[sx:])
				px++
				sx += w
				continue
			default:
				if c == s[sx] {
					px++
					sx++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		px, sx = starP+1, starS
	}
	for px < len(pattern) && pattern[px] == '*' {
		px++
	}
	return px == len(pattern)
}

// Slots is the most any of the rules needs.
func (r ByPathRule) Slots() int {
	n := 0
	for _, pr := range r.rules {
		n = max(n, pr.Rule.Slots())
	}
	return n
}

// byHand returns each trained leaf's range and rule, for Init and Apply by
// hand; it panics on misuse, which is a bug in the caller.
func (r ByPathRule) byHand(n int) []assignment {
	as, err := r.assign(r.lay)
	if err != nil {
		panic(err)
	}
	if n != r.lay.Len() {
		panic(fmt.Sprintf("optimisers: ByPath by hand: θ has %d floats, the layout %d", n, r.lay.Len()))
	}
	return as
}

// Init initialises each trained leaf's state with its rule; θ and the state
// vectors are those of the whole layout.
func (r ByPathRule) Init(state [][]float32, θ []float32) {
	for _, a := range r.byHand(len(θ)) {
		for _, li := range a.leaves {
			lf := r.lay.Leaf(li)
			if !lf.Frozen {
				a.rule.Init(sliceState(state[:a.rule.Slots()], lf.Offset, lf.End()), θ[lf.Offset:lf.End()])
			}
		}
	}
}

// Apply applies each trained leaf's rule to its range of dx; θ, dx and the
// state vectors are those of the whole layout.
func (r ByPathRule) Apply(state [][]float32, θ, dx []float32, t int) {
	for _, a := range r.byHand(len(dx)) {
		for _, li := range a.leaves {
			lf := r.lay.Leaf(li)
			if !lf.Frozen {
				a.rule.Apply(sliceState(state[:a.rule.Slots()], lf.Offset, lf.End()), θ[lf.Offset:lf.End()], dx[lf.Offset:lf.End()], t)
			}
		}
	}
}

func sliceState(state [][]float32, lo, hi int) [][]float32 {
	v := make([][]float32, len(state))
	for k := range v {
		v[k] = state[k][lo:hi]
	}
	return v
}
