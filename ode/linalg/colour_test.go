package linalg

import (
	"testing"

	"pgregory.net/rapid"
)

// checkColouring fails unless colours is a valid grouping of p's columns
// into k groups: every group used, and no two columns of a group in one
// row.
func checkColouring(t interface {
	Helper()
	Fatalf(string, ...any)
}, p *Pattern, colours []int, k int) {
	t.Helper()
	if len(colours) != p.Cols {
		t.Fatalf("%d colours for %d columns", len(colours), p.Cols)
	}
	used := make([]bool, k)
	for j, c := range colours {
		if c < 0 || c >= k {
			t.Fatalf("column %d has colour %d, want one in [0, %d)", j, c, k)
		}
		used[c] = true
	}
	for c, u := range used {
		if !u {
			t.Fatalf("colour %d of %d is unused", c, k)
		}
	}
	for i := range p.Rows {
		seen := map[int]int{}
		for _, j := range p.Row(i) {
			if l, ok := seen[colours[j]]; ok {
				t.Fatalf("row %d has columns %d and %d, both of colour %d", i, l, j, colours[j])
			}
			seen[colours[j]] = j
		}
	}
}

func TestColourProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rows, cols := rapid.IntRange(1, 15).Draw(t, "rows"), rapid.IntRange(1, 15).Draw(t, "cols")
		p, _ := randomPattern(t, rows, cols)
		colours, k := Colour(p)
		checkColouring(t, p, colours, k)
		widest := 0
		for i := range rows {
			widest = max(widest, len(p.Row(i)))
		}
		if k < widest {
			t.Fatalf("%d colours, fewer than the %d entries of the widest row", k, widest)
		}
		if k > cols {
			t.Fatalf("%d colours for %d columns", k, cols)
		}
	})
}

// A band matrix needs exactly lower+upper+1 colours, its widest row.
func TestColourBand(t *testing.T) {
	for _, c := range []struct{ n, l, u int }{{10, 0, 0}, {10, 2, 2}, {400, 2, 2}, {50, 1, 4}, {50, 7, 3}} {
		p := BandPattern(c.n, c.l, c.u)
		colours, k := Colour(p)
		checkColouring(t, p, colours, k)
		if want := c.l + c.u + 1; k != want {
			t.Errorf("BandPattern(%d, %d, %d): %d colours, want %d", c.n, c.l, c.u, k, want)
		}
	}
}
