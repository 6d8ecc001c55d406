package optimisers_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
)

// golden is testdata/torch_golden.json, written by testdata/torch_golden.py
// with Debian's python3-torch 1.13 (the format is in the script's docstring).
type golden struct {
	Torch  string      `json:"torch"`
	Steps  int         `json:"steps"`
	Theta0 []float32   `json:"theta0"`
	Grads  [][]float32 `json:"grads"`
	Runs   []struct {
		Name       string                     `json:"name"`
		Optimizer  string                     `json:"optimizer"`
		Hyper      map[string]json.RawMessage `json:"hyper"`
		Trajectory [][]float32                `json:"trajectory"`
	} `json:"runs"`
}

// hyperReader takes hyperparameters out of a run's "hyper" object and
// remembers which it has read, so that a setting the test does not map is an
// error rather than silently ignored.
type hyperReader struct {
	m    map[string]json.RawMessage
	read map[string]bool
	err  error
}

func (h *hyperReader) raw(name string, v any) {
	h.read[name] = true
	raw, ok := h.m[name]
	if !ok {
		if h.err == nil {
			h.err = fmt.Errorf("no hyperparameter %q", name)
		}
		return
	}
	if err := json.Unmarshal(raw, v); err != nil && h.err == nil {
		h.err = fmt.Errorf("hyperparameter %q: %v", name, err)
	}
}

func (h *hyperReader) f(name string) float64 {
	var v float64
	h.raw(name, &v)
	return v
}

func (h *hyperReader) pair(name string) (float64, float64) {
	var v []float64
	h.raw(name, &v)
	if len(v) != 2 {
		if h.err == nil {
			h.err = fmt.Errorf("hyperparameter %q = %v, want a pair", name, v)
		}
		return 0, 0
	}
	return v[0], v[1]
}

func (h *hyperReader) b(name string) bool {
	var v bool
	h.raw(name, &v)
	return v
}

// done reports the first problem, or a hyperparameter that was not read.
func (h *hyperReader) done() error {
	if h.err != nil {
		return h.err
	}
	var left []string
	for k := range h.m {
		if !h.read[k] {
			left = append(left, k)
		}
	}
	sort.Strings(left)
	if len(left) > 0 {
		return fmt.Errorf("hyperparameters the test does not map: %v", left)
	}
	return nil
}

// torchRule builds the rule that should reproduce a torch.optim optimiser
// with the given hyperparameters.
func torchRule(optimizer string, hm map[string]json.RawMessage) (optimisers.Rule, error) {
	h := &hyperReader{m: hm, read: map[string]bool{}}
	var r optimisers.Rule
	wd := 0.0
	decay := func() { wd = h.f("weight_decay") } // torch's L2 weight_decay
	if _, ok := hm["maximize"]; ok && h.b("maximize") {
		return nil, fmt.Errorf("maximize=True is not mapped")
	}
	switch optimizer {
	case "SGD":
		decay()
		lr, μ, damp := h.f("lr"), h.f("momentum"), h.f("dampening")
		switch {
		case h.b("nesterov"):
			r = optimisers.Nesterov(lr, μ)
		case μ == 0:
			r = optimisers.Descent(lr)
		default:
			r = optimisers.MomentumRule{LR: lr, Momentum: μ, Dampening: damp}
		}
	case "Adam":
		decay()
		a := optimisers.Adam(h.f("lr"))
		a.Beta1, a.Beta2 = h.pair("betas")
		a.Eps, a.AMSGrad = h.f("eps"), h.b("amsgrad")
		r = a
	case "AdamW":
		a := optimisers.AdamW(h.f("lr"), h.f("weight_decay"))
		a.Beta1, a.Beta2 = h.pair("betas")
		a.Eps, a.AMSGrad = h.f("eps"), h.b("amsgrad")
		r = a
	case "RMSprop":
		decay()
		a := optimisers.RMSProp(h.f("lr"))
		a.Alpha, a.Eps, a.Momentum, a.Centred = h.f("alpha"), h.f("eps"), h.f("momentum"), h.b("centered")
		r = a
	case "Adagrad":
		decay()
		a := optimisers.AdaGrad(h.f("lr"))
		a.LRDecay, a.InitialAccumulator, a.Eps = h.f("lr_decay"), h.f("initial_accumulator_value"), h.f("eps")
		r = a
	case "Adadelta":
		decay()
		a := optimisers.AdaDelta(h.f("lr"))
		a.Rho, a.Eps = h.f("rho"), h.f("eps")
		r = a
	case "NAdam":
		decay()
		a := optimisers.NAdam(h.f("lr"))
		a.Beta1, a.Beta2 = h.pair("betas")
		a.Eps, a.MomentumDecay = h.f("eps"), h.f("momentum_decay")
		r = a
	case "RAdam":
		decay()
		a := optimisers.RAdam(h.f("lr"))
		a.Beta1, a.Beta2 = h.pair("betas")
		a.Eps = h.f("eps")
		r = a
	case "Adamax":
		decay()
		a := optimisers.AdaMax(h.f("lr"))
		a.Beta1, a.Beta2 = h.pair("betas")
		a.Eps = h.f("eps")
		r = a
	case "Rprop":
		a := optimisers.Rprop(h.f("lr"))
		a.EtaMinus, a.EtaPlus = h.pair("etas")
		a.StepMin, a.StepMax = h.pair("step_sizes")
		r = a
	default:
		return nil, fmt.Errorf("no rule for torch.optim.%s", optimizer)
	}
	if err := h.done(); err != nil {
		return nil, err
	}
	if wd != 0 {
		r = optimisers.Chain(optimisers.WeightDecay(wd), r)
	}
	return r, nil
}

func loadGolden(t *testing.T) *golden {
	t.Helper()
	data, err := os.ReadFile("testdata/torch_golden.json")
	if err != nil {
		t.Fatalf("golden data: %v (regenerate with /usr/bin/python3 optimisers/testdata/torch_golden.py)", err)
	}
	var gd golden
	if err := json.Unmarshal(data, &gd); err != nil {
		t.Fatalf("golden data: %v", err)
	}
	if len(gd.Grads) != gd.Steps || len(gd.Runs) == 0 {
		t.Fatalf("golden data: %d gradients for %d steps, %d runs", len(gd.Grads), gd.Steps, len(gd.Runs))
	}
	return &gd
}

// TestGoldenTorch replays PyTorch 1.13's 50-step trajectories with our rules
// and asks for agreement within 1e-5 relative plus 1e-6 absolute at every
// step. Each run is replayed three ways, which must all agree with PyTorch:
// the parameters as one leaf (the rule's fused loop), as two leaves (the
// loop per range), and with the rule followed by a no-op modifier (its Apply
// loop and θ -= dx).
func TestGoldenTorch(t *testing.T) {
	gd := loadGolden(t)
	n := len(gd.Theta0)
	one, err := layout.NewBuilder().Add("p", n).Build()
	if err != nil {
		t.Fatal(err)
	}
	two, err := layout.NewBuilder().Add("a", 3).Add("b", n-3).Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range gd.Runs {
		t.Run(run.Name, func(t *testing.T) {
			rule, err := torchRule(run.Optimizer, run.Hyper)
			if err != nil {
				t.Fatalf("%s: %v", run.Optimizer, err)
			}
			if len(run.Trajectory) != gd.Steps {
				t.Fatalf("trajectory has %d steps, want %d", len(run.Trajectory), gd.Steps)
			}
			variants := []struct {
				name string
				rule optimisers.Rule
				lay  *layout.Layout
			}{
				{"fused", rule, one},
				{"two leaves", rule, two},
				{"apply", optimisers.Chain(rule, optimisers.ClipValue(math.Inf(1))), one},
			}
			var report []string
			for _, v := range variants {
				opt, err := optimisers.Setup(v.rule, v.lay)
				if err != nil {
					t.Fatalf("%s: %v", v.name, err)
				}
				θ := append([]float32(nil), gd.Theta0...)
				worst, worstAbs, worstStep := 0.0, 0.0, 0
				for step, g := range gd.Grads {
					if err := opt.Update(θ, g); err != nil {
						t.Fatal(err)
					}
					for i, want := range run.Trajectory[step] {
						d := math.Abs(float64(θ[i]) - float64(want))
						ratio := d / (1e-5*math.Abs(float64(want)) + 1e-6)
						if ratio > worst || math.IsNaN(d) {
							worst, worstAbs, worstStep = ratio, d, step+1
						}
					}
				}
				if !(worst <= 1) {
					t.Errorf("%s: step %d differs from torch by %.3g, %.3g× the tolerance", v.name, worstStep, worstAbs, worst)
				}
				report = append(report, fmt.Sprintf("%s %.3g (|Δ| %.2g)", v.name, worst, worstAbs))
			}
			t.Logf("worst error over the tolerance: %s", strings.Join(report, ", "))
		})
	}
}
