package layout

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Builder describes a layout: leaves with shapes, nested groups, ties and
// frozen marks. Methods record the first problem they meet and Build reports
// it, so a description reads as a list of calls without error checks between.
//
// Names given to Add, Group, Tie and Freeze are paths relative to the builder:
// a dotted name ("encoder.bias") creates the groups on its way. The buffer is
// laid out depth-first in the order groups and leaves were first mentioned,
// so every group is one contiguous range whatever order its members were
// added in.
type Builder struct {
	s      *buildState
	node   *bnode
	prefix string // "" at the root, "encoder." inside group encoder
}

type buildState struct {
	root    *bnode
	ties    [][2]string // {alias, target}, absolute paths
	freezes []string    // absolute paths
	err     error
}

type bnode struct {
	name     string
	leaf     bool
	shape    []int
	children []*bnode
	byName   map[string]*bnode
}

// NewBuilder returns an empty builder for the root of a layout.
func NewBuilder() *Builder {
	root := &bnode{byName: map[string]*bnode{}}
	return &Builder{s: &buildState{root: root}, node: root}
}

func (b *Builder) fail(err error) {
	if b.s.err == nil {
		b.s.err = err
	}
}

// walk returns the group node at the relative path segs, creating groups on
// the way. It records an error and returns nil if a segment is a leaf.
func (b *Builder) walk(op string, name string, segs []string) *bnode {
	n := b.node
	for i, s := range segs {
		c, ok := n.byName[s]
		if !ok {
			c = &bnode{name: s, byName: map[string]*bnode{}}
			n.byName[s] = c
			n.children = append(n.children, c)
		} else if c.leaf {
			b.fail(fmt.Errorf("%s %q: %q is a leaf, not a group", op, b.prefix+name, b.prefix+strings.Join(segs[:i+1], ".")))
			return nil
		}
		n = c
	}
	return n
}

func splitName(name string) ([]string, error) {
	if name == "" {
		return nil, errors.New("empty name")
	}
	segs := strings.Split(name, ".")
	for _, s := range segs {
		if s == "" {
			return nil, fmt.Errorf("name %q has an empty segment", name)
		}
	}
	return segs, nil
}

// Add adds a leaf of the given shape. No dimensions means a scalar (one
// float). Dimensions must be positive. It returns b, so calls can be chained.
func (b *Builder) Add(name string, shape ...int) *Builder {
	segs, err := splitName(name)
	if err != nil {
		b.fail(fmt.Errorf("Add under %q: %w", b.prefix, err))
		return b
	}
	for i, d := range shape {
		if d <= 0 {
			b.fail(fmt.Errorf("Add %q: dimension %d of shape %v is %d, want > 0", b.prefix+name, i, shape, d))
			return b
		}
	}
	g := b.walk("Add", name, segs[:len(segs)-1])
	if g == nil {
		return b
	}
	last := segs[len(segs)-1]
	if _, dup := g.byName[last]; dup {
		b.fail(fmt.Errorf("Add: duplicate path %q", b.prefix+name))
		return b
	}
	c := &bnode{name: last, leaf: true, shape: slices.Clone(shape)}
	if c.shape == nil {
		c.shape = []int{}
	}
	g.byName[last] = c
	g.children = append(g.children, c)
	return b
}

// Group returns a builder for the group name, creating it (and any groups on
// a dotted path) at this point in the order if it is new. Asking again for the
// same name returns the same group.
func (b *Builder) Group(name string) *Builder {
	segs, err := splitName(name)
	if err != nil {
		b.fail(fmt.Errorf("Group under %q: %w", b.prefix, err))
		return &Builder{s: b.s, node: &bnode{byName: map[string]*bnode{}}, prefix: b.prefix + name + "."}
	}
	g := b.walk("Group", name, segs)
	if g == nil {
		// Keep the caller's chain working; Build reports the error.
		g = &bnode{byName: map[string]*bnode{}}
	}
	return &Builder{s: b.s, node: g, prefix: b.prefix + name + "."}
}

// Tie makes path a second name for the leaf at existing. Both are relative to
// the builder. The tie takes no storage: gradients of both names add up in
// the one leaf.
func (b *Builder) Tie(path, existing string) *Builder {
	for _, p := range []string{path, existing} {
		if _, err := splitName(p); err != nil {
			b.fail(fmt.Errorf("Tie %q to %q under %q: %w", path, existing, b.prefix, err))
			return b
		}
	}
	b.s.ties = append(b.s.ties, [2]string{b.prefix + path, b.prefix + existing})
	return b
}

// Freeze marks the leaf at path, or every leaf under the group at path, as
// frozen: optimisers skip it unless told otherwise.
func (b *Builder) Freeze(path string) *Builder {
	if _, err := splitName(path); err != nil {
		b.fail(fmt.Errorf("Freeze under %q: %w", b.prefix, err))
		return b
	}
	b.s.freezes = append(b.s.freezes, b.prefix+path)
	return b
}

// Build lays out the buffer and returns the layout, or the first error any
// call recorded. The builder can be used again afterwards.
func (b *Builder) Build() (*Layout, error) {
	lay, err := b.build()
	if err != nil {
		return nil, wrap("", err)
	}
	return lay, nil
}

// build is Build with errors unprefixed, for the package's own builders.
func (b *Builder) build() (*Layout, error) {
	s := b.s
	if s.err != nil {
		return nil, s.err
	}
	var leaves []Leaf
	var groups []Group
	var place func(n *bnode, path string)
	place = func(n *bnode, path string) {
		for _, c := range n.children {
			p := c.name
			if path != "" {
				p = path + "." + c.name
			}
			if c.leaf {
				off := 0
				if len(leaves) > 0 {
					off = leaves[len(leaves)-1].End()
				}
				leaves = append(leaves, Leaf{Path: p, Offset: off, Shape: c.shape})
				continue
			}
			gi := len(groups)
			lo := 0
			if len(leaves) > 0 {
				lo = leaves[len(leaves)-1].End()
			}
			groups = append(groups, Group{Path: p, Lo: lo})
			place(c, p)
			hi := lo
			if len(leaves) > 0 {
				hi = leaves[len(leaves)-1].End()
			}
			groups[gi].Hi = hi
		}
	}
	place(s.root, "")

	index := make(map[string]int, len(leaves))
	for i, lf := range leaves {
		index[lf.Path] = i
	}
	// Ties may refer to earlier ties; resolve in order, each to a storage leaf.
	for _, t := range s.ties {
		alias, target := t[0], t[1]
		i, ok := index[target]
		if !ok {
			if isGroupPath(groups, target) {
				return nil, fmt.Errorf("Tie %q to %q: the target is a group; only leaves can be tied", alias, target)
			}
			return nil, fmt.Errorf("Tie %q to %q: no leaf %q", alias, target, target)
		}
		if _, dup := index[alias]; dup {
			return nil, fmt.Errorf("Tie %q to %q: %q already exists", alias, target, alias)
		}
		leaves[i].Aliases = append(leaves[i].Aliases, alias)
		index[alias] = i
	}
	for _, f := range s.freezes {
		if i, ok := index[f]; ok {
			leaves[i].Frozen = true
			continue
		}
		found := false
		for gi := range groups {
			if groups[gi].Path == f {
				for li := range leaves {
					if strings.HasPrefix(leaves[li].Path, f+".") {
						leaves[li].Frozen = true
					}
				}
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("Freeze %q: no leaf or group with that path", f)
		}
	}
	return newLayout(leaves, groups)
}

func isGroupPath(groups []Group, p string) bool {
	for _, g := range groups {
		if g.Path == p {
			return true
		}
	}
	return false
}
