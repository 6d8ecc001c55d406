package layout

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/flatkit/flatkit/internal/funcopt"
)

// Save writes θ, laid out by lay, to w in the safetensors format. Each
// storage leaf is one F32 tensor, named by its path, with data_offsets
// [4·Offset, 4·End()). The groups, ties and frozen flags go in the
// metadata, so that Load rebuilds an Equal layout and bit-identical values.
func Save(w io.Writer, lay *Layout, θ []float32, opts ...SaveOption) error {
	return wrap("Save", stSave(w, lay, θ, opts))
}

// HoldsParameters is what a file holds unless Holds says otherwise.
const HoldsParameters = "parameters"

// SaveOption configures Save and SaveFile.
type SaveOption func(*saveConfig)

type saveConfig struct{ holds string }

// Holds marks the file as holding kind (such as "optimiser state") rather
// than parameters, in the metadata key "flatkit.holds". Load and LoadInto
// then refuse it unless given WantHolds(kind), with an error naming both
// kinds; any safetensors reader still reads it.
func Holds(kind string) SaveOption {
	return func(c *saveConfig) { c.holds = kind }
}

func stSave(w io.Writer, lay *Layout, θ []float32, opts []SaveOption) error {
	if lay == nil {
		return fmt.Errorf("nil layout")
	}
	if len(θ) != lay.Len() {
		return fmt.Errorf("θ has %d floats, the layout wants %d", len(θ), lay.Len())
	}
	cfg := funcopt.Collect(opts)
	if cfg.holds == HoldsParameters {
		cfg.holds = "" // the default: written as no key, as before
	}
	hdr, err := stEncodeHeader(lay, cfg.holds)
	if err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return fmt.Errorf("writing the header: %w", err)
	}
	if stNativeLE {
		if _, err := w.Write(f32Bytes(θ)); err != nil {
			return fmt.Errorf("writing the data: %w", err)
		}
		return nil
	}
	buf := make([]byte, 0, stChunkBytes)
	for len(θ) > 0 {
		k := min(len(θ), stChunkBytes/4)
		buf = buf[:0]
		for _, v := range θ[:k] {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("writing the data: %w", err)
		}
		θ = θ[k:]
	}
	return nil
}

// stEncodeHeader returns the 8-byte length and the header, padded with
// spaces so that the data section starts at a multiple of 8.
func stEncodeHeader(lay *Layout, holds string) ([]byte, error) {
	var h bytes.Buffer
	h.Write(make([]byte, 8)) // length, filled in below
	h.WriteByte('{')

	// Metadata values are strings holding JSON.
	var meta [][2]string
	var frozen []string
	var ties bytes.Buffer
	for _, lf := range lay.leaves {
		if lf.Path == stMetaKey {
			return nil, fmt.Errorf("leaf path %q is reserved by the safetensors format", lf.Path)
		}
		if lf.Frozen {
			frozen = append(frozen, lf.Path)
		}
		for _, a := range lf.Aliases {
			if ties.Len() == 0 {
				ties.WriteByte('{')
			} else {
				ties.WriteByte(',')
			}
			ties.Write(stQuote(a))
			ties.WriteByte(':')
			ties.Write(stQuote(lf.Path))
		}
	}
	if len(frozen) > 0 {
		b, err := json.Marshal(frozen)
		if err != nil {
			return nil, err
		}
		meta = append(meta, [2]string{stKeyFrozen, string(b)})
	}
	if len(lay.groups) > 0 {
		gs := make([]groupJSON, len(lay.groups))
		for i, g := range lay.groups {
			gs[i] = groupJSON(g)
		}
		b, err := json.Marshal(gs)
		if err != nil {
			return nil, err
		}
		meta = append(meta, [2]string{stKeyGroups, string(b)})
	}
	if ties.Len() > 0 {
		ties.WriteByte('}')
		meta = append(meta, [2]string{stKeyTies, ties.String()})
	}
	if holds != "" {
		meta = append(meta, [2]string{stKeyHolds, holds})
	}
	first := true
	if len(meta) > 0 {
		h.WriteString(`"` + stMetaKey + `":{`)
		for i, kv := range meta {
			if i > 0 {
				h.WriteByte(',')
			}
			h.Write(stQuote(kv[0]))
			h.WriteByte(':')
			h.Write(stQuote(kv[1]))
		}
		h.WriteByte('}')
		first = false
	}
	for _, lf := range lay.leaves {
		if !first {
			h.WriteByte(',')
		}
		first = false
		h.Write(stQuote(lf.Path))
		h.WriteString(`:{"dtype":"F32","shape":[`)
		for i, d := range lf.Shape {
			if i > 0 {
				h.WriteByte(',')
			}
			fmt.Fprint(&h, d)
		}
		fmt.Fprintf(&h, `],"data_offsets":[%d,%d]}`, 4*int64(lf.Offset), 4*int64(lf.End()))
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ')
	}
	b := h.Bytes()
	n := len(b) - 8
	if n > stMaxHeader {
		return nil, fmt.Errorf("the header would be %d bytes, over the format's limit of %d", n, stMaxHeader)
	}
	binary.LittleEndian.PutUint64(b, uint64(n))
	return b, nil
}

// stQuote is s as a JSON string.
func stQuote(s string) []byte {
	b, err := json.Marshal(s)
	if err != nil { // cannot happen for a string
		panic(err)
	}
	return b
}

// SaveFile writes θ to the file at path as Save does, atomically: the data
// goes to a temporary file in the same directory, which is synced, closed and
// renamed over path; the directory is then synced (best effort). On any error
// the temporary file is removed and an existing file at path is untouched. A
// new file gets mode 0644; an overwritten one keeps its mode.
func SaveFile(path string, lay *Layout, θ []float32, opts ...SaveOption) error {
	return wrap("SaveFile", saveFile(path, lay, θ, opts))
}

func saveFile(path string, lay *Layout, θ []float32, opts []SaveOption) (err error) {
	if lay == nil {
		return fmt.Errorf("nil layout")
	}
	if len(θ) != lay.Len() {
		return fmt.Errorf("θ has %d floats, the layout wants %d", len(θ), lay.Len())
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if base == "" {
		return fmt.Errorf("path %q names a directory", path)
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(tmp)
		}
	}()
	if err = stSave(f, lay, θ, opts); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	closed = true
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil { // best effort: make the rename durable
		d.Sync()
		d.Close()
	}
	return nil
}
