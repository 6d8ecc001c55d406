package model

import (
	"math"
	"slices"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/internal/freelist"
)

// A LossOption configures a loss. The losses take their options last,
// after the prediction, the target and Huber's delta. They play the part
// of Flux's keyword agg and PyTorch's reduction=:
//
//	model.MSE(ŷ, y)                           // the mean of the terms
//	model.MSE(ŷ, y, model.SumReduction())     // their sum
//
// A reduction given twice is an error. Unlike the layers' options, a
// LossOption is a plain value rather than a function, so that a loss with
// options still allocates nothing in a training step.
type LossOption struct {
	red reduction
	set bool // a reduction was given (the zero LossOption sets nothing)
}

// reduction says how a loss combines its terms into a scalar.
type reduction int

const (
	meanReduction reduction = iota
	sumReduction
)

// MeanReduction makes a loss average its terms, as PyTorch's
// reduction="mean" without class weights does. It is the default. The
// elementwise losses average over every element: MSE, L1, Huber and the
// binary cross-entropies. The cross-entropies average over every sample
// position, N times the spatial volume.
func MeanReduction() LossOption { return LossOption{red: meanReduction, set: true} }

// SumReduction makes a loss add its terms up, as PyTorch's reduction="sum"
// and Flux's agg = sum do.
func SumReduction() LossOption { return LossOption{red: sumReduction, set: true} }

// lossReduction reads the options of the loss name and returns its
// reduction, mean by default.
func lossReduction(name string, opts []LossOption) (reduction, error) {
	red, n := meanReduction, 0
	for _, o := range opts {
		if o.set {
			red, n = o.red, n+1
		}
	}
	if n > 1 {
		return 0, errorf("%s: %d reductions given, want at most 1", name, n)
	}
	return red, nil
}

// ProbEps is the lower bound that CrossEntropy, CrossEntropyOneHot and
// BinaryCrossEntropy clamp probabilities to before taking their log.
// BinaryCrossEntropy also clamps p to at most 1 − ProbEps.
//
// Flux adds ε instead; clamping keeps the loss exactly −log p for every p ≥
// ProbEps, so it agrees with PyTorch there. Where p underflows to 0, the
// loss stays finite, at most −log ProbEps ≈ 16.1, and its gradient stays
// within 1/ProbEps. The price is a zero gradient for p < ProbEps. Use the
// logit losses, which need no clamp, when predictions can be that
// confident and wrong.
const ProbEps = 1e-7

// failOn records err on the tape of the first of vs that has one, and
// returns the failed Var. A nil err keeps the recorded one.
func failOn(err error, vs ...ad.Var) ad.Var {
	for _, v := range vs {
		if v.Tape() != nil {
			return fail(v, err)
		}
	}
	return ad.Var{}
}

// live reports whether every v is a value, neither failed nor zero. When
// one is not, an error is already recorded or the caller passed the zero
// Var.
func live(vs ...ad.Var) bool {
	for _, v := range vs {
		if v.Shape() == nil {
			return false
		}
	}
	return true
}

// pair checks the inputs of an elementwise loss: both live, equal shapes,
// a valid reduction.
func pair(name string, yhat, y ad.Var, opts []LossOption) (reduction, bool, error) {
	if !live(yhat, y) {
		if yhat.Tape() == nil && y.Tape() == nil {
			return 0, false, nil
		}
		var err error
		if (yhat.Tape() == nil) != (y.Tape() == nil) {
			err = errorf("%s: an input is the zero Var (no value)", name)
		}
		return 0, false, err
	}
	red, err := lossReduction(name, opts)
	if err != nil {
		return 0, false, err
	}
	if a, b := yhat.Shape(), y.Shape(); !slices.Equal(a, b) {
		return 0, false, errorf("%s: prediction has shape %v, target has shape %v; want equal shapes", name, a, b)
	}
	return red, true, nil
}

// reduce applies red to the elementwise terms v.
func reduce(v ad.Var, red reduction) ad.Var {
	if red == sumReduction {
		return ad.Sum(v)
	}
	return ad.Mean(v)
}

// MSE returns the mean squared error between the prediction ŷ and the
// target y, of equal shapes: the reduction of (ŷ − y)², as PyTorch's
// mse_loss.
func MSE(yhat, y ad.Var, opts ...LossOption) ad.Var {
	red, ok, err := pair("MSE", yhat, y, opts)
	if !ok {
		return failOn(err, yhat, y)
	}
	return reduce(ad.Square(ad.Sub(yhat, y)), red)
}

// L1 returns the mean absolute error between ŷ and y, of equal shapes: the
// reduction of |ŷ − y|, as PyTorch's l1_loss. Its derivative at ŷ = y is
// 0.
func L1(yhat, y ad.Var, opts ...LossOption) ad.Var {
	red, ok, err := pair("L1", yhat, y, opts)
	if !ok {
		return failOn(err, yhat, y)
	}
	return reduce(ad.Abs(ad.Sub(yhat, y)), red)
}

// Huber returns the Huber loss between ŷ and y, of equal shapes, with
// threshold delta > 0, as PyTorch's huber_loss. With d = ŷ − y, each term
// is d²/2 where |d| ≤ delta and delta·(|d| − delta/2) elsewhere. It is
// computed as q²/2 + delta·|d − q|, where q is d clamped to [−delta,
// delta]. So its second derivative is 1 inside and 0 outside.
func Huber(yhat, y ad.Var, delta float32, opts ...LossOption) ad.Var {
	red, ok, err := pair("Huber", yhat, y, opts)
	if !ok {
		return failOn(err, yhat, y)
	}
	if !(delta > 0) || math.IsInf(float64(delta), 0) {
		return failOn(errorf("Huber: delta is %v, want a finite delta > 0", delta), yhat, y)
	}
	d := ad.Sub(yhat, y)
	q := ad.Clamp(d, float64(-delta), float64(delta))
	h := ad.Add(ad.Scale(ad.Square(q), 0.5), ad.Scale(ad.Abs(ad.Sub(d, q)), float64(delta)))
	return reduce(h, red)
}

// BinaryCrossEntropy returns the binary cross-entropy of probabilities p
// against targets y in [0, 1], of equal shapes, as PyTorch's
// binary_cross_entropy. Each term is −y·log p − (1 − y)·log(1 − p), with p
// clamped to [ProbEps, 1 − ProbEps]. Prefer LogitBinaryCrossEntropy on the
// logits, which is stable.
func BinaryCrossEntropy(p, y ad.Var, opts ...LossOption) ad.Var {
	red, ok, err := pair("BinaryCrossEntropy", p, y, opts)
	if !ok {
		return failOn(err, p, y)
	}
	pc := ad.Clamp(p, ProbEps, 1-ProbEps)
	one := ad.ScalarLike(p, 1)
	// −[y log p + (1 − y) log(1 − p)] = −[y (log p − log(1 − p)) + log(1 − p)]
	lq := ad.Log(ad.Sub(one, pc))
	terms := ad.Add(ad.Mul(y, ad.Sub(ad.Log(pc), lq)), lq)
	return ad.Neg(reduce(terms, red))
}

// LogitBinaryCrossEntropy returns the binary cross-entropy of sigmoid(z)
// against targets y, of equal shapes, from the logits z. It is PyTorch's
// binary_cross_entropy_with_logits. It computes the stable form
// softplus(z) − z·y, which overflows for no z. Its derivatives are
// exactly sigmoid(z) − y.
func LogitBinaryCrossEntropy(z, y ad.Var, opts ...LossOption) ad.Var {
	red, ok, err := pair("LogitBinaryCrossEntropy", z, y, opts)
	if !ok {
		return failOn(err, z, y)
	}
	return reduce(ad.Sub(ad.Softplus(z), ad.Mul(z, y)), red)
}

// classShape checks x of shape (N, C, spatial…). It returns the number of
// samples, N times the spatial volume; C; and the spatial volume.
func classShape(name string, x ad.Var) (samples, classes, inner int, err error) {
	s := x.Shape()
	if len(s) < 2 {
		return 0, 0, 0, errorf("%s: input has shape %v, want (N, C, spatial…) with classes on axis 1", name, s)
	}
	inner = 1
	for _, d := range s[2:] {
		inner *= d
	}
	return s[0] * inner, s[1], inner, nil
}

// intScratch holds index scratch for ad.Gather, which copies its indices
// onto the tape. Reusing them keeps the loss and Embedding allocation-free
// in steady state, while layers stay safe for concurrent use. A sync.Pool
// would allocate now and then, when goroutines move between processors.
var intScratch freelist.Slices[int]

// gatherLabels returns the values of x at the labelled classes, one per
// sample: x[n, labels[n·S + s], s]. x is (N, C, spatial…). The error names
// a wrong label count or a label out of range.
func gatherLabels(name string, x ad.Var, labels []int) (ad.Var, int, error) {
	samples, classes, inner, err := classShape(name, x)
	if err != nil {
		return ad.Var{}, 0, err
	}
	if len(labels) != samples {
		s := x.Shape()
		return ad.Var{}, 0, errorf("%s: %d labels for input of shape %v, want %d (one per sample: N·prod(spatial) = %d·%d)", name, len(labels), s, samples, s[0], inner)
	}
	buf := intScratch.Get(samples)
	idx := *buf
	for i, l := range labels {
		if l < 0 || l >= classes {
			intScratch.Put(buf)
			return ad.Var{}, 0, errorf("%s: label %d at position %d is out of range, want 0 ≤ label < %d (classes)", name, l, i, classes)
		}
		n, s := i/inner, i%inner
		idx[i] = (n*classes+l)*inner + s
	}
	g := ad.Gather(x, idx, samples)
	intScratch.Put(buf)
	return g, samples, nil
}

// ceReduce turns the sum of the cross-entropy terms into the loss.
func ceReduce(total ad.Var, samples int, red reduction) ad.Var {
	if red == sumReduction {
		return total
	}
	return ad.Scale(total, float64(1/float32(samples)))
}

// labelCE is a cross-entropy of x against class indices labels. x holds
// probabilities or logits of shape (N, C, spatial…). labelCE checks the
// inputs, gathers x at the labels, and reduces total(gathered), the sum
// of the terms, over the samples.
func labelCE(name string, x ad.Var, labels []int, opts []LossOption, total func(g ad.Var) ad.Var) ad.Var {
	if !live(x) {
		return fail(x, nil)
	}
	red, err := lossReduction(name, opts)
	if err != nil {
		return fail(x, err)
	}
	g, samples, err := gatherLabels(name, x, labels)
	if err != nil {
		return fail(x, err)
	}
	return ceReduce(total(g), samples, red)
}

// oneHotCE is a cross-entropy of x against target distributions of the
// same shape. x holds probabilities or logits of shape (N, C, spatial…).
// oneHotCE checks the inputs and reduces total(), the sum of the terms,
// over the samples.
func oneHotCE(name string, x, target ad.Var, opts []LossOption, total func() ad.Var) ad.Var {
	red, ok, err := pair(name, x, target, opts)
	if !ok {
		return failOn(err, x, target)
	}
	samples, _, _, err := classShape(name, x)
	if err != nil {
		return fail(x, err)
	}
	return ceReduce(total(), samples, red)
}

// CrossEntropy returns the cross-entropy of probabilities probs against
// class indices labels. probs is (N, C, spatial…), with the classes on axis
// 1. labels holds one class per sample, N times the spatial volume, in
// row-major order over N and the spatial axes. The terms are −log
// probs[n, labels[n, s], s], reduced over the samples. The probabilities
// are clamped below at ProbEps. It has no ignore_index and no class
// weights. Prefer LogitCrossEntropy on the logits, which is stable.
func CrossEntropy(probs ad.Var, labels []int, opts ...LossOption) ad.Var {
	return labelCE("CrossEntropy", probs, labels, opts, func(g ad.Var) ad.Var {
		return ad.Neg(ad.Sum(ad.Log(ad.Clamp(g, ProbEps, float64(float32(math.Inf(1)))))))
	})
}

// CrossEntropyOneHot returns the cross-entropy of probabilities probs
// against target distributions of the same shape, (N, C, spatial…). The
// targets are one-hot or soft labels that sum to 1 over axis 1. The terms
// are −Σ_c target[n, c, s]·log probs[n, c, s], reduced over the samples.
// The probabilities are clamped below at ProbEps.
func CrossEntropyOneHot(probs, target ad.Var, opts ...LossOption) ad.Var {
	return oneHotCE("CrossEntropyOneHot", probs, target, opts, func() ad.Var {
		lp := ad.Log(ad.Clamp(probs, ProbEps, float64(float32(math.Inf(1)))))
		return ad.Neg(ad.Sum(ad.Mul(target, lp)))
	})
}

// LogitCrossEntropy returns the cross-entropy of the softmax of logits over
// axis 1 against class indices labels. It is PyTorch's cross_entropy,
// without ignore_index or weights. logits is (N, C, spatial…). labels
// holds one class per sample, in row-major order over N and the spatial
// axes. Each term is logsumexp(logits[n, :, s]) − logits[n, labels[n, s],
// s], stable for any logits. It allocates nothing in steady state.
func LogitCrossEntropy(logits ad.Var, labels []int, opts ...LossOption) ad.Var {
	return labelCE("LogitCrossEntropy", logits, labels, opts, func(g ad.Var) ad.Var {
		return ad.Sub(ad.Sum(ad.LogSumExp(logits, 1)), ad.Sum(g))
	})
}

// LogitCrossEntropyOneHot returns the cross-entropy of the softmax of
// logits over axis 1 against target distributions of the same shape, (N,
// C, spatial…). It is PyTorch's cross_entropy with probability targets.
// The targets are one-hot or soft. The terms are −Σ_c
// target·logsoftmax(logits), stable for any logits, reduced over the
// samples.
func LogitCrossEntropyOneHot(logits, target ad.Var, opts ...LossOption) ad.Var {
	return oneHotCE("LogitCrossEntropyOneHot", logits, target, opts, func() ad.Var {
		return ad.Neg(ad.Sum(ad.Mul(target, ad.LogSoftmax(logits, 1))))
	})
}
