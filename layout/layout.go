package layout

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/flatkit/flatkit/flat"
)

// Leaf is one named tensor stored in the buffer: θ[Offset : Offset+Size()]
// viewed with Shape. Aliases are further paths tied to the same storage.
// The slices in a Leaf returned by a Layout are shared with it: read them,
// do not modify them.
type Leaf struct {
	Path    string
	Aliases []string
	Offset  int
	Shape   []int
	Frozen  bool
}

// Size returns the number of floats the leaf holds (1 for a scalar).
func (l Leaf) Size() int {
	n := 1
	for _, d := range l.Shape {
		n *= d
	}
	return n
}

// End returns the end of the leaf's range: the leaf is θ[Offset:End()].
func (l Leaf) End() int { return l.Offset + l.Size() }

// String formats the leaf as its path, shape and range, e.g.
// "encoder.weight [64×32] θ[0:2048]".
func (l Leaf) String() string {
	var sb strings.Builder
	sb.WriteString(l.Path)
	sb.WriteString(" [")
	for i, d := range l.Shape {
		if i > 0 {
			sb.WriteString("×")
		}
		fmt.Fprint(&sb, d)
	}
	fmt.Fprintf(&sb, "] θ[%d:%d]", l.Offset, l.End())
	if l.Frozen {
		sb.WriteString(" frozen")
	}
	for _, a := range l.Aliases {
		sb.WriteString(" =")
		sb.WriteString(a)
	}
	return sb.String()
}

// Group is a named subtree: its leaves are exactly θ[Lo:Hi]. An empty group
// (Lo == Hi) marks a position, such as a parameter-free layer in a chain.
type Group struct {
	Path   string
	Lo, Hi int
}

// Layout is an immutable tree of names over a flat buffer of Len() floats.
// Every subtree is one contiguous range (invariant 2 of the design), storage
// leaves tile the buffer in order, and tied paths resolve to the leaf they
// share. A *Layout is safe for concurrent use.
type Layout struct {
	n      int
	leaves []Leaf
	groups []Group // pre-order; does not include the root
	shapes [][]int // 1-D shape of each group, for View of a group without allocation
	whole  []int   // {n}: the shape of View(θ, "")

	leafOf  map[string]int // storage path or alias → index into leaves
	groupOf map[string]int // group path → index into groups

	bindings sync.Map // reflect.Type → *binding, see struct.go
}

// newLayout validates a complete description and indexes it. Leaves must be
// in buffer order and tile [0, n); every leaf's ancestors must be groups whose
// ranges contain exactly their descendants.
func newLayout(leaves []Leaf, groups []Group) (*Layout, error) {
	l := &Layout{
		leaves:  leaves,
		groups:  groups,
		leafOf:  make(map[string]int, len(leaves)),
		groupOf: make(map[string]int, len(groups)),
	}
	for i, lf := range leaves {
		if err := checkPath(lf.Path); err != nil {
			return nil, err
		}
		for d, s := range lf.Shape {
			if s <= 0 {
				return nil, fmt.Errorf("leaf %q: dimension %d of shape %v is %d, want > 0", lf.Path, d, lf.Shape, s)
			}
		}
		if _, err := flat.SizeOf(lf.Shape); err != nil {
			return nil, fmt.Errorf("leaf %q: %w", lf.Path, err)
		}
		if lf.Offset != l.n {
			return nil, fmt.Errorf("leaf %q starts at %d, want %d (leaves must tile the buffer in order)", lf.Path, lf.Offset, l.n)
		}
		l.n = lf.End()
		if l.n < lf.Offset {
			return nil, fmt.Errorf("leaf %q overflows the buffer size", lf.Path)
		}
		if _, dup := l.leafOf[lf.Path]; dup {
			return nil, fmt.Errorf("duplicate path %q", lf.Path)
		}
		l.leafOf[lf.Path] = i
	}
	l.whole = []int{l.n}
	for i, g := range groups {
		if err := checkPath(g.Path); err != nil {
			return nil, err
		}
		if _, dup := l.groupOf[g.Path]; dup {
			return nil, fmt.Errorf("duplicate group %q", g.Path)
		}
		if _, dup := l.leafOf[g.Path]; dup {
			return nil, fmt.Errorf("path %q is both a leaf and a group", g.Path)
		}
		if g.Lo < 0 || g.Hi < g.Lo || g.Hi > l.n {
			return nil, fmt.Errorf("group %q has range [%d, %d), want within [0, %d)", g.Path, g.Lo, g.Hi, l.n)
		}
		l.groupOf[g.Path] = i
		l.shapes = append(l.shapes, []int{g.Hi - g.Lo})
	}
	// Each leaf's ancestors are groups that contain it; each group holds no
	// leaf that is not its descendant.
	for _, lf := range leaves {
		for p := parent(lf.Path); p != ""; p = parent(p) {
			gi, ok := l.groupOf[p]
			if !ok {
				if _, isLeaf := l.leafOf[p]; isLeaf {
					return nil, fmt.Errorf("path %q is below leaf %q", lf.Path, p)
				}
				return nil, fmt.Errorf("leaf %q has no group %q", lf.Path, p)
			}
			if g := groups[gi]; lf.Offset < g.Lo || lf.End() > g.Hi {
				return nil, fmt.Errorf("leaf %q at [%d, %d) lies outside its group %q at [%d, %d)", lf.Path, lf.Offset, lf.End(), p, g.Lo, g.Hi)
			}
		}
	}
	for _, g := range groups {
		if p := parent(g.Path); p != "" {
			pg, ok := l.groupOf[p]
			if !ok {
				return nil, fmt.Errorf("group %q has no parent group %q", g.Path, p)
			}
			if g.Lo < groups[pg].Lo || g.Hi > groups[pg].Hi {
				return nil, fmt.Errorf("group %q at [%d, %d) lies outside its parent %q at [%d, %d)", g.Path, g.Lo, g.Hi, p, groups[pg].Lo, groups[pg].Hi)
			}
		}
		// The range starts and ends on leaf boundaries, and the leaves inside
		// it are descendants: otherwise the group is not contiguous.
		i := sort.Search(len(leaves), func(i int) bool { return leaves[i].Offset >= g.Lo })
		if !l.boundary(g.Lo) || !l.boundary(g.Hi) {
			return nil, fmt.Errorf("group %q has range [%d, %d), which splits a leaf, want a range that starts and ends on leaf boundaries", g.Path, g.Lo, g.Hi)
		}
		for ; i < len(leaves) && leaves[i].Offset < g.Hi; i++ {
			if !strings.HasPrefix(leaves[i].Path, g.Path+".") {
				return nil, fmt.Errorf("group %q is not contiguous: leaf %q lies inside its range [%d, %d)", g.Path, leaves[i].Path, g.Lo, g.Hi)
			}
		}
	}
	for i := range leaves {
		for _, a := range leaves[i].Aliases {
			if err := l.addAlias(a, i); err != nil {
				return nil, err
			}
		}
	}
	return l, nil
}

func (l *Layout) addAlias(alias string, leaf int) error {
	if err := checkPath(alias); err != nil {
		return err
	}
	if _, dup := l.leafOf[alias]; dup {
		return fmt.Errorf("tie %q: the path already exists", alias)
	}
	if _, dup := l.groupOf[alias]; dup {
		return fmt.Errorf("tie %q: the path is a group", alias)
	}
	for p := parent(alias); p != ""; p = parent(p) {
		if _, isLeaf := l.leafOf[p]; isLeaf {
			return fmt.Errorf("tie %q is below leaf %q", alias, p)
		}
	}
	l.leafOf[alias] = leaf
	return nil
}

// boundary reports whether θ[:i] ends between two leaves.
func (l *Layout) boundary(i int) bool {
	if i == 0 || i == l.n {
		return true
	}
	k := sort.Search(len(l.leaves), func(k int) bool { return l.leaves[k].Offset >= i })
	return k < len(l.leaves) && l.leaves[k].Offset == i
}

func checkPath(p string) error {
	if p == "" {
		return fmt.Errorf("empty path")
	}
	for _, seg := range strings.Split(p, ".") {
		if seg == "" {
			return fmt.Errorf("path %q has an empty name", p)
		}
	}
	return nil
}

func parent(p string) string {
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// Len returns the number of floats in the buffer.
func (l *Layout) Len() int { return l.n }

// Leaves returns the storage leaves in buffer order. The slice is a copy; the
// Shape and Aliases inside are shared and must not be modified.
func (l *Layout) Leaves() []Leaf { return slices.Clone(l.leaves) }

// NumLeaves returns the number of storage leaves.
func (l *Layout) NumLeaves() int { return len(l.leaves) }

// Leaf returns the i-th storage leaf in buffer order.
func (l *Layout) Leaf(i int) Leaf { return l.leaves[i] }

// Groups returns the groups in pre-order (parents before children, siblings in
// buffer order). The root is not listed.
func (l *Layout) Groups() []Group { return slices.Clone(l.groups) }

// Find returns the leaf stored at path. A tied path returns the leaf it
// shares. The boolean is false if path names no leaf.
func (l *Layout) Find(path string) (Leaf, bool) {
	i, ok := l.leafOf[path]
	if !ok {
		return Leaf{}, false
	}
	return l.leaves[i], true
}

// View returns the tensor at path as a view of θ, without copying. For a leaf
// the view has the leaf's shape; for a group it is 1-D over the group's range.
// The Shape of the result is shared with the layout: do not modify it.
func (l *Layout) View(θ []float32, path string) (flat.Tensor, error) {
	if len(θ) != l.n {
		return flat.Tensor{}, errorf("View %q: buffer has %d floats, layout wants %d", path, len(θ), l.n)
	}
	if i, ok := l.leafOf[path]; ok {
		lf := &l.leaves[i]
		end := lf.End()
		return flat.Tensor{Shape: lf.Shape, Data: θ[lf.Offset:end:end]}, nil
	}
	if i, ok := l.groupOf[path]; ok {
		g := l.groups[i]
		return flat.Tensor{Shape: l.shapes[i], Data: θ[g.Lo:g.Hi:g.Hi]}, nil
	}
	if path == "" {
		return flat.Tensor{Shape: l.whole, Data: θ[:l.n:l.n]}, nil
	}
	return flat.Tensor{}, wrap("View", l.unknown(path))
}

// MustView is View for paths known to be right; it panics on error.
func (l *Layout) MustView(θ []float32, path string) flat.Tensor {
	t, err := l.View(θ, path)
	if err != nil {
		panic(err)
	}
	return t
}

// Range returns the half-open range [lo, hi) of θ that holds path: a leaf, a
// tied path (the range of the leaf it shares) or a group. The empty path is
// the whole buffer.
func (l *Layout) Range(path string) (lo, hi int, err error) {
	if path == "" {
		return 0, l.n, nil
	}
	if i, ok := l.leafOf[path]; ok {
		return l.leaves[i].Offset, l.leaves[i].End(), nil
	}
	if i, ok := l.groupOf[path]; ok {
		return l.groups[i].Lo, l.groups[i].Hi, nil
	}
	return 0, 0, wrap("Range", l.unknown(path))
}

// IsGroup reports whether path names a group.
func (l *Layout) IsGroup(path string) bool {
	_, ok := l.groupOf[path]
	return ok
}

// PathAt returns the path of the leaf holding θ[i] and the row-major index of
// that element within the leaf.
func (l *Layout) PathAt(i int) (path string, index int, err error) {
	if i < 0 || i >= l.n {
		return "", 0, errorf("PathAt(%d): index out of range [0, %d)", i, l.n)
	}
	k := sort.Search(len(l.leaves), func(k int) bool { return l.leaves[k].End() > i })
	return l.leaves[k].Path, i - l.leaves[k].Offset, nil
}

// unknown builds the error for a path the layout does not hold, suggesting
// the closest existing paths by shared prefix. The exported caller sets Op
// (wrap).
func (l *Layout) unknown(path string) *PathError {
	near := l.near(parent(path))
	if len(near) == 0 {
		near = l.near("") // nothing beside it: show the top level
	}
	e := &PathError{Path: path, Err: ErrUnknownPath}
	if len(near) > 0 {
		e.Want = "a path such as " + strings.Join(near, ", ")
	}
	return e
}

// near lists the paths directly under the group prefix ("" is the root),
// at most 8 of them.
func (l *Layout) near(prefix string) []string {
	var near []string
	for p := range l.leafOf {
		if prefix != "" && strings.HasPrefix(p, prefix+".") || prefix == "" && !strings.Contains(p, ".") {
			near = append(near, p)
		}
	}
	for p := range l.groupOf {
		if parent(p) == prefix {
			near = append(near, p)
		}
	}
	sort.Strings(near)
	if len(near) > 8 {
		near = append(near[:8], "…")
	}
	return near
}

// Sub returns the layout of the subtree at path, with paths relative to it
// and offsets relative to its start. So Sub(path) describes θ[lo:hi], where
// lo and hi come from Range. Ties stay only if both ends lie inside the
// subtree.
func (l *Layout) Sub(path string) (*Layout, error) {
	if path == "" {
		return l, nil
	}
	lo, hi, err := l.Range(path)
	if err != nil {
		return nil, wrap("Sub", l.unknown(path))
	}
	var leaves []Leaf
	var groups []Group
	if i, ok := l.leafOf[path]; ok {
		lf := l.leaves[i]
		name := path[strings.LastIndexByte(path, '.')+1:]
		leaves = []Leaf{{Path: name, Offset: 0, Shape: lf.Shape, Frozen: lf.Frozen}}
		sub, err := newLayout(leaves, nil)
		return sub, wrap("Sub", err)
	}
	pre := path + "."
	for _, lf := range l.leaves {
		if lf.Offset < lo || lf.End() > hi {
			continue
		}
		nl := Leaf{Path: strings.TrimPrefix(lf.Path, pre), Offset: lf.Offset - lo, Shape: lf.Shape, Frozen: lf.Frozen}
		for _, a := range lf.Aliases {
			if strings.HasPrefix(a, pre) {
				nl.Aliases = append(nl.Aliases, strings.TrimPrefix(a, pre))
			}
		}
		leaves = append(leaves, nl)
	}
	for _, g := range l.groups {
		if strings.HasPrefix(g.Path, pre) {
			groups = append(groups, Group{Path: strings.TrimPrefix(g.Path, pre), Lo: g.Lo - lo, Hi: g.Hi - lo})
		}
	}
	sub, err := newLayout(leaves, groups)
	return sub, wrap("Sub", err)
}

// Equal reports whether two layouts are identical: the same leaves (paths,
// aliases, offsets, shapes, frozen flags) and the same groups.
func (l *Layout) Equal(o *Layout) bool {
	if l == o {
		return true
	}
	if l == nil || o == nil || l.n != o.n {
		return false
	}
	return slices.EqualFunc(l.leaves, o.leaves, func(a, b Leaf) bool {
		return a.Path == b.Path && a.Offset == b.Offset && a.Frozen == b.Frozen &&
			slices.Equal(a.Shape, b.Shape) && slices.Equal(a.Aliases, b.Aliases)
	}) && slices.Equal(l.groups, o.groups)
}

// Compatible returns nil if a buffer laid out by o can be read with l: the
// same length and the same storage leaves (paths, offsets, shapes). Frozen
// flags, ties and empty groups may differ. The error names the first
// difference.
func (l *Layout) Compatible(o *Layout) error {
	if l.n != o.n {
		return errorf("incompatible: %d floats, other has %d", l.n, o.n)
	}
	if len(l.leaves) != len(o.leaves) {
		return errorf("incompatible: %d leaves, other has %d", len(l.leaves), len(o.leaves))
	}
	for i, a := range l.leaves {
		b := o.leaves[i]
		switch {
		case a.Path != b.Path:
			return errorf("incompatible: leaf %d is %q, other has %q", i, a.Path, b.Path)
		case a.Offset != b.Offset:
			return errorf("incompatible: leaf %q at offset %d, other at %d", a.Path, a.Offset, b.Offset)
		case !slices.Equal(a.Shape, b.Shape):
			return errorf("incompatible: leaf %q has shape %v, other has %v", a.Path, a.Shape, b.Shape)
		}
	}
	return nil
}

// String lists the leaves, one per line, indented by depth.
func (l *Layout) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Layout(%d floats, %d leaves)", l.n, len(l.leaves))
	for _, lf := range l.leaves {
		sb.WriteString("\n  ")
		sb.WriteString(lf.String())
	}
	return sb.String()
}
