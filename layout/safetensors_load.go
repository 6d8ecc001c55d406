package layout

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// Load reads a safetensors file of F32 tensors and returns the values and the
// layout. A file written by Save (with flatkit metadata) gives back an Equal
// layout and bit-identical values. Otherwise the layout is built with a
// Builder from the tensor names in data order (dotted names make groups, a
// shape [] is a scalar), and the values are permuted into the layout's order
// if the tree puts the leaves in a different order than the file.
//
// Of the options only WantHolds applies: a file marked as holding something
// other than parameters (Holds) is an error naming both kinds.
func Load(r io.Reader, opts ...LoadOption) ([]float32, *Layout, error) {
	return stLoad(r, "layout: Load: ", opts)
}

// LoadFile is Load of the file at path.
func LoadFile(path string, opts ...LoadOption) ([]float32, *Layout, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("layout: LoadFile: %w", err)
	}
	defer f.Close()
	return stLoad(f, "layout: LoadFile: "+path+": ", opts)
}

func stLoad(r io.Reader, pre string, opts []LoadOption) ([]float32, *Layout, error) {
	cfg := loadOptions(opts)
	if cfg.rename != nil || cfg.strict {
		return nil, nil, fmt.Errorf("%sRename and Strict apply to LoadInto only; Load reads every tensor under its own name", pre)
	}
	hd, err := stReadHeader(r, pre)
	if err != nil {
		return nil, nil, err
	}
	if err := stCheckHolds(hd, cfg.holds, pre); err != nil {
		return nil, nil, err
	}
	for _, t := range hd.tensors {
		if t.dtype != "F32" {
			return nil, nil, fmt.Errorf("%stensor %q has dtype %s, want F32", pre, t.name, t.dtype)
		}
		for i, d := range t.shape {
			if d == 0 {
				return nil, nil, fmt.Errorf("%stensor %q: dimension %d of shape %v is 0; a layout cannot hold an empty tensor", pre, t.name, i, t.shape)
			}
		}
		if err := checkPath(t.name); err != nil {
			return nil, nil, fmt.Errorf("%stensor %q is not a valid layout path: %s", pre, t.name, stTrim(err))
		}
	}
	if hd.dataLen/4 > math.MaxInt {
		return nil, nil, fmt.Errorf("%sdata section of %d bytes is too large for this platform", pre, hd.dataLen)
	}
	lay, err := stLayoutOf(hd, pre)
	if err != nil {
		return nil, nil, err
	}
	if hd.dataLen != 4*int64(lay.Len()) { // cannot happen: F32 tensors tile the data
		return nil, nil, fmt.Errorf("%sdata section is %d bytes, the layout holds %d floats", pre, hd.dataLen, lay.Len())
	}
	known, err := stCheckRemaining(r, hd.dataLen, pre)
	if err != nil {
		return nil, nil, err
	}
	data, err := stReadF32(r, lay.Len(), known, pre)
	if err != nil {
		return nil, nil, err
	}
	if err := stCheckEOF(r, hd.dataLen, pre); err != nil {
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

// stTrim drops the "layout: " prefix of an error from the rest of the package.
func stTrim(err error) string {
	return strings.TrimPrefix(err.Error(), "layout: ")
}

// stLayoutOf builds the layout a header describes: exactly from the flatkit
// metadata if there is any, otherwise with a Builder from the names.
func stLayoutOf(hd *stHeader, pre string) (*Layout, error) {
	_, hasG := hd.meta[stKeyGroups]
	_, hasT := hd.meta[stKeyTies]
	_, hasF := hd.meta[stKeyFrozen]
	if !hasG && !hasT && !hasF {
		b := NewBuilder()
		for _, t := range hd.tensors {
			b.Add(t.name, t.shape...)
		}
		lay, err := b.Build()
		if err != nil {
			return nil, fmt.Errorf("%sbuilding the layout from the tensor names: %s", pre, stTrim(err))
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
			return nil, fmt.Errorf("%smetadata %q is %s, want a JSON array of paths: %v", pre, stKeyFrozen, stBrief([]byte(s)), err)
		}
		for _, p := range paths {
			i, ok := index[p]
			if !ok {
				return nil, fmt.Errorf("%smetadata %q lists %q, which is not a tensor in the file", pre, stKeyFrozen, p)
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
			return nil, fmt.Errorf("%smetadata %q: %v", pre, stKeyTies, err)
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
			return nil, fmt.Errorf("%smetadata %q is %s, want a JSON array of {\"path\",\"lo\",\"hi\"}: %v", pre, stKeyGroups, stBrief([]byte(s)), err)
		}
		for i, g := range gs {
			if g.Path == nil || g.Lo == nil || g.Hi == nil {
				return nil, fmt.Errorf("%smetadata %q: group %d lacks \"path\", \"lo\" or \"hi\"", pre, stKeyGroups, i)
			}
			groups = append(groups, Group{Path: *g.Path, Lo: *g.Lo, Hi: *g.Hi})
		}
	}
	lay, err := newLayout(leaves, groups)
	if err != nil {
		return nil, fmt.Errorf("%sthe file's metadata describes an invalid layout: %s", pre, stTrim(err))
	}
	return lay, nil
}
