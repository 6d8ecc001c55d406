package layout

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/flatkit/flatkit/internal/funcopt"
)

// Load reads a safetensors file of F32 tensors and returns the values and the
// layout. A file written by Save (with flatkit metadata) gives back an Equal
// layout and bit-identical values. Otherwise the layout is built with a
// Builder from the tensor names in data order: dotted names make groups,
// and a shape [] is a scalar. The values are then permuted into the
// layout's order, if the tree puts the leaves in another order than the
// file.
//
// Of the options only WantHolds applies: a file marked as holding something
// other than parameters (Holds) is an error naming both kinds.
func Load(r io.Reader, opts ...LoadOption) ([]float32, *Layout, error) {
	θ, lay, err := stLoad(r, opts)
	if err != nil {
		return nil, nil, wrap("Load", err)
	}
	return θ, lay, nil
}

// LoadFile is Load of the file at path.
func LoadFile(path string, opts ...LoadOption) ([]float32, *Layout, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, errorf("LoadFile: %w", err)
	}
	defer f.Close()
	θ, lay, err := stLoad(f, opts)
	if err != nil {
		return nil, nil, wrap("LoadFile", fmt.Errorf("%s: %w", path, err))
	}
	return θ, lay, nil
}

func stLoad(r io.Reader, opts []LoadOption) ([]float32, *Layout, error) {
	cfg := funcopt.Collect(opts)
	if cfg.rename != nil || cfg.strict {
		return nil, nil, fmt.Errorf("Rename and Strict apply to LoadInto only; Load reads every tensor under its own name")
	}
	hd, err := stReadHeader(r)
	if err != nil {
		return nil, nil, err
	}
	if err := stCheckHolds(hd, cfg.holds); err != nil {
		return nil, nil, err
	}
	for _, t := range hd.tensors {
		if t.dtype != "F32" {
			return nil, nil, fmt.Errorf("tensor %q has dtype %s, want F32", t.name, t.dtype)
		}
		for i, d := range t.shape {
			if d == 0 {
				return nil, nil, fmt.Errorf("tensor %q: dimension %d of shape %v is 0; a layout cannot hold an empty tensor", t.name, i, t.shape)
			}
		}
		if err := checkPath(t.name); err != nil {
			return nil, nil, fmt.Errorf("tensor %q is not a valid layout path: %w", t.name, err)
		}
	}
	if hd.dataLen/4 > math.MaxInt {
		return nil, nil, fmt.Errorf("data section of %d bytes is too large for this platform", hd.dataLen)
	}
	lay, err := stLayoutOf(hd)
	if err != nil {
		return nil, nil, err
	}
	if hd.dataLen != 4*int64(lay.Len()) { // cannot happen: F32 tensors tile the data
		return nil, nil, fmt.Errorf("data section is %d bytes, the layout holds %d floats", hd.dataLen, lay.Len())
	}
	known, err := stCheckRemaining(r, hd.dataLen)
	if err != nil {
		return nil, nil, err
	}
	data, err := stReadF32(r, lay.Len(), known)
	if err != nil {
		return nil, nil, err
	}
	if err := stCheckEOF(r, hd.dataLen); err != nil {
		return nil, nil, err
	}
	// Permute into the layout's order if the tree reordered the leaves.
	begin := make(map[string]int64, len(hd.tensors))
	for _, t := range hd.tensors {
		begin[t.name] = t.begin / 4
	}
	permuted := false
	for _, lf := range lay.leaves {
		if begin[lf.Path] != int64(lf.Offset) {
			permuted = true
			break
		}
	}
	if permuted {
		θ := make([]float32, len(data))
		for _, lf := range lay.leaves {
			src := int(begin[lf.Path])
			copy(θ[lf.Offset:lf.End()], data[src:src+lf.Size()])
		}
		data = θ
	}
	return data, lay, nil
}

// stLayoutOf builds the layout a header describes: exactly from the flatkit
// metadata if there is any, otherwise with a Builder from the names.
func stLayoutOf(hd *stHeader) (*Layout, error) {
	_, hasG := hd.meta[stKeyGroups]
	_, hasT := hd.meta[stKeyTies]
	_, hasF := hd.meta[stKeyFrozen]
	if !hasG && !hasT && !hasF {
		b := NewBuilder()
		for _, t := range hd.tensors {
			b.Add(t.name, t.shape...)
		}
		lay, err := b.build()
		if err != nil {
			return nil, fmt.Errorf("building the layout from the tensor names: %w", err)
		}
		return lay, nil
	}
	leaves := make([]Leaf, len(hd.tensors))
	index := make(map[string]int, len(hd.tensors))
	for i, t := range hd.tensors {
		leaves[i] = Leaf{Path: t.name, Offset: int(t.begin / 4), Shape: t.shape}
		index[t.name] = i
	}
	if s, ok := hd.meta[stKeyFrozen]; ok {
		var paths []string
		if err := json.Unmarshal([]byte(s), &paths); err != nil {
			return nil, fmt.Errorf("metadata %q is %s, want a JSON array of paths: %v", stKeyFrozen, stBrief([]byte(s)), err)
		}
		for _, p := range paths {
			i, ok := index[p]
			if !ok {
				return nil, fmt.Errorf("metadata %q lists %q, which is not a tensor in the file", stKeyFrozen, p)
			}
			leaves[i].Frozen = true
		}
	}
	if s, ok := hd.meta[stKeyTies]; ok {
		err := stObject([]byte(s), func(alias string, raw json.RawMessage) error {
			var target string
			if stIsNull(raw) || json.Unmarshal(raw, &target) != nil {
				return fmt.Errorf("tie %q: target is %s, want a string", alias, stBrief(raw))
			}
			i, ok := index[target]
			if !ok {
				return fmt.Errorf("tie %q: target %q is not a tensor in the file", alias, target)
			}
			leaves[i].Aliases = append(leaves[i].Aliases, alias)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("metadata %q: %w", stKeyTies, err)
		}
	}
	var groups []Group
	if s, ok := hd.meta[stKeyGroups]; ok {
		var gs []struct {
			Path *string `json:"path"`
			Lo   *int    `json:"lo"`
			Hi   *int    `json:"hi"`
		}
		if err := json.Unmarshal([]byte(s), &gs); err != nil {
			return nil, fmt.Errorf("metadata %q is %s, want a JSON array of {\"path\",\"lo\",\"hi\"}: %v", stKeyGroups, stBrief([]byte(s)), err)
		}
		for i, g := range gs {
			if g.Path == nil || g.Lo == nil || g.Hi == nil {
				return nil, fmt.Errorf("metadata %q: group %d lacks \"path\", \"lo\" or \"hi\"", stKeyGroups, i)
			}
			groups = append(groups, Group{Path: *g.Path, Lo: *g.Lo, Hi: *g.Hi})
		}
	}
	lay, err := newLayout(leaves, groups)
	if err != nil {
		return nil, fmt.Errorf("the file's metadata describes an invalid layout: %w", err)
	}
	return lay, nil
}
