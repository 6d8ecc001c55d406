package proptest

import (
	"hash/fnv"
	"slices"
	"sync"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/model"
)

// Kinks records the decisions that the non-smooth layers of a Stack take
// on each forward pass: which inputs of a Relu, LeakyRelu or Elu are
// positive, and which inputs of a MaxPool win. A finite difference is
// valid only if every pass it makes takes the same decisions as the pass
// at the point itself. Crossed tells whether some pass since Reset did
// not. Then a derivative check that failed is inconclusive, not wrong. A
// Kinks is safe for concurrent use.
type Kinks struct {
	mu      sync.Mutex
	first   []uint64 // per watched layer: the decisions of its first pass
	seen    []bool
	crossed bool
}

// Reset forgets the decisions recorded so far.
func (k *Kinks) Reset() {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	clear(k.seen)
	k.crossed = false
}

// Crossed reports whether some layer took different decisions in two
// passes since Reset. It is false for a nil Kinks.
func (k *Kinks) Crossed() bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.crossed
}

func (k *Kinks) watch() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.first = append(k.first, 0)
	k.seen = append(k.seen, false)
	return len(k.first) - 1
}

func (k *Kinks) record(id int, h uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case !k.seen[id]:
		k.first[id], k.seen[id] = h, true
	case k.first[id] != h:
		k.crossed = true
	}
}

// positiveHash hashes which elements of x are positive.
func positiveHash(x []float32) uint64 {
	h := fnv.New64a()
	var b byte
	for i, v := range x {
		if v > 0 {
			b |= 1 << (i % 8)
		}
		if i%8 == 7 || i == len(x)-1 {
			h.Write([]byte{b})
			b = 0
		}
	}
	return h.Sum64()
}

// winnersHash hashes which input won each window of a max-pool. For each
// plane and output it takes the first position of the plane of x that
// holds the output's value. That is the winner itself when the plane has
// no ties.
func winnersHash(x, y []float32, planes int) uint64 {
	h := fnv.New64a()
	if planes == 0 || len(x)%planes != 0 || len(y)%planes != 0 {
		return 0
	}
	nx, ny := len(x)/planes, len(y)/planes
	var buf [2]byte
	for p := range planes {
		xs := x[p*nx : (p+1)*nx]
		for _, v := range y[p*ny : (p+1)*ny] {
			i := slices.Index(xs, v)
			buf[0], buf[1] = byte(i), byte(i>>8)
			h.Write(buf[:])
		}
	}
	return h.Sum64()
}

// watchedFunc is an activation that reports which of its inputs are
// positive to k.
func watchedFunc(k *Kinks, name string, f func(ad.Var) ad.Var) model.Layer {
	id := k.watch()
	return model.Func(name, func(x ad.Var) ad.Var {
		if d := x.Data(); d != nil {
			k.record(id, positiveHash(d))
		}
		return f(x)
	})
}

// watchedPool wraps a max-pool layer so that it reports its winners to k.
type watchedPool struct {
	model.Layer
	k  *Kinks
	id int
}

// Apply applies the wrapped layer and records which inputs won.
func (w *watchedPool) Apply(c *model.Ctx, p, x ad.Var) ad.Var {
	y := w.Layer.Apply(c, p, x)
	if s := x.Shape(); len(s) >= 2 && x.Data() != nil && y.Data() != nil {
		w.k.record(w.id, winnersHash(x.Data(), y.Data(), s[0]*s[1]))
	}
	return y
}
