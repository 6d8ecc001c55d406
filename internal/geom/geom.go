package geom

import (
	"fmt"
	"slices"
)

// Axes writes field v expanded to len(dst) spatial axes into dst: def on
// every axis if v is empty, v[0] on every axis if it has one value, v itself
// if it has one per axis. Any other length is an error naming field. It
// allocates nothing unless it fails.
func Axes(dst []int, field string, v []int, def int) error {
	switch len(v) {
	case 0:
		for i := range dst {
			dst[i] = def
		}
	case 1:
		for i := range dst {
			dst[i] = v[0]
		}
	case len(dst):
		copy(dst, v)
	default:
		return fmt.Errorf("%s has %d values %v, want 1 or %d (one per spatial axis)", field, len(v), slices.Clone(v), len(dst))
	}
	return nil
}

// Pads writes into lo and hi the padding before and after each spatial
// axis. It expands padLo by Axes with default 0, and padHi likewise, except
// that an empty padHi repeats lo: symmetric padding. loField and hiField
// name the fields in errors.
func Pads(lo, hi []int, loField, hiField string, padLo, padHi []int) error {
	if err := Axes(lo, loField, padLo, 0); err != nil {
		return err
	}
	if len(padHi) == 0 {
		copy(hi, lo)
		return nil
	}
	return Axes(hi, hiField, padHi, 0)
}
