package layout

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

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
func stCheckRemaining(r io.Reader, need int64) (known bool, err error) {
	have, ok := stRemaining(r)
	switch {
	case !ok:
		return false, nil
	case have < need:
		return true, fmt.Errorf("data section needs %d bytes, file has %d", need, have)
	case have > need:
		return true, fmt.Errorf("%d trailing bytes after the data section, which ends at %d bytes", have-need, need)
	}
	return true, nil
}

// stCheckEOF reports bytes after the data section.
func stCheckEOF(r io.Reader, need int64) error {
	var one [1]byte
	n, err := io.ReadFull(r, one[:])
	if n > 0 {
		return fmt.Errorf("trailing bytes after the data section, which ends at %d bytes", need)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading the data: %w", err)
	}
	return nil
}

// stShort is the error for a data section cut short after have bytes.
func stShort(need, have int64, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("data section needs %d bytes, file has %d", need, have)
	}
	return fmt.Errorf("reading the data: %w", err)
}

// stReadF32 reads n little-endian floats. If the size was not checked up
// front, the buffer grows as data arrives, so a file that declares more than
// it holds costs no more memory than it holds.
func stReadF32(r io.Reader, n int, known bool) ([]float32, error) {
	need := 4 * int64(n)
	if known {
		x := make([]float32, n)
		if m, err := io.ReadFull(r, f32Bytes(x)); err != nil {
			return nil, stShort(need, int64(m), err)
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
			return nil, stShort(need, 4*int64(len(x))+int64(m), err)
		}
		x = x[:k]
	}
	fromLE(x)
	return x, nil
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
