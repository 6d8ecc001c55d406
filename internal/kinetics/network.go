package kinetics

import (
	"fmt"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
)

// Reaction is one reaction of a mass-action network: it runs at
// r = k·Π u_s over its reactants, consumes them and makes its products.
// A species that takes part twice is listed twice (2A → B is In {A, A}).
type Reaction struct {
	In  []int // the reactants: one or two species
	Out []int // the products, each species as often as its coefficient
}

// Network is a mass-action reaction network of N species whose reactions
// have one or two reactants. Its RHS is the network's right-hand side
// written with ad ops.
type Network struct {
	n, r     int
	a, b     []int // the reactants of each reaction; b is n (an appended 1) for one
	from, to []int // the net stoichiometry: entry i adds sign[i]·r[from[i]] to du[to[i]]
	// sign is ±1 per entry, in either precision (constants of the
	// recording, never written).
	sign   []float32
	sign64 []float64
	nsign  []int // the signs' shape, [len(sign)]
}

// NewNetwork returns the network of n species with the reactions rs,
// whose rate constants are p[0:len(rs)] in this order. Species out of
// range and reactions with no or more than two reactants are errors.
func NewNetwork(n int, rs []Reaction) (*Network, error) {
	if n < 1 || len(rs) == 0 {
		return nil, fmt.Errorf("kinetics: NewNetwork: %d species and %d reactions, want at least one of each", n, len(rs))
	}
	nw := &Network{n: n, r: len(rs), a: make([]int, len(rs)), b: make([]int, len(rs))}
	for k, rc := range rs {
		if len(rc.In) < 1 || len(rc.In) > 2 {
			return nil, fmt.Errorf("kinetics: NewNetwork: reaction %d has %d reactants, want 1 or 2", k, len(rc.In))
		}
		for _, s := range append(rc.In[:len(rc.In):len(rc.In)], rc.Out...) {
			if s < 0 || s >= n {
				return nil, fmt.Errorf("kinetics: NewNetwork: reaction %d names species %d, want 0 ≤ s < %d", k, s, n)
			}
		}
		nw.a[k], nw.b[k] = rc.In[0], n
		if len(rc.In) == 2 {
			nw.b[k] = rc.In[1]
		}
		// The net change of each species, so that a catalyst, in and
		// out again, adds nothing rather than r − r.
		net := make([]int, n)
		for _, s := range rc.In {
			net[s]--
		}
		for _, s := range rc.Out {
			net[s]++
		}
		for s, c := range net {
			sign := 1
			if c < 0 {
				sign, c = -1, -c
			}
			for range c {
				nw.from, nw.to = append(nw.from, k), append(nw.to, s)
				nw.sign = append(nw.sign, float32(sign))
			}
		}
	}
	nw.sign64, nw.nsign = make([]float64, len(nw.sign)), []int{len(nw.sign)}
	for i, x := range nw.sign {
		nw.sign64[i] = float64(x)
	}
	return nw, nil
}

// mustNetwork is NewNetwork for the package's own networks.
func mustNetwork(n int, rs []Reaction) *Network {
	nw, err := NewNetwork(n, rs)
	if err != nil {
		panic(err)
	}
	return nw
}

// Species returns the number of species, the length of u.
func (nw *Network) Species() int { return nw.n }

// Reactions returns the number of reactions, the number of rate
// constants read from p.
func (nw *Network) Reactions() int { return nw.r }

// RHS is the network's right-hand side written with ad ops, for
// odead.Func and its kin: u holds the N concentrations and p the rate
// constants. It computes in u's precision: rates of another precision
// (the float32 parameter buffer beside a float64 state) are converted
// first. It records the same ops at every call, whatever t, so it may be
// declared odead.Replayable:
//
//	k  = p[0:R]                           (a View, unless p is exactly R long)
//	r  = k ⊙ u[a] ⊙ [u; 1][b]             (two Gathers, two Muls, a Concat)
//	du = ScatterAdd(sign ⊙ r[from], to)   (a Gather, a Mul, a ScatterAdd)
func (nw *Network) RHS(u, p ad.Var, _ float64) ad.Var {
	k := p
	if p.Size() != nw.r {
		k = ad.View(p, 0, nw.r)
	}
	k = ad.Convert(k, u.Precision())
	ue := ad.Concat(0, u, ad.FullLike(u, 1, 1)) // the 1 is the second factor of a reaction with one reactant
	r := ad.Mul(ad.Mul(k, ad.Gather(u, nw.a, nw.r)), ad.Gather(ue, nw.b, nw.r))
	return ad.ScatterAdd(ad.Mul(ad.Gather(r, nw.from, len(nw.from)), nw.signOf(u)), nw.to, nw.n)
}

// signOf records the entries' signs as a constant of u's precision on
// u's tape.
func (nw *Network) signOf(u ad.Var) ad.Var {
	tp, sh := u.Tape(), nw.nsign
	if u.Precision() == ad.Float64 {
		return tp.Const64(flat.Tensor64{Shape: sh, Data: nw.sign64})
	}
	return tp.Const(flat.Tensor{Shape: sh, Data: nw.sign})
}
