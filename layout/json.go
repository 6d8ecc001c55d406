package layout

import "encoding/json"

// layoutJSON is the JSON description of a layout: every storage leaf with its
// aliases, and every group with its range.
type layoutJSON struct {
	Len    int         `json:"len"`
	Leaves []leafJSON  `json:"leaves"`
	Groups []groupJSON `json:"groups,omitempty"`
}

type leafJSON struct {
	Path    string   `json:"path"`
	Offset  int      `json:"offset"`
	Shape   []int    `json:"shape"`
	Frozen  bool     `json:"frozen,omitempty"`
	Aliases []string `json:"aliases,omitempty"`
}

type groupJSON struct {
	Path string `json:"path"`
	Lo   int    `json:"lo"`
	Hi   int    `json:"hi"`
}

// MarshalJSON describes the layout as
// {"len":N,"leaves":[{"path","offset","shape","frozen","aliases"}…],"groups":[{"path","lo","hi"}…]}.
func (l *Layout) MarshalJSON() ([]byte, error) {
	d := layoutJSON{Len: l.n, Leaves: make([]leafJSON, len(l.leaves))}
	for i, lf := range l.leaves {
		d.Leaves[i] = leafJSON{Path: lf.Path, Offset: lf.Offset, Shape: lf.Shape, Frozen: lf.Frozen, Aliases: lf.Aliases}
	}
	for _, g := range l.groups {
		d.Groups = append(d.Groups, groupJSON(g))
	}
	return json.Marshal(d)
}

// ParseJSON reads a layout from the description MarshalJSON writes and
// validates it as Build would.
func ParseJSON(data []byte) (*Layout, error) {
	var d layoutJSON
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, errorf("ParseJSON: %w", err)
	}
	leaves := make([]Leaf, len(d.Leaves))
	for i, lf := range d.Leaves {
		shape := lf.Shape
		if shape == nil {
			shape = []int{}
		}
		leaves[i] = Leaf{Path: lf.Path, Offset: lf.Offset, Shape: shape, Frozen: lf.Frozen, Aliases: lf.Aliases}
	}
	groups := make([]Group, len(d.Groups))
	for i, g := range d.Groups {
		groups[i] = Group(g)
	}
	l, err := newLayout(leaves, groups)
	if err != nil {
		return nil, wrap("ParseJSON", err)
	}
	if l.n != d.Len {
		return nil, errorf("ParseJSON: \"len\" is %d, want %d (the floats the leaves hold)", d.Len, l.n)
	}
	return l, nil
}

// UnmarshalJSON replaces l with the layout the JSON describes (see ParseJSON).
func (l *Layout) UnmarshalJSON(data []byte) error {
	nl, err := ParseJSON(data)
	if err != nil {
		return err
	}
	l.n, l.leaves, l.groups, l.shapes, l.whole = nl.n, nl.leaves, nl.groups, nl.shapes, nl.whole
	l.leafOf, l.groupOf = nl.leafOf, nl.groupOf
	l.bindings.Clear()
	return nil
}
