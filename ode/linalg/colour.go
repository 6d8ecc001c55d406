package linalg

import "slices"

// Colour partitions the columns of p into groups such that no two columns
// of a group have an entry in the same row. Column j is in group
// colours[j], and k is the number of groups. Adding the unit vectors of a
// group's columns gives one seed vector; the product J·seed then holds
// J's entries of those columns without overlap, so k products give all of
// J (the method of Curtis, Powell and Reid).
//
// The colouring is greedy over the columns in the order of decreasing
// degree in the column intersection graph (largest first), each taking
// the smallest group its neighbours leave free. The number of groups is at
// least the largest number of entries in a row, and for a band matrix it
// is exactly lower + upper + 1.
func Colour(p *Pattern) (colours []int, k int) {
	n := p.Cols
	colours = make([]int, n)
	if n == 0 {
		return colours, 0
	}
	// The rows of each column: the transposed pattern.
	t, _ := p.Transpose()
	// The degree of column j: the number of other columns sharing a row,
	// counted with repeats, an upper bound that is cheap and orders well.
	deg := make([]int, n)
	for j := 0; j < n; j++ {
		for _, i := range t.Row(j) {
			deg[j] += p.RowPtr[i+1] - p.RowPtr[i] - 1
		}
	}
	order := make([]int, n)
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int { return deg[b] - deg[a] })
	for j := range colours {
		colours[j] = -1
	}
	// mark[c] == j+1 when group c is taken by a neighbour of column j.
	mark := make([]int, 0, 16)
	for _, j := range order {
		for _, i := range t.Row(j) {
			for _, l := range p.Row(i) {
				if c := colours[l]; c >= 0 {
					mark[c] = j + 1
				}
			}
		}
		c := 0
		for c < len(mark) && mark[c] == j+1 {
			c++
		}
		if c == len(mark) {
			mark = append(mark, 0)
			k++
		}
		colours[j] = c
	}
	return colours, k
}
