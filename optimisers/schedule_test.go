package optimisers_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/internal/bitwise"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
)

func TestSchedules(t *testing.T) {
	cos := func(v, floor float64, k, n int) float64 {
		return floor + (v-floor)*(1+math.Cos(math.Pi*float64(k)/float64(n)))/2
	}
	for _, tc := range []struct {
		name string
		s    optimisers.Schedule
		want map[int]float64 // step → value
	}{
		{"Constant", optimisers.Constant(0.3), map[int]float64{1: 0.3, 2: 0.3, 1000: 0.3}},
		{"StepDecay", optimisers.StepDecay(1, 3, 0.5), map[int]float64{1: 1, 3: 1, 4: 0.5, 6: 0.5, 7: 0.25, 10: 0.125}},
		{"Exponential", optimisers.Exponential(2, 0.5), map[int]float64{1: 2, 2: 1, 3: 0.5, 5: 0.125}},
		{"Cosine", optimisers.Cosine(1, 0.1, 4), map[int]float64{1: 1, 2: cos(1, 0.1, 1, 4), 3: 0.55, 4: cos(1, 0.1, 3, 4), 5: 0.1, 9: 0.1}},
		{"Linear", optimisers.Linear(0, 1, 4), map[int]float64{1: 0, 2: 0.25, 3: 0.5, 5: 1, 8: 1}},
		{"LinearWarmup", optimisers.LinearWarmup(1, 4), map[int]float64{1: 0.25, 2: 0.5, 4: 1, 5: 1, 100: 1}},
		{"WarmupCosine", optimisers.WarmupCosine(1, 0.1, 2, 6), map[int]float64{
			1: 0.5, 2: 1, 3: cos(1, 0.1, 1, 4), 4: 0.55, 5: cos(1, 0.1, 3, 4), 6: 0.1, 7: 0.1}},
		{"WarmupCosine without warm-up", optimisers.WarmupCosine(1, 0, 0, 4), map[int]float64{1: cos(1, 0, 1, 4), 4: 0}},
		{"Join", optimisers.Join([]optimisers.Schedule{
			optimisers.LinearWarmup(1, 2), optimisers.Constant(0.5), optimisers.Exponential(0.2, 0.5)}, []int{2, 5}),
			map[int]float64{1: 0.5, 2: 1, 3: 0.5, 5: 0.5, 6: 0.2, 7: 0.1, 8: 0.05}},
		{"ScheduleFunc", optimisers.ScheduleFunc(func(step int) float64 { return 1 / float64(step) }), map[int]float64{1: 1, 4: 0.25}},
	} {
		for step, want := range tc.want {
			if got := tc.s.At(step); math.Abs(got-want) > 1e-15*math.Abs(want) {
				t.Errorf("%s: At(%d) = %v, want %v", tc.name, step, got, want)
			}
		}
	}
}

// The schedules agree with torch.optim.lr_scheduler run one scheduler step
// per optimiser step (testdata/torch_schedules.py).
func TestSchedulesTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/torch_schedules.json")
	if err != nil {
		t.Fatal(err)
	}
	var gold struct {
		Runs []struct {
			Name string    `json:"name"`
			Base float64   `json:"base"`
			LRs  []float64 `json:"lrs"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(raw, &gold); err != nil {
		t.Fatal(err)
	}
	ours := map[string]optimisers.Schedule{
		"CosineAnnealingLR(T_max=20, eta_min=1e-4)":                optimisers.Cosine(0.1, 1e-4, 20),
		"StepLR(step_size=3, gamma=0.5)":                           optimisers.StepDecay(0.1, 3, 0.5),
		"ExponentialLR(gamma=0.9)":                                 optimisers.Exponential(0.1, 0.9),
		"LinearLR(start_factor=0.25, end_factor=1, total_iters=4)": optimisers.Linear(0.025, 0.1, 4),
	}
	if len(gold.Runs) != len(ours) {
		t.Fatalf("%d golden runs, %d schedules", len(gold.Runs), len(ours))
	}
	for _, run := range gold.Runs {
		s, ok := ours[run.Name]
		if !ok {
			t.Fatalf("no schedule for %q", run.Name)
		}
		for k, want := range run.LRs {
			// PyTorch's cosine is recursive, so it rounds differently.
			if got := s.At(k + 1); math.Abs(got-want) > 1e-12*run.Base {
				t.Errorf("%s: step %d: %v, torch %v", run.Name, k+1, got, want)
			}
		}
	}
}

// A scheduled Adam follows Adam's loop by hand with the rate of each step,
// allocates nothing, and leaves the moments alone.
func TestScheduledAdam(t *testing.T) {
	lay, err := layout.NewBuilder().Add("a", 3).Add("b", 2).Build()
	if err != nil {
		t.Fatal(err)
	}
	s := optimisers.WarmupCosine(1e-2, 1e-4, 3, 10)
	opt := mustSetup(t, optimisers.Scheduled(optimisers.Adam(123), "lr", s), lay)
	θ := ramp(5, 0.5, 1)
	θr := slices.Clone(θ)
	m, v := make([]float32, 5), make([]float32, 5)
	for step := 1; step <= 12; step++ {
		if got, err := opt.Hyper("a", "lr"); err != nil || got != s.At(step) {
			t.Errorf("step %d: Hyper = %v, %v; want %v", step, got, err, s.At(step))
		}
		g := ramp(5, float32(step%3)-1, 1)
		if err := opt.Update(θ, g); err != nil {
			t.Fatal(err)
		}
		r := optimisers.Adam(s.At(step))
		r.Fuse([][]float32{m[:3], v[:3]}, θr[:3], g[:3], step)
		r.Fuse([][]float32{m[3:], v[3:]}, θr[3:], g[3:], step)
		if !bitwise.Equal(θ, θr) {
			t.Fatalf("step %d: θ = %v, by hand %v", step, θ, θr)
		}
	}
	if a := testing.AllocsPerRun(20, func() { _ = opt.Update(θ, θr) }); a != 0 {
		t.Errorf("a scheduled Update allocates %v times", a)
	}
	// The functional Step runs the same schedule.
	st := opt.State()
	g := ramp(5, 1, 1)
	checkStepIsUpdate(t, "Step and Update differ under a schedule", st, opt, θ, g)
}

// The schedule follows Step, the updates that changed θ: behind
// AccumGrad(2) it moves once per two calls. Nested schedules: the inner one
// wins for its name.
func TestScheduleStepsAndNesting(t *testing.T) {
	lay, err := layout.NewBuilder().Add("w", 1).Build()
	if err != nil {
		t.Fatal(err)
	}
	byStep := optimisers.ScheduleFunc(func(step int) float64 { return float64(step) })
	rule := optimisers.Scheduled(optimisers.Chain(optimisers.AccumGrad(2), optimisers.Descent(0)), "lr", byStep)
	opt := mustSetup(t, rule, lay)
	θ := []float32{0}
	for range 6 {
		if err := opt.Update(θ, []float32{1}); err != nil {
			t.Fatal(err)
		}
	}
	if θ[0] != -6 || opt.Steps() != 3 { // rates 1, 2, 3 on the mean gradient 1
		t.Errorf("θ = %v after %d steps, want -6 after 3", θ[0], opt.Steps())
	}
	nested := optimisers.Scheduled(optimisers.Chain(
		optimisers.Scheduled(optimisers.Descent(0), "lr", optimisers.Constant(0.5)),
		optimisers.Scheduled(optimisers.WeightDecay(0), "weight_decay", optimisers.Constant(1)),
	), "lr", optimisers.Constant(100))
	opt, err = optimisers.Setup(optimisers.Chain(nested), lay)
	if err != nil {
		t.Fatal(err)
	}
	θ = []float32{1}
	if err := opt.Update(θ, []float32{1}); err != nil {
		t.Fatal(err)
	}
	// Descent(0.5) on g = 1, then weight decay 1·θ = 1 added to its output.
	if θ[0] != -0.5 {
		t.Errorf("nested schedules: θ = %v, want -0.5", θ[0])
	}
}

func TestScheduleErrors(t *testing.T) {
	lay := testLayout(t)
	nanAt3 := optimisers.ScheduleFunc(func(step int) float64 {
		if step == 3 {
			return math.NaN()
		}
		return 1e-2
	})
	for _, tc := range []struct {
		rule optimisers.Rule
		want string
	}{
		{optimisers.Scheduled(optimisers.Adam(1), "momentum", optimisers.Constant(1)), `Scheduled "momentum": no rule inside has a hyperparameter "momentum" (it has: beta1, beta2, eps, lr)`},
		{optimisers.Scheduled(optimisers.Adam(1), "lr", nil), `Scheduled "lr": nil schedule`},
		{optimisers.Scheduled(nil, "lr", optimisers.Constant(1)), `Scheduled "lr": nil rule`},
		{optimisers.Scheduled(optimisers.Adam(1), "lr", optimisers.Constant(-1)), `Scheduled "lr" at step 1: Adam: LR = -1`},
		{optimisers.Scheduled(optimisers.Adam(1), "lr", optimisers.StepDecay(1, 0, 0.5)), "StepDecay: every = 0"},
		{optimisers.Scheduled(optimisers.Adam(1), "lr", optimisers.Exponential(math.NaN(), 0.5)), "Exponential: v = NaN"},
		{optimisers.Scheduled(optimisers.Adam(1), "lr", optimisers.Cosine(1, 0, 0)), "Cosine: n = 0"},
		{optimisers.Scheduled(optimisers.Adam(1), "lr", optimisers.WarmupCosine(1, 0, 5, 5)), "want 0 ≤ warmup < total"},
		{optimisers.Scheduled(optimisers.Adam(1), "lr", optimisers.Join([]optimisers.Schedule{optimisers.Constant(1)}, []int{3})), "Join: 1 schedules and 1 boundaries"},
		{optimisers.Scheduled(optimisers.Adam(1), "lr", optimisers.Join([]optimisers.Schedule{optimisers.Constant(1), optimisers.Constant(1), optimisers.Constant(1)}, []int{3, 3})), "strictly increasing"},
		{optimisers.Scheduled(optimisers.Adam(1), "lr", optimisers.Join([]optimisers.Schedule{optimisers.Constant(1), optimisers.Linear(1, 0, -1)}, []int{3})), "Join: schedule 1: Linear: n = -1"},
		{optimisers.Scheduled(optimisers.RMSProp(1), "momentum", optimisers.Constant(0.9)), `the value 0.9 changes the rule's state from 1 slots to 2`},
	} {
		_, err := optimisers.Setup(tc.rule, lay)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Setup(%s): got %v, want an error containing %q", ruleString(tc.rule), err, tc.want)
		}
	}

	// A schedule that goes bad at step 3: Update says so and changes nothing.
	opt := mustSetup(t, optimisers.Scheduled(optimisers.Adam(1), "lr", nanAt3), lay)
	θ := ramp(lay.Len(), 0.5, 1)
	for range 2 {
		if err := opt.Update(θ, ramp(lay.Len(), 1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	before, θb := opt.State(), slices.Clone(θ)
	err := opt.Update(θ, ramp(lay.Len(), 1, 1))
	if err == nil || !strings.Contains(err.Error(), "the schedule of lr at step 3: Adam: LR = NaN") {
		t.Errorf("NaN from a schedule: %v", err)
	}
	if !bitwise.Equal(θ, θb) || !sameState(before, opt.State()) {
		t.Errorf("a failed scheduled update changed something")
	}
	// A schedule crossing zero for RMSProp's momentum would add state.
	r := optimisers.RMSProp(1e-2)
	r.Momentum = 0.5
	opt, err = optimisers.Setup(optimisers.Scheduled(r, "momentum", optimisers.Linear(0.9, 0, 2)), lay)
	if err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 3; step++ {
		err = opt.Update(θ, ramp(lay.Len(), 1, 1))
		if step < 3 && err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
	}
	if err == nil || !strings.Contains(err.Error(), "a schedule cannot add or remove state") {
		t.Errorf("momentum scheduled to 0: %v", err)
	}
}

func ExampleScheduled() {
	lay, _ := layout.NewBuilder().Add("w", 1).Build()
	// 3 updates of warm-up to 0.1, then a cosine down to 0.01 at update 7.
	lr := optimisers.WarmupCosine(0.1, 0.01, 3, 7)
	opt, _ := optimisers.Setup(optimisers.Scheduled(optimisers.Descent(0), "lr", lr), lay)
	θ, g := []float32{0}, []float32{-1}
	for step := 1; step <= 8; step++ {
		v, _ := opt.Hyper("w", "lr")
		_ = opt.Update(θ, g)
		fmt.Printf("step %d: lr %.4f θ %.4f\n", step, v, θ[0])
	}
	// Output:
	// step 1: lr 0.0333 θ 0.0333
	// step 2: lr 0.0667 θ 0.1000
	// step 3: lr 0.1000 θ 0.2000
	// step 4: lr 0.0868 θ 0.2868
	// step 5: lr 0.0550 θ 0.3418
	// step 6: lr 0.0232 θ 0.3650
	// step 7: lr 0.0100 θ 0.3750
	// step 8: lr 0.0100 θ 0.3850
}
