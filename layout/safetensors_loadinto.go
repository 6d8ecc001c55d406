package layout

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/flatkit/flatkit/internal/funcopt"
)

// LoadOption configures LoadInto.
type LoadOption func(*loadConfig)

type loadConfig struct {
	rename func(string) string
	strict bool
	holds  string // "" for parameters
}

// WantHolds makes Load or LoadInto read a file that Holds(kind) marked, or
// a file with no mark, and refuse one marked as holding anything else. A
// file has no mark if it was written before marks, or by another program.
func WantHolds(kind string) LoadOption {
	return func(c *loadConfig) { c.holds = kind }
}

// stCheckHolds checks the file's "flatkit.holds" against want ("" or
// HoldsParameters: parameters, which unmarked files are taken to hold).
func stCheckHolds(hd *stHeader, want string) error {
	got, marked := hd.meta[stKeyHolds]
	if want == "" {
		want = HoldsParameters
	}
	if !marked || got == want || got == "" && want == HoldsParameters {
		return nil
	}
	return fmt.Errorf("the file holds %s (metadata %q), want %s", got, stKeyHolds, want)
}

// Rename maps each tensor name in the file to the layout path it fills; a
// result of "" skips the tensor. Without it names are used as they are.
func Rename(f func(name string) string) LoadOption {
	return func(c *loadConfig) { c.rename = f }
}

// Strict makes LoadInto fail if any storage leaf of the layout is not filled
// or any tensor of the file (other than those renamed to "") fills no leaf.
func Strict() LoadOption {
	return func(c *loadConfig) { c.strict = true }
}

// LoadReport says what LoadInto did. Loaded and Missed are the primary paths
// of storage leaves that were filled and not filled; Skipped are the file's
// tensors that filled nothing. Each is sorted.
type LoadReport struct {
	Loaded  []string
	Skipped []Skipped
	Missed  []string
}

// Skipped is a tensor of the file that LoadInto did not use, and why:
// "not in layout" or "renamed away".
type Skipped struct {
	Name, Reason string
}

// LoadInto reads a safetensors file by name into θ, laid out by lay. Each
// tensor's name, after the Rename option, is looked up with lay.Find, so a
// tied path fills its leaf; tensors the layout does not hold are skipped
// whatever their dtype (PyTorch's int64 num_batches_tracked, say). A matched
// tensor must have the leaf's shape exactly and dtype F32, F64, F16 or BF16
// (converted to float32). The whole header is validated first and the data
// staged, so if LoadInto returns an error θ is unchanged.
func LoadInto(r io.Reader, lay *Layout, θ []float32, opts ...LoadOption) (LoadReport, error) {
	rep, err := loadInto(r, lay, θ, opts)
	if err != nil {
		return LoadReport{}, wrap("LoadInto", err)
	}
	return rep, nil
}

func loadInto(r io.Reader, lay *Layout, θ []float32, opts []LoadOption) (LoadReport, error) {
	if lay == nil {
		return LoadReport{}, fmt.Errorf("nil layout")
	}
	if len(θ) != lay.Len() {
		return LoadReport{}, fmt.Errorf("θ has %d floats, the layout wants %d", len(θ), lay.Len())
	}
	cfg := funcopt.Collect(opts)
	hd, err := stReadHeader(r)
	if err != nil {
		return LoadReport{}, err
	}
	if err := stCheckHolds(hd, cfg.holds); err != nil {
		return LoadReport{}, err
	}

	var rep LoadReport
	fill := make([]int, len(lay.leaves)) // leaf → 1 + tensor index, 0 if unfilled
	plan := make([]int, len(hd.tensors)) // tensor → leaf index, -1 if skipped
	var unmatched []string
	for i, t := range hd.tensors {
		plan[i] = -1
		path := t.name
		if cfg.rename != nil {
			if path = cfg.rename(t.name); path == "" {
				rep.Skipped = append(rep.Skipped, Skipped{t.name, "renamed away"})
				continue
			}
		}
		li, ok := lay.leafOf[path]
		if !ok {
			rep.Skipped = append(rep.Skipped, Skipped{t.name, "not in layout"})
			unmatched = append(unmatched, t.name)
			continue
		}
		lf := &lay.leaves[li]
		switch t.dtype {
		case "F32", "F64", "F16", "BF16":
		default:
			return LoadReport{}, &PathError{Path: path, Got: fmt.Sprintf("tensor %q of the file has dtype %s", t.name, t.dtype), Want: "F32, F64, F16 or BF16"}
		}
		if !slices.Equal(t.shape, lf.Shape) {
			return LoadReport{}, &PathError{Path: lf.Path, Err: ErrShape, Got: fmt.Sprintf("tensor %q of the file has %v", t.name, t.shape), Want: fmt.Sprint(lf.Shape)}
		}
		if fill[li] != 0 {
			return LoadReport{}, &PathError{Path: lf.Path, Got: fmt.Sprintf("filled twice, by tensor %q and by tensor %q", hd.tensors[fill[li]-1].name, t.name), Want: "one tensor per leaf (check Rename)"}
		}
		fill[li] = i + 1
		plan[i] = li
	}
	for li, f := range fill {
		if f == 0 {
			rep.Missed = append(rep.Missed, lay.leaves[li].Path)
		} else {
			rep.Loaded = append(rep.Loaded, lay.leaves[li].Path)
		}
	}
	sort.Strings(rep.Loaded)
	sort.Strings(rep.Missed)
	sort.Slice(rep.Skipped, func(i, j int) bool { return rep.Skipped[i].Name < rep.Skipped[j].Name })
	if cfg.strict && (len(rep.Missed) > 0 || len(unmatched) > 0) {
		var why []string
		if len(rep.Missed) > 0 {
			why = append(why, fmt.Sprintf("%d layout leaves not in the file (%s)", len(rep.Missed), stList(rep.Missed)))
		}
		if len(unmatched) > 0 {
			sort.Strings(unmatched)
			why = append(why, fmt.Sprintf("%d file tensors not in the layout (%s)", len(unmatched), stList(unmatched)))
		}
		return LoadReport{}, fmt.Errorf("strict: %s", strings.Join(why, "; "))
	}
	if _, err := stCheckRemaining(r, hd.dataLen); err != nil {
		return LoadReport{}, err
	}
	var stage []float32
	if len(rep.Loaded) > 0 {
		stage = make([]float32, len(θ))
	}
	var scratch []byte
	var pos int64
	for i, t := range hd.tensors {
		size := t.end - t.begin
		li := plan[i]
		if li < 0 {
			m, err := io.CopyN(io.Discard, r, size)
			if err != nil {
				return LoadReport{}, stShort(hd.dataLen, pos+m, err)
			}
			pos += size
			continue
		}
		lf := &lay.leaves[li]
		dst := stage[lf.Offset:lf.End()]
		if t.dtype == "F32" {
			if m, err := io.ReadFull(r, f32Bytes(dst)); err != nil {
				return LoadReport{}, stShort(hd.dataLen, pos+int64(m), err)
			}
			fromLE(dst)
			pos += size
			continue
		}
		if scratch == nil {
			scratch = make([]byte, 1<<16)
		}
		esz := stDtypeBits[t.dtype] / 8
		for len(dst) > 0 {
			k := min(len(dst), len(scratch)/esz)
			b := scratch[:k*esz]
			if m, err := io.ReadFull(r, b); err != nil {
				return LoadReport{}, stShort(hd.dataLen, pos+int64(m), err)
			}
			stConvert(dst[:k], b, t.dtype)
			dst = dst[k:]
			pos += int64(len(b))
		}
	}
	if err := stCheckEOF(r, hd.dataLen); err != nil {
		return LoadReport{}, err
	}
	if len(rep.Loaded) == 0 && len(lay.leaves) > 0 {
		// Not strict, but nothing at all is a wrong file or a wrong Rename.
		names := make([]string, len(hd.tensors))
		for i, t := range hd.tensors {
			names[i] = t.name
		}
		sort.Strings(names)
		return LoadReport{}, fmt.Errorf("no tensor of the file fills a leaf of the layout: nothing loaded (the file has %d tensors: %s; the layout wants %s)",
			len(names), stList(names), stList(rep.Missed))
	}

	for li, f := range fill {
		if f != 0 {
			lf := &lay.leaves[li]
			copy(θ[lf.Offset:lf.End()], stage[lf.Offset:lf.End()])
		}
	}
	return rep, nil
}

// stList shows at most 8 names.
func stList(names []string) string {
	if len(names) > 8 {
		return strings.Join(names[:8], ", ") + ", …"
	}
	return strings.Join(names, ", ")
}
