package cluster

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"

	"github.com/flatkit/flatkit/ode"
)

// maxErrBytes is the most bytes one failed trajectory adds to a result.
const maxErrBytes = minErrLen + MaxErrorText

// resultFixed bounds the bytes of a result besides its arrays and errors.
const resultFixed = 256 + MaxNameLen

// solveBound is the most bytes shard sh's solve result can have: its
// outputs and sums, whose sizes the request fixes, and at most one error
// of MaxErrorText bytes of text per trajectory.
func solveBound[T ode.Float](s *Spec[T], q *request, sh ode.Shard) int {
	n := sh.Hi - sh.Lo
	b := resultFixed + 8*s.Ensemble.ReduceSize + n*maxErrBytes
	if !s.Ensemble.DropOutputs {
		b += n * s.outputSize() * int(q.Prec)
	}
	return b
}

// gradBound is solveBound for a gradient shard: dL/dθ, the per-position
// dL/du0 if asked, and the errors.
func gradBound[T ode.Float](s *Spec[T], q *request, sh ode.Shard) int {
	n := sh.Hi - sh.Lo
	b := resultFixed + 8*len(s.Ensemble.Base.P) + n*maxErrBytes
	if q.PerU0 {
		b += n * len(s.Ensemble.Base.U0) * int(q.Prec)
	}
	return b
}

// fetchResult reads the result that ref (a resOffloaded message, already
// checked against its shard) names, and removes its object. The object is
// refused unread if ref claims more than bound bytes or the store holds
// another size; then openStored checks it.
func (c *Coordinator) fetchResult(ctx context.Context, q *request, ref *resultMsg, bound int) (*resultMsg, error) {
	name := c.cfg.resultObject(q.ID, ref.Blob)
	defer c.st.remove(ctx, name)
	if ref.BlobSize > bound {
		return nil, fmt.Errorf("a stored result of %d bytes, want ≤ %d for shard %d", ref.BlobSize, bound, ref.Index)
	}
	data, err := c.st.getObject(ctx, name, ref.BlobSize, true)
	if err != nil {
		return nil, fmt.Errorf("stored result of shard %d: %w", ref.Index, err)
	}
	c.stats.getBytes.Add(int64(len(data)))
	return openStored(ref, data)
}

// openStored decodes data, the stored result that ref names: its SHA-256
// must be ref's, and it must be a plain result (not a failure report nor
// another reference) of the same request, shard, attempt, delivery and
// worker as ref.
func openStored(ref *resultMsg, data []byte) (*resultMsg, error) {
	if len(data) != ref.BlobSize || sha256.Sum256(data) != ref.BlobSum {
		return nil, fmt.Errorf("stored result of shard %d: %d bytes whose SHA-256 is not the one its message names", ref.Index, len(data))
	}
	m, err := decodeResult(data)
	if err != nil {
		return nil, err
	}
	if m.Status != resOK || m.Req != ref.Req || m.Kind != ref.Kind || m.Prec != ref.Prec || m.Index != ref.Index ||
		m.Attempt != ref.Attempt || m.Lo != ref.Lo || m.Hi != ref.Hi || m.Seed != ref.Seed || m.Delivered != ref.Delivered || m.Worker != ref.Worker {
		return nil, fmt.Errorf("stored result is of shard %d attempt %d (status %d), its message of shard %d attempt %d: %w", m.Index, m.Attempt, m.Status, ref.Index, ref.Attempt, ErrMalformed)
	}
	return m, nil
}

// solvePart checks a solve result against its shard and converts it: the
// outputs' shape, the accumulator's, the failures (increasing indices in the
// shard) and the finiteness flags (NaN outputs exactly for failed
// trajectories, as in-process; finite final states for the others).
func solvePart[T ode.Float](s *Spec[T], k int, sh ode.Shard, m *resultMsg) (*ode.ShardResult[T], error) {
	ens := &s.Ensemble
	n := sh.Hi - sh.Lo
	want := n * k
	if ens.DropOutputs {
		want = 0
	}
	switch {
	case m.NU != want:
		return nil, fmt.Errorf("%d outputs, want %d", m.NU, want)
	case len(m.Acc) != ens.ReduceSize:
		return nil, fmt.Errorf("an accumulator of %d, want %d", len(m.Acc), ens.ReduceSize)
	}
	p := &ode.ShardResult[T]{Shard: sh, Stats: statsOf(m.Stats)}
	if !ens.DropOutputs {
		p.U = rawToFloats[T](m.U, m.NU)
	}
	if ens.ReduceSize > 0 {
		p.Acc = m.Acc
	}
	next := sh.Lo
	fe := 0
	for i := sh.Lo; i < sh.Hi; i++ {
		failed := fe < len(m.Errors) && m.Errors[fe].Index == i
		if fe < len(m.Errors) && (m.Errors[fe].Index < next || m.Errors[fe].Index >= sh.Hi) {
			return nil, fmt.Errorf("failure of trajectory %d out of order or outside [%d, %d)", m.Errors[fe].Index, sh.Lo, sh.Hi)
		}
		if failed {
			fe++
			next = i + 1
		}
		if p.U == nil {
			continue
		}
		slot := p.U[(i-sh.Lo)*k : (i-sh.Lo+1)*k]
		for _, v := range slot {
			nan := math.IsNaN(float64(v))
			switch {
			case failed && !nan:
				return nil, fmt.Errorf("trajectory %d failed but its output is not NaN", i)
			case !failed && ens.Output == nil && (nan || math.IsInf(float64(v), 0)):
				return nil, fmt.Errorf("trajectory %d succeeded but its final state is not finite", i)
			}
		}
	}
	if fe != len(m.Errors) {
		return nil, fmt.Errorf("failure of trajectory %d out of order or outside [%d, %d)", m.Errors[fe].Index, sh.Lo, sh.Hi)
	}
	for _, e := range m.Errors {
		p.Errors = append(p.Errors, fromWireErr(e))
	}
	return p, nil
}

// gradPart checks a gradient result against its shard and converts it: the
// sizes, Count + failures = positions, the failures' indices in position
// order, NaN dL/du0 for failed positions.
func gradPart[T ode.Float](s *Spec[T], q *request, sh ode.Shard, m *resultMsg) (*ode.GradientShardResult[T], error) {
	ens := &s.Ensemble
	n, dim := sh.Hi-sh.Lo, len(ens.Base.U0)
	wantU0 := 0
	if q.PerU0 {
		wantU0 = n * dim
	}
	switch {
	case len(m.P) != len(ens.Base.P):
		return nil, fmt.Errorf("%d gradient values, want %d", len(m.P), len(ens.Base.P))
	case m.NU0 != wantU0:
		return nil, fmt.Errorf("%d dL/du0 values, want %d", m.NU0, wantU0)
	case m.Count+len(m.Errors) != n:
		return nil, fmt.Errorf("count %d and %d failures in a shard of %d, want count + failures = %d", m.Count, len(m.Errors), n, n)
	case math.IsNaN(m.Value) || m.Count == 0 && m.Value != 0:
		return nil, fmt.Errorf("value %g with count %d, want a number, 0 if the count is 0", m.Value, m.Count)
	}
	p := &ode.GradientShardResult[T]{Shard: sh, Value: m.Value, Count: m.Count, P: m.P, Stats: statsOf(m.Stats)}
	if q.PerU0 {
		p.U0 = rawToFloats[T](m.U0, m.NU0)
	}
	fe := 0
	for pos := sh.Lo; pos < sh.Hi; pos++ {
		i := pos
		if q.HasIndices {
			i = q.Indices[pos]
		}
		failed := fe < len(m.Errors) && m.Errors[fe].Index == i
		if failed {
			fe++
		}
		if p.U0 == nil {
			continue
		}
		for _, v := range p.U0[(pos-sh.Lo)*dim : (pos-sh.Lo+1)*dim] {
			if failed && !math.IsNaN(float64(v)) {
				return nil, fmt.Errorf("position %d (trajectory %d) failed but its dL/du0 is not NaN", pos, i)
			}
		}
	}
	if fe != len(m.Errors) {
		return nil, fmt.Errorf("failure of trajectory %d not in the shard's positions, or out of order", m.Errors[fe].Index)
	}
	for _, e := range m.Errors {
		p.Errors = append(p.Errors, fromWireErr(e))
	}
	return p, nil
}
