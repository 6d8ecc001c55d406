package layout

// Checkpoints in the safetensors format
// (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON header, then the data section. The header
// maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// (byte offsets into the data section) and may hold "__metadata__", a map of
// strings to strings.
//
// Save writes one F32 tensor per storage leaf, named by its primary path, with
// the data section being θ itself, so loading is one read. The rest of the
// layout goes into the metadata, each key only when it has something to say:
//
//	"flatkit.groups": JSON array of {"path","lo","hi"}, every group in Groups() order
//	"flatkit.ties":   JSON object alias → storage path, leaves in buffer order
//	"flatkit.frozen": JSON array of the frozen leaves' paths
//	"flatkit.holds":  what the file holds when it is not parameters (Holds)
//
// A file carrying any of these keys is rebuilt exactly; a file without them
// (one written by PyTorch, say) is rebuilt with a Builder from the tensor
// names.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Metadata keys Save writes and Load reads.
const (
	stMetaKey    = "__metadata__"
	stKeyGroups  = "flatkit.groups"
	stKeyTies    = "flatkit.ties"
	stKeyFrozen  = "flatkit.frozen"
	stKeyHolds   = "flatkit.holds"
	stMaxHeader  = 100_000_000 // bytes; the reference implementation's limit
	stChunkBytes = 1 << 20     // growth step when the data size is not known up front
)

// stDtypeBits is the size in bits of one element of each safetensors dtype.
var stDtypeBits = map[string]int{
	"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
	"I16": 16, "U16": 16, "F16": 16, "BF16": 16,
	"I32": 32, "U32": 32, "F32": 32,
	"I64": 64, "U64": 64, "F64": 64, "C64": 64,
	"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}

// stNativeLE reports whether float32 bits sit in memory little-endian, in
// which case θ's bytes are the data section as they are.
var stNativeLE = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// stTensor is one validated header entry.
type stTensor struct {
	name       string
	dtype      string
	shape      []int
	begin, end int64 // byte offsets into the data section
}

// stHeader is a validated header: tensors sorted by data offsets, tiling
// [0, dataLen) exactly.
type stHeader struct {
	tensors []stTensor
	meta    map[string]string
	dataLen int64
}

// f32Bytes is the byte view of x (no copy).
func f32Bytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}

// fromLE turns floats whose bytes were read little-endian into native floats.
func fromLE(x []float32) {
	if stNativeLE {
		return
	}
	b := f32Bytes(x)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}

// ---------------------------------------------------------------- Save

// Save writes θ, laid out by lay, to w in the safetensors format: one F32
// tensor per storage leaf, named by its path, with data_offsets
// [4·Offset, 4·End()), and the groups, ties and frozen flags in the metadata
// so that Load rebuilds an Equal layout and bit-identical values.
func Save(w io.Writer, lay *Layout, θ []float32, opts ...SaveOption) error {
	return stSave(w, lay, θ, "layout: Save: ", opts)
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

func stSave(w io.Writer, lay *Layout, θ []float32, pre string, opts []SaveOption) error {
	if lay == nil {
		return fmt.Errorf("%snil layout", pre)
	}
	if len(θ) != lay.Len() {
		return fmt.Errorf("%sθ has %d floats, the layout wants %d", pre, len(θ), lay.Len())
	}
	var cfg saveConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.holds == HoldsParameters {
		cfg.holds = "" // the default: written as no key, as before
	}
	hdr, err := stEncodeHeader(lay, pre, cfg.holds)
	if err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return fmt.Errorf("%swriting the header: %w", pre, err)
	}
	if stNativeLE {
		if _, err := w.Write(f32Bytes(θ)); err != nil {
			return fmt.Errorf("%swriting the data: %w", pre, err)
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
			return fmt.Errorf("%swriting the data: %w", pre, err)
		}
		θ = θ[k:]
	}
	return nil
}

// stEncodeHeader returns the 8-byte length and the header, padded with
// spaces so that the data section starts at a multiple of 8.
func stEncodeHeader(lay *Layout, pre, holds string) ([]byte, error) {
	var h bytes.Buffer
	h.Write(make([]byte, 8)) // length, filled in below
	h.WriteByte('{')

	// Metadata values are strings holding JSON.
	var meta [][2]string
	var frozen []string
	var ties bytes.Buffer
	for _, lf := range lay.leaves {
		if lf.Path == stMetaKey {
			return nil, fmt.Errorf("%sleaf path %q is reserved by the safetensors format", pre, lf.Path)
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
			return nil, fmt.Errorf("%s%v", pre, err)
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
			return nil, fmt.Errorf("%s%v", pre, err)
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
		return nil, fmt.Errorf("%sthe header would be %d bytes, over the format's limit of %d", pre, n, stMaxHeader)
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
func SaveFile(path string, lay *Layout, θ []float32, opts ...SaveOption) (err error) {
	pre := "layout: SaveFile: "
	if lay == nil {
		return fmt.Errorf("%snil layout", pre)
	}
	if len(θ) != lay.Len() {
		return fmt.Errorf("%sθ has %d floats, the layout wants %d", pre, len(θ), lay.Len())
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if base == "" {
		return fmt.Errorf("%spath %q names a directory", pre, path)
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("%s%w", pre, err)
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
	if err = stSave(f, lay, θ, pre+path+": ", opts); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return fmt.Errorf("%s%w", pre, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("%s%w", pre, err)
	}
	closed = true
	if err = f.Close(); err != nil {
		return fmt.Errorf("%s%w", pre, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("%s%w", pre, err)
	}
	if d, err := os.Open(dir); err == nil { // best effort: make the rename durable
		d.Sync()
		d.Close()
	}
	return nil
}

// ---------------------------------------------------------------- header

// stReadHeader reads and validates the header, allocating only as many bytes
// as the reader actually delivers.
func stReadHeader(r io.Reader, pre string) (*stHeader, error) {
	var lb [8]byte
	if n, err := io.ReadFull(r, lb[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%sfile has %d bytes, want at least 8 (the header length)", pre, n)
		}
		return nil, fmt.Errorf("%sreading the header length: %w", pre, err)
	}
	n := binary.LittleEndian.Uint64(lb[:])
	if n > stMaxHeader {
		return nil, fmt.Errorf("%sheader length is %d bytes, want at most %d", pre, n, stMaxHeader)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(r, int64(n))); err != nil {
		return nil, fmt.Errorf("%sreading the header: %w", pre, err)
	}
	if uint64(buf.Len()) < n {
		return nil, fmt.Errorf("%sheader needs %d bytes, file has %d after the length", pre, n, buf.Len())
	}
	return stParseHeader(buf.Bytes(), pre)
}

// stObject calls fn for each member of the JSON object in data, in order. It
// rejects duplicate keys and anything after the object but whitespace.
func stObject(data []byte, fn func(key string, raw json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("got %s, want a JSON object", stBrief(data))
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("object key is %v, want a string", tok)
		}
		if seen[key] {
			return fmt.Errorf("duplicate name %q", key)
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("value of %q: %v", key, err)
		}
		if err := fn(key, raw); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return err
	}
	if tok, err := dec.Token(); err != io.EOF {
		if err != nil {
			return fmt.Errorf("after the object: %v", err)
		}
		return fmt.Errorf("unexpected %v after the object", tok)
	}
	return nil
}

// stBrief is raw JSON shortened for an error message.
func stBrief(raw []byte) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	if !utf8.ValidString(s) {
		return fmt.Sprintf("%q", s)
	}
	return s
}

func stIsNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

func stParseHeader(h []byte, pre string) (*stHeader, error) {
	if !utf8.Valid(h) {
		return nil, fmt.Errorf("%sheader is not valid UTF-8", pre)
	}
	if len(h) == 0 || h[0] != '{' {
		return nil, fmt.Errorf("%sheader starts with %s, want a JSON object", pre, stBrief(h))
	}
	hd := &stHeader{}
	err := stObject(h, func(name string, raw json.RawMessage) error {
		if name == stMetaKey {
			if stIsNull(raw) {
				return nil
			}
			if err := json.Unmarshal(raw, &hd.meta); err != nil {
				return fmt.Errorf("%q must map strings to strings: %v", stMetaKey, err)
			}
			return nil
		}
		t, err := stParseEntry(name, raw)
		if err != nil {
			return err
		}
		hd.tensors = append(hd.tensors, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%sheader: %v", pre, err)
	}
	sort.SliceStable(hd.tensors, func(i, j int) bool {
		a, b := hd.tensors[i], hd.tensors[j]
		if a.begin != b.begin {
			return a.begin < b.begin
		}
		return a.end < b.end
	})
	// The data offsets must tile the data section: no gaps, no overlaps.
	var pos int64
	prev := ""
	for _, t := range hd.tensors {
		switch {
		case t.begin < pos:
			return nil, fmt.Errorf("%stensor %q: data_offsets [%d, %d] overlap tensor %q, which ends at %d", pre, t.name, t.begin, t.end, prev, pos)
		case t.begin > pos:
			return nil, fmt.Errorf("%stensor %q: data_offsets [%d, %d] start at %d, want %d (bytes [%d, %d) belong to no tensor)", pre, t.name, t.begin, t.end, t.begin, pos, pos, t.begin)
		}
		pos, prev = t.end, t.name
	}
	hd.dataLen = pos
	return hd, nil
}

// stParseEntry validates one tensor entry: field types, dtype, shape (with
// overflow-checked products) and data offsets agreeing with the shape.
func stParseEntry(name string, raw json.RawMessage) (stTensor, error) {
	t := stTensor{name: name}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return t, fmt.Errorf("tensor %q: entry is %s, want an object with dtype, shape and data_offsets", name, stBrief(raw))
	}
	field := func(key string, v any) error {
		f, ok := m[key]
		if !ok {
			return fmt.Errorf("tensor %q: missing %q", name, key)
		}
		if stIsNull(f) {
			return fmt.Errorf("tensor %q: %q is null", name, key)
		}
		if err := json.Unmarshal(f, v); err != nil {
			return fmt.Errorf("tensor %q: %q is %s: %v", name, key, stBrief(f), err)
		}
		return nil
	}
	var shape, offs []int64
	if err := field("dtype", &t.dtype); err != nil {
		return t, err
	}
	if err := field("shape", &shape); err != nil {
		return t, err
	}
	if err := field("data_offsets", &offs); err != nil {
		return t, err
	}
	elemBits, ok := stDtypeBits[t.dtype]
	if !ok {
		return t, fmt.Errorf("tensor %q: unknown dtype %q", name, t.dtype)
	}
	t.shape = make([]int, len(shape))
	var nelem uint64 = 1
	for i, d := range shape {
		if d < 0 {
			return t, fmt.Errorf("tensor %q: dimension %d of shape %v is %d, want >= 0", name, i, shape, d)
		}
		if uint64(d) > math.MaxInt {
			return t, fmt.Errorf("tensor %q: dimension %d of shape %v is too large", name, i, shape)
		}
		t.shape[i] = int(d)
		hi, lo := bits.Mul64(nelem, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return t, fmt.Errorf("tensor %q: shape %v holds more elements than an int64 can count", name, shape)
		}
		nelem = lo
	}
	if len(offs) != 2 {
		return t, fmt.Errorf("tensor %q: data_offsets has %d values, want 2 ([begin, end])", name, len(offs))
	}
	t.begin, t.end = offs[0], offs[1]
	if t.begin < 0 || t.end < 0 {
		return t, fmt.Errorf("tensor %q: data_offsets [%d, %d] are negative", name, t.begin, t.end)
	}
	if t.begin > t.end {
		return t, fmt.Errorf("tensor %q: data_offsets [%d, %d] end before they begin", name, t.begin, t.end)
	}
	hi, nbits := bits.Mul64(nelem, uint64(elemBits))
	if hi != 0 || nbits/8 > math.MaxInt64 {
		return t, fmt.Errorf("tensor %q: shape %v of %s holds more bytes than an int64 can count", name, shape, t.dtype)
	}
	if nbits%8 != 0 {
		return t, fmt.Errorf("tensor %q: shape %v of %s is %d bits, not a whole number of bytes", name, shape, t.dtype, nbits)
	}
	if size := int64(nbits / 8); t.end-t.begin != size {
		return t, fmt.Errorf("tensor %q: data_offsets [%d, %d] hold %d bytes, shape %v of %s needs %d", name, t.begin, t.end, t.end-t.begin, shape, t.dtype, size)
	}
	return t, nil
}

// ---------------------------------------------------------------- data

// stRemaining returns how many bytes r has left, when r can tell.
func stRemaining(r io.Reader) (int64, bool) {
	switch r := r.(type) {
	case interface{ Len() int }: // bytes.Reader, bytes.Buffer, strings.Reader
		return int64(r.Len()), true
	case *io.SectionReader:
		pos, err := r.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, false
		}
		return r.Size() - pos, true
	case *os.File:
		fi, err := r.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return 0, false
		}
		pos, err := r.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, false
		}
		return fi.Size() - pos, true
	}
	return 0, false
}

// stCheckRemaining compares the data section's length with what the reader
// has left, when it can tell, before anything is allocated for the data.
func stCheckRemaining(r io.Reader, need int64, pre string) (known bool, err error) {
	have, ok := stRemaining(r)
	switch {
	case !ok:
		return false, nil
	case have < need:
		return true, fmt.Errorf("%sdata section needs %d bytes, file has %d", pre, need, have)
	case have > need:
		return true, fmt.Errorf("%s%d trailing bytes after the data section, which ends at %d bytes", pre, have-need, need)
	}
	return true, nil
}

// stCheckEOF reports bytes after the data section.
func stCheckEOF(r io.Reader, need int64, pre string) error {
	var one [1]byte
	n, err := io.ReadFull(r, one[:])
	if n > 0 {
		return fmt.Errorf("%strailing bytes after the data section, which ends at %d bytes", pre, need)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%sreading the data: %w", pre, err)
	}
	return nil
}

// stShort is the error for a data section cut short after have bytes.
func stShort(pre string, need, have int64, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%sdata section needs %d bytes, file has %d", pre, need, have)
	}
	return fmt.Errorf("%sreading the data: %w", pre, err)
}

// stReadF32 reads n little-endian floats. If the size was not checked up
// front, the buffer grows as data arrives, so a file that declares more than
// it holds costs no more memory than it holds.
func stReadF32(r io.Reader, n int, known bool, pre string) ([]float32, error) {
	need := 4 * int64(n)
	if known {
		x := make([]float32, n)
		if m, err := io.ReadFull(r, f32Bytes(x)); err != nil {
			return nil, stShort(pre, need, int64(m), err)
		}
		fromLE(x)
		return x, nil
	}
	x := make([]float32, 0, min(n, stChunkBytes/4))
	for len(x) < n {
		if len(x) == cap(x) {
			x = slices.Grow(x, min(cap(x), n-len(x)))
		}
		k := min(cap(x), n)
		m, err := io.ReadFull(r, f32Bytes(x[len(x):k]))
		if err != nil {
			return nil, stShort(pre, need, 4*int64(len(x))+int64(m), err)
		}
		x = x[:k]
	}
	fromLE(x)
	return x, nil
}

// ---------------------------------------------------------------- Load

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

// ---------------------------------------------------------------- LoadInto

// LoadOption configures LoadInto.
type LoadOption func(*loadConfig)

type loadConfig struct {
	rename func(string) string
	strict bool
	holds  string // "" for parameters
}

func loadOptions(opts []LoadOption) loadConfig {
	var cfg loadConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return cfg
}

// WantHolds makes Load or LoadInto read a file that Holds(kind) marked,
// or a file with no mark (written before marks, or by another program),
// and refuse one marked as holding anything else.
func WantHolds(kind string) LoadOption {
	return func(c *loadConfig) { c.holds = kind }
}

// stCheckHolds checks the file's "flatkit.holds" against want ("" or
// HoldsParameters: parameters, which unmarked files are taken to hold).
func stCheckHolds(hd *stHeader, want, pre string) error {
	got, marked := hd.meta[stKeyHolds]
	if want == "" {
		want = HoldsParameters
	}
	if !marked || got == want || got == "" && want == HoldsParameters {
		return nil
	}
	return fmt.Errorf("%sthe file holds %s (metadata %q), want %s", pre, got, stKeyHolds, want)
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
	pre := "layout: LoadInto: "
	if lay == nil {
		return LoadReport{}, fmt.Errorf("%snil layout", pre)
	}
	if len(θ) != lay.Len() {
		return LoadReport{}, fmt.Errorf("%sθ has %d floats, the layout wants %d", pre, len(θ), lay.Len())
	}
	cfg := loadOptions(opts)
	hd, err := stReadHeader(r, pre)
	if err != nil {
		return LoadReport{}, err
	}
	if err := stCheckHolds(hd, cfg.holds, pre); err != nil {
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
			return LoadReport{}, fmt.Errorf("%stensor %q (layout path %q) has dtype %s, want F32, F64, F16 or BF16", pre, t.name, path, t.dtype)
		}
		if !slices.Equal(t.shape, lf.Shape) {
			return LoadReport{}, fmt.Errorf("%slayout path %q has shape %v, tensor %q in the file has shape %v", pre, lf.Path, lf.Shape, t.name, t.shape)
		}
		if fill[li] != 0 {
			return LoadReport{}, fmt.Errorf("%sleaf %q is filled twice: by tensor %q and by tensor %q", pre, lf.Path, hd.tensors[fill[li]-1].name, t.name)
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
		return LoadReport{}, fmt.Errorf("%sstrict: %s", pre, strings.Join(why, "; "))
	}
	if _, err := stCheckRemaining(r, hd.dataLen, pre); err != nil {
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
				return LoadReport{}, stShort(pre, hd.dataLen, pos+m, err)
			}
			pos += size
			continue
		}
		lf := &lay.leaves[li]
		dst := stage[lf.Offset:lf.End()]
		if t.dtype == "F32" {
			if m, err := io.ReadFull(r, f32Bytes(dst)); err != nil {
				return LoadReport{}, stShort(pre, hd.dataLen, pos+int64(m), err)
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
				return LoadReport{}, stShort(pre, hd.dataLen, pos+int64(m), err)
			}
			stConvert(dst[:k], b, t.dtype)
			dst = dst[k:]
			pos += int64(len(b))
		}
	}
	if err := stCheckEOF(r, hd.dataLen, pre); err != nil {
		return LoadReport{}, err
	}
	if len(rep.Loaded) == 0 && len(lay.leaves) > 0 {
		// Not strict, but nothing at all is a wrong file or a wrong Rename.
		names := make([]string, len(hd.tensors))
		for i, t := range hd.tensors {
			names[i] = t.name
		}
		sort.Strings(names)
		return LoadReport{}, fmt.Errorf("%sno tensor of the file fills a leaf of the layout: nothing loaded (the file has %d tensors: %s; the layout wants %s)",
			pre, len(names), stList(names), stList(rep.Missed))
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

// stConvert decodes little-endian F64, F16 or BF16 values from b into dst.
func stConvert(dst []float32, b []byte, dtype string) {
	switch dtype {
	case "F64":
		for i := range dst {
			dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
		}
	case "F16":
		for i := range dst {
			dst[i] = stHalf(binary.LittleEndian.Uint16(b[2*i:]))
		}
	case "BF16":
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		}
	default:
		panic("layout: stConvert: dtype " + dtype)
	}
}

// stHalf converts IEEE 754 binary16 to float32 exactly (NaN payloads kept).
func stHalf(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: mant · 2⁻²⁴
		f := float32(mant) / (1 << 24)
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}
