package layout

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"unicode/utf8"
)

// stReadHeader reads and validates the header, allocating only as many bytes
// as the reader actually delivers.
func stReadHeader(r io.Reader) (*stHeader, error) {
	var lb [8]byte
	if n, err := io.ReadFull(r, lb[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("file has %d bytes, want at least 8 (the header length)", n)
		}
		return nil, fmt.Errorf("reading the header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(lb[:])
	if n > stMaxHeader {
		return nil, fmt.Errorf("header length is %d bytes, want at most %d", n, stMaxHeader)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(r, int64(n))); err != nil {
		return nil, fmt.Errorf("reading the header: %w", err)
	}
	if uint64(buf.Len()) < n {
		return nil, fmt.Errorf("header needs %d bytes, file has %d after the length", n, buf.Len())
	}
	return stParseHeader(buf.Bytes())
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
			return fmt.Errorf("value of %q: %w", key, err)
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
			return fmt.Errorf("after the object: %w", err)
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

func stParseHeader(h []byte) (*stHeader, error) {
	if !utf8.Valid(h) {
		return nil, fmt.Errorf("header is not valid UTF-8")
	}
	if len(h) == 0 || h[0] != '{' {
		return nil, fmt.Errorf("header starts with %s, want a JSON object", stBrief(h))
	}
	hd := &stHeader{}
	err := stObject(h, func(name string, raw json.RawMessage) error {
		if name == stMetaKey {
			if stIsNull(raw) {
				return nil
			}
			if err := json.Unmarshal(raw, &hd.meta); err != nil {
				return fmt.Errorf("%q must map strings to strings: %w", stMetaKey, err)
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
		return nil, fmt.Errorf("header: %w", err)
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
			return nil, fmt.Errorf("tensor %q: data_offsets [%d, %d] overlap tensor %q, which ends at %d, want a start at %d", t.name, t.begin, t.end, prev, pos, pos)
		case t.begin > pos:
			return nil, fmt.Errorf("tensor %q: data_offsets [%d, %d] start at %d, want %d (bytes [%d, %d) belong to no tensor)", t.name, t.begin, t.end, t.begin, pos, pos, t.begin)
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
	field := func(key, want string, v any) error {
		f, ok := m[key]
		if !ok {
			return fmt.Errorf("tensor %q: missing %q", name, key)
		}
		if stIsNull(f) {
			return fmt.Errorf("tensor %q: %q is null, want %s", name, key, want)
		}
		if err := json.Unmarshal(f, v); err != nil {
			return fmt.Errorf("tensor %q: %q is %s, want %s: %w", name, key, stBrief(f), want, err)
		}
		return nil
	}
	var shape, offs []int64
	if err := field("dtype", "a string such as \"F32\"", &t.dtype); err != nil {
		return t, err
	}
	if err := field("shape", "an array of integers", &shape); err != nil {
		return t, err
	}
	if err := field("data_offsets", "an array [begin, end] of integers", &offs); err != nil {
		return t, err
	}
	elemBits, ok := stDtypeBits[t.dtype]
	if !ok {
		return t, fmt.Errorf("tensor %q: unknown dtype %q, want one of %s", name, t.dtype, stDtypeNames)
	}
	t.shape = make([]int, len(shape))
	var nelem uint64 = 1
	for i, d := range shape {
		if d < 0 {
			return t, fmt.Errorf("tensor %q: dimension %d of shape %v is %d, want >= 0", name, i, shape, d)
		}
		if uint64(d) > math.MaxInt {
			return t, fmt.Errorf("tensor %q: dimension %d of shape %v is too large, want at most %d", name, i, shape, math.MaxInt)
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
		return t, fmt.Errorf("tensor %q: data_offsets [%d, %d] are negative, want >= 0", name, t.begin, t.end)
	}
	if t.begin > t.end {
		return t, fmt.Errorf("tensor %q: data_offsets [%d, %d] end before they begin, want begin <= end", name, t.begin, t.end)
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
