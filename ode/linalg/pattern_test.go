package linalg

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// randomPattern draws a rows×cols pattern with about density·rows·cols
// entries, with repeats, and returns it with its set of entries.
func randomPattern(t *rapid.T, rows, cols int) (*Pattern, map[Entry]bool) {
	k := rapid.IntRange(0, 3*rows*cols/2+1).Draw(t, "entries")
	var es []Entry
	set := map[Entry]bool{}
	for range k {
		e := Entry{rapid.IntRange(0, rows-1).Draw(t, "i"), rapid.IntRange(0, cols-1).Draw(t, "j")}
		es = append(es, e)
		set[e] = true
	}
	p, err := NewPattern(rows, cols, es)
	if err != nil {
		t.Fatal(err)
	}
	return p, set
}

func TestPatternProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rows, cols := rapid.IntRange(1, 12).Draw(t, "rows"), rapid.IntRange(1, 12).Draw(t, "cols")
		p, set := randomPattern(t, rows, cols)
		if err := p.Validate(); err != nil {
			t.Fatalf("NewPattern made an invalid pattern: %v", err)
		}
		if p.NNZ() != len(set) {
			t.Fatalf("NNZ = %d, want %d distinct entries", p.NNZ(), len(set))
		}
		for i := range rows {
			for j := range cols {
				if p.Has(i, j) != set[Entry{i, j}] {
					t.Fatalf("Has(%d, %d) = %v, want %v", i, j, p.Has(i, j), set[Entry{i, j}])
				}
			}
		}
		for k := 0; k < p.NNZ(); k++ {
			// Index finds every stored entry at its own position.
			i := 0
			for p.RowPtr[i+1] <= k {
				i++
			}
			if got := p.Index(i, p.ColIdx[k]); got != k {
				t.Fatalf("Index(%d, %d) = %d, want %d", i, p.ColIdx[k], got, k)
			}
		}
		tr, perm := p.Transpose()
		if err := tr.Validate(); err != nil {
			t.Fatalf("Transpose made an invalid pattern: %v", err)
		}
		for j := range cols {
			for q, i := range tr.Row(j) {
				k := perm[tr.RowPtr[j]+q]
				if p.Index(i, j) != k {
					t.Fatalf("transposed entry (%d, %d) maps to %d, want %d", j, i, k, p.Index(i, j))
				}
			}
		}
		back, _ := tr.Transpose()
		if diff := cmp.Diff(p, back); diff != "" {
			t.Fatalf("transposing twice changed the pattern (-want +got):\n%s", diff)
		}
	})
}

func TestBandPattern(t *testing.T) {
	for _, c := range []struct{ n, l, u int }{{1, 0, 0}, {5, 0, 0}, {6, 2, 1}, {6, 1, 3}, {4, 5, 5}} {
		p := BandPattern(c.n, c.l, c.u)
		for i := range c.n {
			for j := range c.n {
				want := j-i >= -c.l && j-i <= c.u
				if p.Has(i, j) != want {
					t.Fatalf("BandPattern(%d, %d, %d).Has(%d, %d) = %v, want %v", c.n, c.l, c.u, i, j, !want, want)
				}
			}
		}
		l, u := p.Bandwidths()
		if wl, wu := min(c.l, c.n-1), min(c.u, c.n-1); l != wl || u != wu {
			t.Fatalf("Bandwidths of BandPattern(%d, %d, %d) = %d, %d, want %d, %d", c.n, c.l, c.u, l, u, wl, wu)
		}
	}
}

func TestPatternErrors(t *testing.T) {
	if _, err := NewPattern(3, 3, []Entry{{0, 0}, {3, 1}}); err == nil || !strings.Contains(err.Error(), "(3, 1)") {
		t.Fatalf("an entry outside the matrix: err = %v, want one naming (3, 1)", err)
	}
	bad := []struct {
		p    *Pattern
		want string
	}{
		{nil, "nil"},
		{&Pattern{Rows: 2, Cols: 2, RowPtr: []int{0, 1}, ColIdx: []int{0}}, "len(RowPtr) = 2"},
		{&Pattern{Rows: 2, Cols: 2, RowPtr: []int{0, 1, 3}, ColIdx: []int{0, 1}}, "to len(ColIdx) = 2"},
		{&Pattern{Rows: 2, Cols: 2, RowPtr: []int{0, 2, 2}, ColIdx: []int{1, 0}}, "row 0 has columns 1 then 0"},
		{&Pattern{Rows: 2, Cols: 2, RowPtr: []int{0, 1, 2}, ColIdx: []int{0, 2}}, "row 1 has column 2"},
	}
	for _, c := range bad {
		err := c.p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", c.p, err, c.want)
		}
	}
}
