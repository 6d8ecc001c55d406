package optimisers

import (
	"math"
	"reflect"

	"github.com/flatkit/flatkit/flat"
)

// groupRT is an optimiser's working data for one group of its plan.
type groupRT struct {
	eff    [][]impl    // per variant: the rules to call (live copies where scheduled)
	live   []liveField // scheduled hyperparameters, set before each update
	checks []liveRule  // live copies to validate after setting them
	rr     []rangeRun  // the trained members
	cum    []int       // cum[j] = floats of rr[:j]
}

// liveField is one scheduled float64 field of a live copy of a rule.
type liveField struct {
	field reflect.Value
	s     Schedule
}

// liveRule is a live copy of a rule whose fields schedules set.
type liveRule struct {
	variant, prim int
	names         string
}

// rangeRun is one trained member during an update.
type rangeRun struct {
	lo, hi, c0, variant int
	end                 int  // prims that run: all, or up to a gate that holds the update
	pipe                int  // entries of the group's pipe that run
	full                bool // end is the whole chain: θ changes
}

// chunkScratch is what one chunk of a stage needs for itself.
type chunkScratch struct {
	dx    []float32
	views [][]float32
}

// stageArgs describes the stage of a chain being run, for the chunk calls.
type stageArgs struct {
	gr       *group
	rt       *groupRT
	θ, g     []float32
	src      []float32 // where the update is: g, or o.whole after a stage
	s, e     int       // the stage is gr.pipe[s:e]
	last     bool      // the last stage: θ moves
	mat      bool      // the update is materialised in o.whole
	total    float64   // the global rule's reduction, if pipe[s] is global
	counts   []int
	slots    [][]float32
	wholeBuf []float32
}

func (p *plan) lengths(op string, θ, g []float32) error {
	n := p.lay.Len()
	if len(θ) != n {
		return errorf("%s: θ has %d floats, want %d (the layout's Len)", op, len(θ), n)
	}
	if len(g) != n {
		return errorf("%s: the gradient has %d floats, want %d (the layout's Len)", op, len(g), n)
	}
	return nil
}

func (o *Optimiser) update(θ, g []float32) error {
	p := o.st.plan
	if err := o.schedule(); err != nil {
		return err
	}
	for gi := range p.groups {
		if p.groups[gi].skip && !finite(g, o.rt[gi].rr) {
			o.st.Skipped++
			return nil
		}
	}
	changed, trained := false, false
	for gi := range p.groups {
		if len(o.rt[gi].rr) == 0 {
			continue
		}
		trained = true
		if o.run(gi, θ, g) {
			changed = true
		}
	}
	if changed || !trained {
		o.st.Step++
	}
	return nil
}

// schedule sets every scheduled hyperparameter to its value at the update
// about to be made, step Step+1, and checks the rules it changed.
func (o *Optimiser) schedule() error {
	step := o.st.Step + 1
	for gi := range o.rt {
		rt := &o.rt[gi]
		if len(rt.live) == 0 {
			continue
		}
		for k := range rt.live {
			lf := &rt.live[k]
			lf.field.SetFloat(lf.s.At(step))
		}
		gr := &o.st.plan.groups[gi]
		for _, c := range rt.checks {
			m := &rt.eff[c.variant][c.prim]
			if m.val != nil {
				if err := m.val.Validate(); err != nil {
					return errorf("the schedule of %s at step %d: %w", c.names, step, err)
				}
			}
			if n := m.rule.Slots(); n != gr.prims[c.prim].slots {
				return errorf("the schedule of %s at step %d changes %T's state from %d slots to %d; a schedule cannot add or remove state",
					c.names, step, gr.variants[c.variant][c.prim].rule, gr.prims[c.prim].slots, n)
			}
		}
	}
	return nil
}

// finite reports whether g holds no NaN or Inf in the ranges.
func finite(g []float32, rr []rangeRun) bool {
	for _, r := range rr {
		for _, x := range g[r.lo:r.hi] {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return false
			}
		}
	}
	return true
}

// views returns the state vectors of pr over θ[a:b] in buf.
func views(buf, slots [][]float32, pr *prim, a, b int) [][]float32 {
	v := buf[:pr.slots]
	for k := range v {
		v[k] = slots[pr.slot0+k][a:b]
	}
	return v
}

// run applies one group's chain to its trained members and reports whether
// any of them reached the end of the chain (θ changed) rather than being
// held back by a gate.
//
// Each member has its own counts, so a gate may hold one member back and let
// another through, and a rule meets its first update of a member (count 0:
// Init) whenever that member starts training. The chain runs in stages split
// at global rules. A stage is one pass over the members (in chunks, perhaps
// on several goroutines) that applies each of its rules to the chunk's dx in
// turn, so a chunk stays in cache while the whole chain works on it; a global
// rule at the start of a stage first reduces over every member that reaches
// it, in buffer order. The last stage also moves θ: through the last rule's
// Fuse if it has one, else by θ -= dx; observers then see the new θ.
func (o *Optimiser) run(gi int, θ, g []float32) bool {
	gr := &o.st.plan.groups[gi]
	rt := &o.rt[gi]
	np := len(gr.prims)
	anyFull := false
	for j := range rt.rr {
		r := &rt.rr[j]
		counts := o.st.counts[r.c0 : r.c0+np]
		eff := rt.eff[r.variant]
		r.end = np
		for _, i := range gr.gates {
			if !eff[i].gate.Pass(counts[i] + 1) {
				r.end = i + 1
				break
			}
		}
		r.full = r.end == np
		anyFull = anyFull || r.full
		r.pipe = len(gr.pipe)
		if !r.full {
			r.pipe = 0
			for _, i := range gr.pipe {
				if i < r.end {
					r.pipe++
				}
			}
		}
		// Rules meeting their first update of the member initialise its
		// state from θ.
		for i := range r.end {
			if counts[i] == 0 && (!gr.prims[i].obs || r.full) {
				eff[i].rule.Init(views(o.vinit, o.st.Slots, &gr.prims[i], r.lo, r.hi), θ[r.lo:r.hi])
			}
		}
	}

	src, mat := g, false
	for s := 0; ; {
		e := s
		var total float64
		if e < len(gr.pipe) && gr.prims[gr.pipe[e]].global {
			i := gr.pipe[e]
			for j := range rt.rr {
				if r := &rt.rr[j]; r.pipe > s {
					total = rt.eff[r.variant][i].global.Reduce(total, θ[r.lo:r.hi], src[r.lo:r.hi])
				}
			}
			e++
		}
		for e < len(gr.pipe) && !gr.prims[gr.pipe[e]].global {
			e++
		}
		last := e == len(gr.pipe)
		o.stage = stageArgs{gr: gr, rt: rt, θ: θ, g: g, src: src, s: s, e: e, last: last, mat: mat, total: total,
			counts: o.st.counts, slots: o.st.Slots, wholeBuf: o.whole}
		o.runStage()
		if s < e {
			src, mat = o.whole, true // only read again when gr.whole
		}
		if last {
			break
		}
		s = e
	}
	o.stage = stageArgs{}

	for j := range rt.rr {
		r := &rt.rr[j]
		counts := o.st.counts[r.c0 : r.c0+np]
		for i := range r.end {
			if !gr.prims[i].obs || r.full {
				counts[i]++
			}
		}
	}
	return anyFull
}

// minChunk is the shortest chunk a stage hands to another goroutine.
var minChunk = flat.DefaultMinChunk

// runStage runs o.stage over the group's members: on the calling goroutine
// with one worker, else split by flat.ParallelFor over the members' floats
// (or over whole members, for a Leafwise chain).
func (o *Optimiser) runStage() {
	rt := o.stage.rt
	if o.stage.gr.lwise {
		n := len(rt.rr)
		if o.workers <= 1 || n < 2 {
			o.leafChunks(0, n)
			return
		}
		flat.ParallelFor(n, max(16, (n+o.workers-1)/o.workers), o.leafFn)
		return
	}
	n := rt.cum[len(rt.rr)]
	if o.workers <= 1 || n < 2*minChunk {
		o.chunks(0, n)
		return
	}
	flat.ParallelFor(n, max(minChunk, (n+o.workers-1)/o.workers), o.chunkFn)
}

// chunks runs the stage over floats [lo, hi) of the members laid end to end.
func (o *Optimiser) chunks(lo, hi int) {
	rt := o.stage.rt
	// The first member that ends after lo.
	j, k := 0, len(rt.rr)
	for j < k {
		h := int(uint(j+k) >> 1)
		if rt.cum[h+1] <= lo {
			j = h + 1
		} else {
			k = h
		}
	}
	cs := <-o.free
	for ; j < len(rt.rr) && rt.cum[j] < hi; j++ {
		r := &rt.rr[j]
		a := r.lo + max(lo-rt.cum[j], 0)
		b := r.lo + min(hi, rt.cum[j+1]) - rt.cum[j]
		o.piece(cs, r, a, b)
	}
	o.free <- cs
}

// leafChunks runs the stage over members [lo, hi), each whole.
func (o *Optimiser) leafChunks(lo, hi int) {
	rt := o.stage.rt
	cs := <-o.free
	for j := lo; j < hi; j++ {
		r := &rt.rr[j]
		o.piece(cs, r, r.lo, r.hi)
	}
	o.free <- cs
}

// piece runs the stage on θ[a:b], part of member r.
func (o *Optimiser) piece(cs *chunkScratch, r *rangeRun, a, b int) {
	st := &o.stage
	gr := st.gr
	counts := st.counts[r.c0 : r.c0+len(gr.prims)]
	eff := st.rt.eff[r.variant]
	lim := min(st.e, r.pipe)
	fin := st.last && r.full
	if st.s >= lim && !fin {
		return
	}
	θr := st.θ[a:b]
	var dx []float32
	if st.s >= lim {
		dx = st.src[a:b] // nothing to apply: the update is g
	} else {
		if gr.whole {
			dx = st.wholeBuf[a:b]
		} else {
			dx = cs.dx[:b-a]
		}
		if !st.mat {
			copy(dx, st.g[a:b])
		}
		for j := st.s; j < lim; j++ {
			i := gr.pipe[j]
			v := views(cs.views, st.slots, &gr.prims[i], a, b)
			if j == st.s && gr.prims[i].global {
				eff[i].global.ApplyGlobal(v, θr, dx, counts[i]+1, st.total)
			} else {
				eff[i].rule.Apply(v, θr, dx, counts[i]+1)
			}
		}
	}
	if !fin {
		return
	}
	if i := gr.term; i >= 0 {
		eff[i].fused.Fuse(views(cs.views, st.slots, &gr.prims[i], a, b), θr, dx, counts[i]+1)
	} else {
		subtract(θr, dx)
	}
	for _, i := range gr.obs {
		eff[i].obs.Observe(views(cs.views, st.slots, &gr.prims[i], a, b), θr, counts[i]+1)
	}
}

// subtract sets θ -= dx.
func subtract(θ, dx []float32) {
	dx = dx[:len(θ)]
	for i := range θ {
		θ[i] -= dx[i]
	}
}
