package model_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/race"
	"github.com/flatkit/flatkit/model"
	"github.com/flatkit/flatkit/proptest"
	"pgregory.net/rapid"
)

// lossCase is one loss applied to a prediction of shape and a target
// (the same shape, or labels), with an independent float64 reference.
type lossCase struct {
	name   string
	shape  []int
	kind   int // what the prediction holds: see lossInputs
	labels []int
	loss   func(yhat, y ad.Var) ad.Var
	ref    func(yhat, y []float64, shape []int) float64
}

const (
	anyValues   = iota // predictions and targets in ±2
	probsAxis1         // predictions are softmax over axis 1, targets one-hot of labels
	probsBinary        // predictions in (0.05, 0.95), targets in [0, 1]
)

// lossInputs draws the prediction and the target of c from rng.
func lossInputs(c lossCase, rng *rand.Rand) (yhat, y []float32) {
	n := 1
	for _, d := range c.shape {
		n *= d
	}
	yhat, y = make([]float32, n), make([]float32, n)
	switch c.kind {
	case anyValues:
		for i := range yhat {
			yhat[i] = float32(4*rng.Float64() - 2)
			y[i] = float32(4*rng.Float64() - 2)
		}
	case probsBinary:
		for i := range yhat {
			yhat[i] = float32(0.05 + 0.9*rng.Float64())
			y[i] = float32(rng.Float64())
		}
	case probsAxis1:
		for i := range yhat {
			yhat[i] = float32(4*rng.Float64() - 2)
		}
		softmax1(yhat, c.shape)
		oneHot(y, c.labels, c.shape)
	}
	return yhat, y
}

// softmax1 replaces x (N, C, spatial…) by its softmax over axis 1, in
// float64.
func softmax1(x []float32, shape []int) {
	n, cl, in := shape[0], shape[1], len(x)/(shape[0]*shape[1])
	for b := range n {
		for s := range in {
			m := math.Inf(-1)
			for c := range cl {
				m = math.Max(m, float64(x[(b*cl+c)*in+s]))
			}
			z := 0.0
			for c := range cl {
				z += math.Exp(float64(x[(b*cl+c)*in+s]) - m)
			}
			for c := range cl {
				i := (b*cl+c)*in + s
				x[i] = float32(math.Exp(float64(x[i])-m) / z)
			}
		}
	}
}

// oneHot writes the one-hot encoding of labels (one per (n, spatial…)
// position) into y (N, C, spatial…).
func oneHot(y []float32, labels []int, shape []int) {
	cl, in := shape[1], len(y)/(shape[0]*shape[1])
	clear(y)
	for i, l := range labels {
		b, s := i/in, i%in
		y[(b*cl+l)*in+s] = 1
	}
}

func f64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// Float64 references, written as plain loops.

func refMean(terms []float64, sum bool, samples int) float64 {
	s := 0.0
	for _, v := range terms {
		s += v
	}
	if sum {
		return s
	}
	return s / float64(samples)
}

func elementwise(f func(a, b float64) float64, sum bool) func(yhat, y []float64, _ []int) float64 {
	return func(yhat, y []float64, _ []int) float64 {
		t := make([]float64, len(yhat))
		for i := range yhat {
			t[i] = f(yhat[i], y[i])
		}
		return refMean(t, sum, len(t))
	}
}

func huber64(delta float64) func(a, b float64) float64 {
	return func(a, b float64) float64 {
		d := math.Abs(a - b)
		if d <= delta {
			return d * d / 2
		}
		return delta * (d - delta/2)
	}
}

func bce64(p, y float64) float64 {
	p = math.Min(math.Max(p, model.ProbEps), 1-model.ProbEps)
	return -y*math.Log(p) - (1-y)*math.Log(1-p)
}

func logitBCE64(z, y float64) float64 {
	return math.Max(z, 0) - z*y + math.Log1p(math.Exp(-math.Abs(z)))
}

// crossEntropy64 is the cross-entropy of (N, C, spatial…) against target
// distributions y of the same shape; logits says whether yhat holds
// logits (log-softmax over axis 1) or probabilities (clamped at ProbEps).
func crossEntropy64(logits, sum bool) func(yhat, y []float64, shape []int) float64 {
	return func(yhat, y []float64, shape []int) float64 {
		n, cl, in := shape[0], shape[1], len(yhat)/(shape[0]*shape[1])
		var terms []float64
		for b := range n {
			for s := range in {
				lse := math.Inf(-1)
				if logits {
					m := math.Inf(-1)
					for c := range cl {
						m = math.Max(m, yhat[(b*cl+c)*in+s])
					}
					z := 0.0
					for c := range cl {
						z += math.Exp(yhat[(b*cl+c)*in+s] - m)
					}
					lse = m + math.Log(z)
				}
				t := 0.0
				for c := range cl {
					i := (b*cl+c)*in + s
					if logits {
						t -= y[i] * (yhat[i] - lse)
					} else {
						t -= y[i] * math.Log(math.Max(yhat[i], model.ProbEps))
					}
				}
				terms = append(terms, t)
			}
		}
		return refMean(terms, sum, n*in)
	}
}

func lossCases() []lossCase {
	labels4 := []int{2, 0, 1, 2, 1, 1, 0, 2} // (2, 3, 4): 2·4 samples
	labels2 := []int{4, 0, 3}                // (3, 5)
	var cases []lossCase
	for _, r := range []string{"Mean", "Sum"} {
		sum := r == "Sum"
		red := model.MeanReduction()
		if sum {
			red = model.SumReduction()
		}
		cases = append(cases,
			lossCase{name: "MSE/" + r, shape: []int{3, 4}, kind: anyValues,
				loss: func(a, b ad.Var) ad.Var { return model.MSE(a, b, red) },
				ref:  elementwise(func(a, b float64) float64 { return (a - b) * (a - b) }, sum)},
			lossCase{name: "L1/" + r, shape: []int{2, 3, 2}, kind: anyValues,
				loss: func(a, b ad.Var) ad.Var { return model.L1(a, b, red) },
				ref:  elementwise(func(a, b float64) float64 { return math.Abs(a - b) }, sum)},
			lossCase{name: "Huber/" + r, shape: []int{5, 3}, kind: anyValues,
				loss: func(a, b ad.Var) ad.Var { return model.Huber(a, b, 0.7, red) },
				ref:  elementwise(huber64(float64(float32(0.7))), sum)},
			lossCase{name: "BinaryCrossEntropy/" + r, shape: []int{4, 3}, kind: probsBinary,
				loss: func(a, b ad.Var) ad.Var { return model.BinaryCrossEntropy(a, b, red) },
				ref:  elementwise(bce64, sum)},
			lossCase{name: "LogitBinaryCrossEntropy/" + r, shape: []int{4, 3}, kind: anyValues,
				loss: func(a, b ad.Var) ad.Var { return model.LogitBinaryCrossEntropy(a, b, red) },
				ref:  elementwise(logitBCE64, sum)},
			lossCase{name: "CrossEntropy/spatial/" + r, shape: []int{2, 3, 4}, kind: probsAxis1, labels: labels4,
				loss: func(a, _ ad.Var) ad.Var { return model.CrossEntropy(a, labels4, red) },
				ref:  crossEntropy64(false, sum)},
			lossCase{name: "CrossEntropyOneHot/" + r, shape: []int{3, 5}, kind: probsAxis1, labels: labels2,
				loss: func(a, b ad.Var) ad.Var { return model.CrossEntropyOneHot(a, b, red) },
				ref:  crossEntropy64(false, sum)},
			lossCase{name: "LogitCrossEntropy/" + r, shape: []int{3, 5}, kind: probsAxis1, labels: labels2,
				loss: func(a, _ ad.Var) ad.Var { return model.LogitCrossEntropy(a, labels2, red) },
				ref:  crossEntropy64(true, sum)},
			lossCase{name: "LogitCrossEntropy/spatial/" + r, shape: []int{2, 3, 4}, kind: probsAxis1, labels: labels4,
				loss: func(a, _ ad.Var) ad.Var { return model.LogitCrossEntropy(a, labels4, red) },
				ref:  crossEntropy64(true, sum)},
			lossCase{name: "LogitCrossEntropyOneHot/spatial/" + r, shape: []int{2, 3, 4}, kind: probsAxis1, labels: labels4,
				loss: func(a, b ad.Var) ad.Var { return model.LogitCrossEntropyOneHot(a, b, red) },
				ref:  crossEntropy64(true, sum)},
		)
	}
	return cases
}

// evalLoss returns c's loss of yhat against y on a fresh tape.
func evalLoss(t *testing.T, c lossCase, yhat, y []float32) float32 {
	t.Helper()
	tp := ad.NewTape()
	l := c.loss(tp.Const(flat.Tensor{Shape: c.shape, Data: yhat}), tp.Const(flat.Tensor{Shape: c.shape, Data: y}))
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	if s := l.Shape(); len(s) != 0 {
		t.Fatalf("loss has shape %v, want a scalar", s)
	}
	return l.Item()
}

func TestLossValuesMatchFloat64References(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range lossCases() {
		t.Run(c.name, func(t *testing.T) {
			for range 5 {
				yhat, y := lossInputs(c, rng)
				if c.kind == probsAxis1 && strings.HasPrefix(c.name, "Logit") {
					for i := range yhat { // logits, not probabilities
						yhat[i] = float32(6*rng.Float64() - 3)
					}
				}
				got := float64(evalLoss(t, c, yhat, y))
				want := c.ref(f64(yhat), f64(y), c.shape)
				if math.Abs(got-want) > 1e-5*(1+math.Abs(want)) {
					t.Errorf("loss %v, want %v (float64 reference)", got, want)
				}
			}
		})
	}
}

// TestLossDerivatives checks the gradient and second derivatives of every
// loss with respect to the prediction by finite differences, at random
// inputs away from kinks (Huber's |d| = delta, L1's d = 0).
func TestLossDerivatives(t *testing.T) {
	for _, c := range lossCases() {
		t.Run(c.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(rt, "seed"), 1))
				yhat, y := lossInputs(c, rng)
				if c.kind == probsAxis1 && !strings.HasPrefix(c.name, "Logit") {
					// Probabilities (not normalised: the loss does not
					// care) large enough for finite differences of log.
					for i := range yhat {
						yhat[i] = float32(0.3 + 0.7*rng.Float64())
					}
				}
				if c.kind == anyValues {
					// Keep |ŷ − y| away from L1's and Huber's kinks.
					for i := range yhat {
						d := yhat[i] - y[i]
						if a := float32(math.Abs(float64(d))); a < 0.1 || math.Abs(float64(a-0.7)) < 0.1 {
							yhat[i] = y[i] + 0.35*float32(math.Copysign(1, float64(d)))
						}
					}
				}
				f := func(p ad.Var) ad.Var {
					tp := p.Tape()
					return c.loss(ad.Reshape(p, c.shape...), tp.Const(flat.Tensor{Shape: c.shape, Data: y}))
				}
				proptest.CheckGrad(rt, f, yhat)
				proptest.CheckHVP(rt, f, yhat)
			})
		})
	}
}

// TestLossDerivativesWrtTarget checks the derivative with respect to the
// target too, where the losses are differentiable in it.
func TestLossDerivativesWrtTarget(t *testing.T) {
	for _, c := range lossCases() {
		if c.labels != nil && !strings.Contains(c.name, "OneHot") {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 8))
			yhat, y := lossInputs(c, rng)
			if c.kind == anyValues {
				for i := range yhat {
					yhat[i] = y[i] + 0.35 + 0.1*float32(i%3) // away from the kinks
				}
			}
			f := func(p ad.Var) ad.Var {
				tp := p.Tape()
				return c.loss(tp.Const(flat.Tensor{Shape: c.shape, Data: yhat}), ad.Reshape(p, c.shape...))
			}
			proptest.CheckGrad(t, f, y)
			proptest.CheckHVP(t, f, y)
		})
	}
}

func TestLossErrors(t *testing.T) {
	tests := []struct {
		name  string
		shape []int // of the prediction
		loss  func(tp *ad.Tape, yhat ad.Var) ad.Var
		want  []string
	}{
		{"MSE shapes", []int{2, 3}, func(tp *ad.Tape, a ad.Var) ad.Var { return model.MSE(a, tp.Full(0, 3, 2)) },
			[]string{"MSE", "[2 3]", "[3 2]"}},
		{"L1 zero target", []int{2, 3}, func(tp *ad.Tape, a ad.Var) ad.Var { return model.L1(a, ad.Var{}) },
			[]string{"L1", "zero Var"}},
		{"Huber delta", []int{2}, func(tp *ad.Tape, a ad.Var) ad.Var { return model.Huber(a, tp.Full(0, 2), 0) },
			[]string{"Huber", "delta is 0", "> 0"}},
		{"two reductions", []int{2}, func(tp *ad.Tape, a ad.Var) ad.Var {
			return model.L1(a, a, model.SumReduction(), model.MeanReduction())
		}, []string{"L1", "2 reductions"}},
		{"two reductions, labels", []int{2, 3}, func(tp *ad.Tape, a ad.Var) ad.Var {
			return model.LogitCrossEntropy(a, []int{0, 1}, model.SumReduction(), model.SumReduction())
		}, []string{"LogitCrossEntropy", "2 reductions"}},
		{"label count", []int{2, 3, 4}, func(tp *ad.Tape, a ad.Var) ad.Var { return model.LogitCrossEntropy(a, []int{0, 1}) },
			[]string{"LogitCrossEntropy", "2 labels", "[2 3 4]", "want 8"}},
		{"label range", []int{3, 4}, func(tp *ad.Tape, a ad.Var) ad.Var { return model.CrossEntropy(a, []int{0, 3, 4}) },
			[]string{"CrossEntropy", "label 4 at position 2", "< 4"}},
		{"negative label", []int{3, 4}, func(tp *ad.Tape, a ad.Var) ad.Var { return model.LogitCrossEntropy(a, []int{0, -1, 2}) },
			[]string{"label -1 at position 1"}},
		{"class axis", []int{4}, func(tp *ad.Tape, a ad.Var) ad.Var { return model.LogitCrossEntropy(a, []int{0}) },
			[]string{"LogitCrossEntropy", "[4]", "(N, C, spatial…)"}},
		{"one-hot shapes", []int{3, 4}, func(tp *ad.Tape, a ad.Var) ad.Var { return model.LogitCrossEntropyOneHot(a, tp.Full(0, 3, 5)) },
			[]string{"LogitCrossEntropyOneHot", "[3 4]", "[3 5]"}},
		{"binary shapes", []int{3, 4}, func(tp *ad.Tape, a ad.Var) ad.Var { return model.BinaryCrossEntropy(a, tp.Full(0, 4, 3)) },
			[]string{"BinaryCrossEntropy", "[3 4]", "[4 3]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp := ad.NewTape()
			x := tp.Full(0.5, tt.shape...)
			l := tt.loss(tp, x)
			err := tp.Err()
			if err == nil {
				t.Fatalf("no error; loss %v", l)
			}
			checkMentions(t, err, tt.want)
			if _, gerr := tp.Grad(l); gerr == nil {
				t.Error("Grad of a failed loss returned no error")
			}
		})
	}
}

// TestLossAfterFailureKeepsTheFirstError: a loss of a failed Var reports
// the error recorded first, not one of its own.
func TestLossAfterFailureKeepsTheFirstError(t *testing.T) {
	tp := ad.NewTape()
	x := model.MSE(tp.Full(0, 2), tp.Full(0, 3)) // first error
	l := model.LogitCrossEntropy(x, []int{0})
	if err := tp.Err(); err == nil || !strings.Contains(err.Error(), "MSE") {
		t.Fatalf("error %v, want the MSE one", err)
	}
	if _, err := tp.Grad(l); err == nil || !strings.Contains(err.Error(), "MSE") {
		t.Fatalf("Grad error %v, want the MSE one", err)
	}
}

func TestLogitCrossEntropyStableForLargeLogits(t *testing.T) {
	tp := ad.NewTape()
	z := tp.Const(flat.Tensor{Shape: []int{2, 3}, Data: []float32{1000, 0, -1000, -500, 500, 499}})
	l := model.LogitCrossEntropy(z, []int{0, 2}, model.SumReduction())
	want := 1 + math.Log1p(math.Exp(-1))                     // 0 + (500 − 499 + log(1 + e⁻¹))
	if got := float64(l.Item()); math.Abs(got-want) > 1e-4 { // float32 rounding of 500.31
		t.Errorf("loss %v, want %v", got, want)
	}
	lb := model.LogitBinaryCrossEntropy(z, tp.Full(1, 2, 3), model.SumReduction())
	if v := lb.Item(); math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
		t.Errorf("LogitBinaryCrossEntropy of large logits is %v", v)
	}
}

func TestCrossEntropyOfZeroProbabilityIsFinite(t *testing.T) {
	tp := ad.NewTape()
	p := tp.Param([]float32{0, 1, 0, 0.5, 0.5, 0})
	l := model.CrossEntropy(ad.Reshape(p, 2, 3), []int{0, 1})
	g, err := tp.Grad(l)
	if err != nil {
		t.Fatal(err)
	}
	want := (-math.Log(model.ProbEps) - math.Log(0.5)) / 2
	if got := float64(l.Item()); math.Abs(got-want) > 1e-5*want {
		t.Errorf("loss %v, want %v", got, want)
	}
	for i, v := range g {
		if math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) {
			t.Errorf("gradient[%d] = %v", i, v)
		}
	}
}

// TestLogitCrossEntropyGradAllocatesNothing pins the classifier loss's
// steady state at zero allocations, for both target forms.
func TestLogitCrossEntropyGradAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops items under -race")
	}
	θ := make([]float32, 4*10*3)
	for i := range θ {
		θ[i] = float32(i%7) * 0.3
	}
	labels := make([]int, 4*3)
	for i := range labels {
		labels[i] = (i * 3) % 10
	}
	target := flat.Tensor{Shape: []int{4, 10, 3}, Data: make([]float32, len(θ))}
	oneHot(target.Data, labels, target.Shape)
	tp := ad.NewTape()
	for _, c := range []struct {
		name string
		loss func(z ad.Var) ad.Var
	}{
		{"labels", func(z ad.Var) ad.Var { return model.LogitCrossEntropy(z, labels) }},
		{"labels sum", func(z ad.Var) ad.Var { return model.LogitCrossEntropy(z, labels, model.SumReduction()) }},
		{"one-hot", func(z ad.Var) ad.Var {
			return model.LogitCrossEntropyOneHot(z, z.Tape().Const(target))
		}},
	} {
		step := func() {
			p := tp.Param(θ)
			if _, err := tp.Grad(c.loss(ad.Reshape(p, 4, 10, 3))); err != nil {
				t.Fatal(err)
			}
			tp.Reset()
		}
		step()
		if n := testing.AllocsPerRun(50, step); n != 0 {
			t.Errorf("%s: a step allocates %v times, want 0", c.name, n)
		}
	}
}

func TestLossesMatchPyTorch(t *testing.T) {
	ref := loadTorch(t)
	a, b := ref.tensor(t, "loss_a"), ref.tensor(t, "loss_b")
	z, yb, pb := ref.tensor(t, "loss_z"), ref.tensor(t, "loss_yb"), ref.tensor(t, "loss_pb")
	logits, labels := ref.tensor(t, "ce_logits"), ref.labels(t, "ce_labels")
	logitsSp, labelsSp := ref.tensor(t, "ce_logits_sp"), ref.labels(t, "ce_labels_sp")
	soft, probsSp := ref.tensor(t, "ce_soft"), ref.tensor(t, "ce_probs_sp")
	onehotSp := flat.Tensor{Shape: probsSp.Shape, Data: make([]float32, len(probsSp.Data))}
	oneHot(onehotSp.Data, labelsSp, onehotSp.Shape)
	for _, suffix := range []string{"_mean", "_sum"} {
		red := map[string]model.LossOption{"_mean": model.MeanReduction(), "_sum": model.SumReduction()}[suffix]
		tests := []struct {
			name string
			x, y flat.Tensor
			loss func(x, y ad.Var) ad.Var
		}{
			{"mse", a, b, func(x, y ad.Var) ad.Var { return model.MSE(x, y, red) }},
			{"l1", a, b, func(x, y ad.Var) ad.Var { return model.L1(x, y, red) }},
			{"huber", a, b, func(x, y ad.Var) ad.Var { return model.Huber(x, y, 0.7, red) }},
			{"bce_pb", pb, yb, func(x, y ad.Var) ad.Var { return model.BinaryCrossEntropy(x, y, red) }},
			{"bce_logits", z, yb, func(x, y ad.Var) ad.Var { return model.LogitBinaryCrossEntropy(x, y, red) }},
			{"ce", logits, logits, func(x, _ ad.Var) ad.Var { return model.LogitCrossEntropy(x, labels, red) }},
			{"ce_sp", logitsSp, logitsSp, func(x, _ ad.Var) ad.Var { return model.LogitCrossEntropy(x, labelsSp, red) }},
			{"ce_soft", logitsSp, soft, func(x, y ad.Var) ad.Var { return model.LogitCrossEntropyOneHot(x, y, red) }},
			{"nll_probs_sp", probsSp, probsSp, func(x, _ ad.Var) ad.Var { return model.CrossEntropy(x, labelsSp, red) }},
			{"nll_probs_sp", probsSp, onehotSp, func(x, y ad.Var) ad.Var { return model.CrossEntropyOneHot(x, y, red) }},
		}
		for _, tt := range tests {
			t.Run(tt.name+suffix, func(t *testing.T) {
				tp := ad.NewTape()
				l := tt.loss(tp.Const(tt.x), tp.Const(tt.y))
				if err := tp.Err(); err != nil {
					t.Fatal(err)
				}
				want := ref.scalar(t, tt.name+suffix)
				if got := float64(l.Item()); !(math.Abs(got-want) <= 1e-5*math.Max(1, math.Abs(want))) {
					t.Errorf("%v, want %v (PyTorch)", got, want)
				}
			})
		}
	}
}
