package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/flatkit/flatkit/ode"
)

// prepare builds the request's Spec here, checks its ensemble, options and
// Indices, and makes the request descriptor.
func prepare[T ode.Float](ctx context.Context, c *Coordinator, req Request, k kind) (*Spec[T], *request, error) {
	if ctx == nil {
		return nil, nil, errors.New("cluster: nil context")
	}
	if c == nil {
		return nil, nil, errors.New("cluster: nil Coordinator")
	}
	switch {
	case !validName(req.Name):
		return nil, nil, fmt.Errorf("cluster: Request.Name %q: want 1 to %d letters, digits, '-' or '_'", req.Name, MaxNameLen)
	case len(req.Args) > MaxArgs:
		return nil, nil, fmt.Errorf("cluster: Request.Args has %d bytes, want ≤ %d", len(req.Args), MaxArgs)
	case len(req.Theta) > MaxTheta:
		return nil, nil, fmt.Errorf("cluster: Request.Theta has %d values, want ≤ %d", len(req.Theta), MaxTheta)
	case len(req.Indices) > MaxIndices:
		return nil, nil, fmt.Errorf("cluster: Request.Indices has %d positions, want ≤ %d", len(req.Indices), MaxIndices)
	case k == kindSolve && (req.Indices != nil || req.PerTrajectoryU0):
		return nil, nil, errors.New("cluster: Solve: Indices and PerTrajectoryU0 are for Gradient only")
	}
	b, err := lookupTyped[T](req.Name)
	if err != nil {
		return nil, nil, err
	}
	spec, err := buildSpec(b, req.Args, slices.Clone(req.Theta))
	if err != nil {
		return nil, nil, err
	}
	q := &request{Kind: k, Prec: precisionOf[T](), Name: req.Name, Args: req.Args,
		ThetaHash: thetaHash(req.Theta), ThetaLen: len(req.Theta), PerU0: req.PerTrajectoryU0}
	if req.RelTol != 0 || req.AbsTol != 0 {
		q.HasTol, q.RelTol, q.AbsTol = true, req.RelTol, req.AbsTol
	}
	if req.Indices != nil {
		q.HasIndices, q.Indices = true, slices.Clone(req.Indices)
		for p, i := range q.Indices {
			if i < 0 || i > MaxTrajectories {
				return nil, nil, fmt.Errorf("cluster: Request.Indices[%d] = %d, want 0 ≤ i < N", p, i)
			}
		}
	}
	if spec.Ensemble.N > MaxTrajectories {
		return nil, nil, fmt.Errorf("cluster: Ensemble.N = %d, want ≤ %d", spec.Ensemble.N, MaxTrajectories)
	}
	// Check everything the shards will check, on an empty shard.
	empty := ode.Shard{N: spec.Ensemble.N, Seed: spec.Ensemble.Seed}
	switch k {
	case kindSolve:
		_, err = spec.Ensemble.SolveShard(ctx, spec.Method, empty, ode.OptionsFor[ode.SolveOption](spec.options(q))...)
	case kindGradient:
		if spec.LossFor == nil {
			return nil, nil, fmt.Errorf("cluster: %q serves solves only (its Spec has no LossFor)", req.Name)
		}
		empty.N = spec.positions(q)
		_, err = spec.Ensemble.GradientShard(ctx, spec.Method, spec.LossFor, spec.Sensitivity, empty, spec.gradientOptions(q)...)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: %q: %w", req.Name, err)
	}
	shards := spec.shardList(q)
	q.Shards = len(shards)
	// Each array of a shard's result must be one a result may hold (a
	// result larger than the server's max payload goes through the object
	// store, but its decoder refuses arrays beyond MaxValues).
	if len(shards) > 0 {
		n := shards[0].Hi - shards[0].Lo // the first shard is the largest
		check := func(what string, v int) error {
			if v > MaxValues {
				return fmt.Errorf("cluster: %q: a shard's result would hold %d %s, more than MaxValues = %d: use a smaller ShardSize", req.Name, v, what, MaxValues)
			}
			return nil
		}
		switch k {
		case kindSolve:
			if !spec.Ensemble.DropOutputs {
				err = check("outputs", n*spec.outputSize())
			}
			err = cmp.Or(err, check("sums", spec.Ensemble.ReduceSize))
		case kindGradient:
			err = check("gradient values", len(spec.Ensemble.Base.P))
			if q.PerU0 {
				err = cmp.Or(err, check("dL/du0 values", n*len(spec.Ensemble.Base.U0)))
			}
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return spec, q, nil
}
