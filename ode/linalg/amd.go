package linalg

import (
	"fmt"
	"math"
	"slices"
)

// AMD returns a fill-reducing symmetric ordering of the n×n pattern p:
// perm[k] is the row and column of p that is eliminated k-th. The
// ordering is an approximate minimum degree ordering of the pattern of
// A + Aᵀ (the diagonal ignored), the method of Amestoy, Davis and Duff:
// a quotient graph of variables and elements, the approximate external
// degree bound, supervariables found by hashing and merged, and
// aggressive absorption of elements covered by the new one.
//
// Rows denser than max(16, 10√n) are left out of the graph and ordered
// last, as AMD does, so that one dense row does not make every degree
// large. A pattern that is not square is an error.
func AMD(p *Pattern) ([]int, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Rows != p.Cols {
		return nil, fmt.Errorf("linalg: AMD: pattern of %d×%d, want a square one", p.Rows, p.Cols)
	}
	n := p.Rows
	perm := make([]int, 0, n)
	if n == 0 {
		return perm, nil
	}
	adj := symmetricAdjacency(p)
	dense := max(16, int(10*math.Sqrt(float64(n))))
	var denseRows []int
	isDense := make([]bool, n)
	for i := range adj {
		if len(adj[i]) > dense && n > 16 {
			isDense[i] = true
			denseRows = append(denseRows, i)
		}
	}
	if len(denseRows) > 0 {
		for i := range adj {
			adj[i] = slices.DeleteFunc(adj[i], func(j int32) bool { return isDense[j] })
		}
	}
	g := newQuotientGraph(n, adj, isDense)
	perm = g.order(perm)
	return append(perm, denseRows...), nil
}

// symmetricAdjacency returns the neighbours of each vertex in the graph
// of A + Aᵀ without self loops, each list ascending.
func symmetricAdjacency(p *Pattern) [][]int32 {
	n := p.Rows
	t, _ := p.Transpose()
	adj := make([][]int32, n)
	for i := 0; i < n; i++ {
		a, b := p.Row(i), t.Row(i)
		l := make([]int32, 0, len(a)+len(b))
		// Merge the two ascending lists, dropping repeats and i.
		for len(a) > 0 || len(b) > 0 {
			var j int
			switch {
			case len(b) == 0 || (len(a) > 0 && a[0] < b[0]):
				j, a = a[0], a[1:]
			case len(a) == 0 || b[0] < a[0]:
				j, b = b[0], b[1:]
			default:
				j, a, b = a[0], a[1:], b[1:]
			}
			if j != i {
				l = append(l, int32(j))
			}
		}
		adj[i] = l
	}
	return adj
}

// The states of a node of the quotient graph.
const (
	amdVariable uint8 = iota // a (super)variable not yet eliminated
	amdElement               // an eliminated variable, standing for its clique
	amdDead                  // an absorbed element or a variable merged into another
	amdDense                 // a dense row, ordered last
)

// quotientGraph is the state of the minimum degree elimination. A
// variable i has the elements elems[i] and the variables vars[i] as
// neighbours; an element e has the variables le[e]. Entries of these
// lists that died since are skipped where they are read and pruned where
// the lists are rewritten.
type quotientGraph struct {
	n     int
	state []uint8
	nv    []int // weight of a supervariable: its number of variables
	elems [][]int32
	vars  [][]int32
	le    [][]int32
	edeg  []int // weight of an element's variables
	deg   []int // approximate external degree of a variable

	// Degree lists: doubly linked lists of variables by degree.
	head, next, prev []int32
	mindeg           int

	// Members of a supervariable, a linked list from its representative.
	mnext, mtail []int32

	mark  []int // mark[i] == stamp: i is in the current element
	stamp int
	w     []int // w[e] = |Le \ Lp| when wflag[e] == wstamp
	wflag []int
	hash  []int
	rest  []int // external degree outside the new element
}

func newQuotientGraph(n int, adj [][]int32, isDense []bool) *quotientGraph {
	g := &quotientGraph{
		n: n, state: make([]uint8, n), nv: make([]int, n),
		elems: make([][]int32, n), vars: adj, le: make([][]int32, n),
		edeg: make([]int, n), deg: make([]int, n),
		head: make([]int32, n), next: make([]int32, n), prev: make([]int32, n),
		mnext: make([]int32, n), mtail: make([]int32, n),
		mark: make([]int, n), w: make([]int, n), wflag: make([]int, n),
		hash: make([]int, n), rest: make([]int, n),
	}
	for i := range g.head {
		g.head[i] = -1
	}
	g.mindeg = n
	for i := 0; i < n; i++ {
		g.mnext[i], g.mtail[i] = -1, int32(i)
		if isDense[i] {
			g.state[i] = amdDense
			continue
		}
		g.nv[i] = 1
		g.insert(i, len(adj[i]))
	}
	return g
}

func (g *quotientGraph) insert(i, d int) {
	g.deg[i] = d
	h := g.head[d]
	g.next[i], g.prev[i] = h, -1
	if h >= 0 {
		g.prev[h] = int32(i)
	}
	g.head[d] = int32(i)
	g.mindeg = min(g.mindeg, d)
}

func (g *quotientGraph) remove(i int) {
	nx, pv := g.next[i], g.prev[i]
	if nx >= 0 {
		g.prev[nx] = pv
	}
	if pv >= 0 {
		g.next[pv] = nx
	} else {
		g.head[g.deg[i]] = nx
	}
}

// order eliminates every variable, appending them to perm in order.
func (g *quotientGraph) order(perm []int) []int {
	live := 0
	for i := 0; i < g.n; i++ {
		live += g.nv[i]
	}
	nel := 0
	var lp, cand []int32
	for nel < live {
		for g.head[g.mindeg] < 0 {
			g.mindeg++
		}
		p := int(g.head[g.mindeg])
		g.remove(p)
		for m := int32(p); m >= 0; m = g.mnext[m] {
			perm = append(perm, int(m))
		}
		nel += g.nv[p]
		lp = g.eliminate(p, lp[:0])
		cand = g.update(p, lp, cand[:0])
		g.merge(cand)
		nrem := live - nel
		for _, v := range lp {
			if g.state[v] != amdVariable {
				continue
			}
			d := g.rest[v] + g.edeg[p] - g.nv[v]
			g.insert(int(v), min(d, nrem-g.nv[v]))
		}
	}
	return perm
}

// eliminate turns variable p into an element whose variables Lp (returned
// in lp) are the union of its elements' variables and its own, and
// absorbs those elements.
func (g *quotientGraph) eliminate(p int, lp []int32) []int32 {
	g.stamp++
	g.mark[p] = g.stamp
	add := func(v int32) {
		if g.state[v] == amdVariable && g.mark[v] != g.stamp {
			g.mark[v] = g.stamp
			lp = append(lp, v)
		}
	}
	for _, e := range g.elems[p] {
		if g.state[e] != amdElement {
			continue
		}
		for _, v := range g.le[e] {
			add(v)
		}
		g.state[e], g.le[e] = amdDead, nil
	}
	for _, v := range g.vars[p] {
		add(v)
	}
	g.elems[p], g.vars[p] = nil, nil
	g.state[p] = amdElement
	g.le[p] = slices.Clone(lp)
	d := 0
	for _, v := range lp {
		d += g.nv[v]
		g.remove(int(v))
	}
	g.edeg[p] = d
	return lp
}

// update prunes the lists of the variables of the new element p, computes
// the part of their approximate degrees outside Lp, and returns them
// sorted by a hash of their lists, the candidates for supervariables.
func (g *quotientGraph) update(p int, lp, cand []int32) []int32 {
	// w[e] = |Le \ Lp| for every element e adjacent to Lp.
	for _, v := range lp {
		for _, e := range g.elems[v] {
			if g.state[e] != amdElement {
				continue
			}
			if g.wflag[e] != g.stamp {
				g.wflag[e], g.w[e] = g.stamp, g.edeg[e]
			}
			g.w[e] -= g.nv[v]
		}
	}
	for _, v := range lp {
		ext, h := 0, p
		es := g.elems[v][:0]
		for _, e := range g.elems[v] {
			if g.state[e] != amdElement {
				continue
			}
			if g.w[e] == 0 {
				// Le ⊆ Lp: aggressive absorption into p.
				g.state[e], g.le[e] = amdDead, nil
				continue
			}
			ext += g.w[e]
			h += int(e)
			es = append(es, e)
		}
		g.elems[v] = append(es, int32(p))
		vs := g.vars[v][:0]
		for _, u := range g.vars[v] {
			if g.state[u] != amdVariable || g.mark[u] == g.stamp {
				continue
			}
			ext += g.nv[u]
			h += int(u)
			vs = append(vs, u)
		}
		g.vars[v] = vs
		g.rest[v], g.hash[v] = ext, h%g.n
		cand = append(cand, v)
	}
	slices.SortFunc(cand, func(a, b int32) int { return g.hash[a] - g.hash[b] })
	return cand
}

// merge finds the variables of cand (sorted by hash) whose lists are
// equal, indistinguishable in the rest of the elimination, and merges
// each group into one supervariable.
func (g *quotientGraph) merge(cand []int32) {
	for s := 0; s < len(cand); {
		e := s + 1
		for e < len(cand) && g.hash[cand[e]] == g.hash[cand[s]] {
			e++
		}
		for a := s; a < e-1; a++ {
			i := cand[a]
			if g.state[i] != amdVariable {
				continue
			}
			g.stamp++
			for _, x := range g.elems[i] {
				g.mark[x] = g.stamp
			}
			for _, x := range g.vars[i] {
				g.mark[x] = g.stamp
			}
			for b := a + 1; b < e; b++ {
				j := cand[b]
				if g.state[j] != amdVariable || !g.sameLists(j, i) {
					continue
				}
				g.nv[i] += g.nv[j]
				g.nv[j] = 0
				g.state[j] = amdDead
				g.elems[j], g.vars[j] = nil, nil
				g.mnext[g.mtail[i]] = j
				g.mtail[i] = g.mtail[j]
			}
		}
		s = e
	}
}

// sameLists reports whether j's lists are as long as i's and every entry
// is marked with the current stamp (i's entries).
func (g *quotientGraph) sameLists(j, i int32) bool {
	if len(g.elems[j]) != len(g.elems[i]) || len(g.vars[j]) != len(g.vars[i]) {
		return false
	}
	for _, x := range g.elems[j] {
		if g.mark[x] != g.stamp {
			return false
		}
	}
	for _, x := range g.vars[j] {
		if g.mark[x] != g.stamp {
			return false
		}
	}
	return true
}
