package resnet_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/examples/resnet"
	"github.com/flatkit/flatkit/flat"
	"github.com/flatkit/flatkit/internal/race"
	"github.com/flatkit/flatkit/internal/stfile"
	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/model"
)

// torchName is the state_dict name and shape of one tensor of
// torchvision's resnet18(num_classes=10), from testdata/resnet18_names.json.
type torchName struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
}

func readNames(t *testing.T) []torchName {
	t.Helper()
	b, err := os.ReadFile("testdata/resnet18_names.json")
	if err != nil {
		t.Fatal(err)
	}
	var names []torchName
	if err := json.Unmarshal(b, &names); err != nil {
		t.Fatal(err)
	}
	return names
}

func layouts(t *testing.T, net model.Layer) (params, state *layout.Layout) {
	t.Helper()
	params, err := model.Layout(net)
	if err != nil {
		t.Fatal(err)
	}
	state, err = model.StateLayout(net)
	if err != nil {
		t.Fatal(err)
	}
	return params, state
}

// TestTorchNames checks the full-size ResNet18 against torchvision's own
// state_dict names and shapes: TorchName sends every tensor but
// num_batches_tracked to a leaf of the parameter or the state layout of
// the same shape, and every leaf is filled exactly once.
func TestTorchNames(t *testing.T) {
	names := readNames(t)
	params, state := layouts(t, resnet.ResNet18(10))
	if got, want := params.Len(), 11181642; got != want { // torchvision: sum of numel over parameters()
		t.Errorf("ResNet18(10) has %d parameters, torchvision's %d", got, want)
	}
	filled := map[string]string{}
	for _, n := range names {
		path := resnet.TorchName(n.Name, resnet.Blocks18)
		if strings.HasSuffix(n.Name, ".num_batches_tracked") {
			if path != "" {
				t.Errorf("TorchName(%q) = %q, want \"\" (not kept)", n.Name, path)
			}
			continue
		}
		lf, ok := params.Find(path)
		where := "params"
		if !ok {
			lf, ok = state.Find(path)
			where = "state"
		}
		if !ok {
			t.Errorf("TorchName(%q) = %q: in neither layout", n.Name, path)
			continue
		}
		if !slices.Equal(lf.Shape, n.Shape) {
			t.Errorf("%q → %s %q: shape %v, torchvision %v", n.Name, where, path, lf.Shape, n.Shape)
		}
		if prev, dup := filled[where+path]; dup {
			t.Errorf("%q and %q both map to %s %q", prev, n.Name, where, path)
		}
		filled[where+path] = n.Name
	}
	for _, l := range [...]struct {
		where string
		lay   *layout.Layout
	}{{"params", params}, {"state", state}} {
		for _, lf := range l.lay.Leaves() {
			if _, ok := filled[l.where+lf.Path]; !ok {
				t.Errorf("%s leaf %q gets no torchvision tensor", l.where, lf.Path)
			}
		}
	}
}

func TestTorchNameRejects(t *testing.T) {
	for _, name := range []string{"", "input", "grad.conv1.weight", "layer5.0.conv1.weight",
		"layer1.2.conv1.weight", "layer1.0.conv3.weight", "layer1.x.conv1.weight", "bn1.num_batches_tracked"} {
		if got := resnet.TorchName(name, resnet.Blocks18); got != "" {
			t.Errorf("TorchName(%q) = %q, want \"\"", name, got)
		}
	}
}

const fixture = "testdata/torch_resnet.safetensors"

// loadNamed reads the fixture's tensors by torchvision name into lay's
// buffer through TorchName, and checks that every leaf was filled.
func loadNamed(t *testing.T, lay *layout.Layout) []float32 {
	t.Helper()
	θ := make([]float32, lay.Len())
	for i := range θ {
		θ[i] = float32(math.NaN()) // anything not loaded would show
	}
	rename := layout.Rename(func(n string) string { return resnet.TorchName(n, resnet.Blocks18) })
	rep := stfile.LoadInto(t, fixture, lay, θ, rename)
	if len(rep.Missed) != 0 {
		t.Fatalf("not in the fixture: %v", rep.Missed)
	}
	return θ
}

// refs reads the fixture's reference tensors: the outputs, the loss, and
// "grad."/"train." + name for every parameter and state tensor, the names
// taken from torchvision's list and the shapes from the small net's
// layouts.
func refs(t *testing.T, names []torchName, params, state *layout.Layout) map[string]flat.Tensor {
	t.Helper()
	b := layout.NewBuilder()
	b.Add("input", 2, 3, 48, 48)
	b.Add("eval.output", 2, 10)
	b.Add("train.output", 2, 10)
	b.Add("train.loss", 1)
	for _, n := range names {
		path := resnet.TorchName(n.Name, resnet.Blocks18)
		if lf, ok := params.Find(path); ok {
			b.Add("grad."+n.Name, lf.Shape...)
		} else if lf, ok := state.Find(path); ok {
			b.Add("train."+n.Name, lf.Shape...)
		}
	}
	lay, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]float32, lay.Len())
	rep := stfile.LoadInto(t, fixture, lay, buf)
	if len(rep.Missed) != 0 {
		t.Fatalf("not in the fixture: %v", rep.Missed)
	}
	out := map[string]flat.Tensor{}
	for _, lf := range lay.Leaves() {
		out[lf.Path] = lay.MustView(buf, lf.Path)
	}
	return out
}

// near reports on t where got differs from want by more than float32
// rounding through a deep network allows: |got − want| ≤ tol·max|want|.
func near(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, PyTorch %d", what, len(got), len(want))
		return
	}
	var scale float64
	for _, w := range want {
		scale = max(scale, math.Abs(float64(w)))
	}
	bad := 0
	for i := range want {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol*scale) {
			if bad++; bad <= 3 {
				t.Errorf("%s[%d] = %.7g, PyTorch %.7g (|diff| %.2g, scale %.3g)", what, i, got[i], want[i], d, scale)
			}
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d of %d values off", what, bad, len(want))
	}
}

// TestTorchFixture loads a width-4 torchvision ResNet-18 made by
// testdata/torch_resnet.py by name and checks its outputs in eval and
// train mode, the cross-entropy, the gradient of every parameter and the
// updated running statistics against PyTorch's.
func TestTorchFixture(t *testing.T) {
	names := readNames(t)
	net := resnet.New(4, resnet.Blocks18, 10)
	params, state := layouts(t, net)
	θ := loadNamed(t, params)
	st := loadNamed(t, state)
	ref := refs(t, names, params, state)
	x := ref["input"]

	tape := ad.NewTape()
	y := net.Apply(&model.Ctx{State: slices.Clone(st)}, tape.Param(θ), tape.Const(x))
	if err := tape.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(y.Shape(), []int{2, 10}) {
		t.Fatalf("output shape %v, want [2 10]", y.Shape())
	}
	near(t, "eval output", y.Data(), ref["eval.output"].Data, 1e-5)
	tape.Reset()

	train := &model.Ctx{Train: true, State: slices.Clone(st)}
	y = net.Apply(train, tape.Param(θ), tape.Const(x))
	loss := model.LogitCrossEntropy(y, []int{3, 7})
	g, err := tape.Grad(loss)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "train output", y.Data(), ref["train.output"].Data, 1e-5)
	near(t, "loss", loss.Data(), ref["train.loss"].Data, 1e-6)
	for _, n := range names {
		path := resnet.TorchName(n.Name, resnet.Blocks18)
		if lf, ok := params.Find(path); ok {
			near(t, "grad "+n.Name, g[lf.Offset:lf.Offset+lf.Size()], ref["grad."+n.Name].Data, 2e-4)
		} else if lf, ok := state.Find(path); ok {
			near(t, "state "+n.Name, train.State[lf.Offset:lf.Offset+lf.Size()], ref["train."+n.Name].Data, 1e-5)
		}
	}
}

// TestTrainStepAllocs pins a training step (train mode, cross-entropy,
// gradient on a reused tape) and an inference pass of a width-8 ResNet-18
// at zero allocations once warm.
func TestTrainStepAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("sync.Pool drops items under -race")
	}
	net := resnet.New(8, resnet.Blocks18, 10)
	θ, st := initNet(t, net, rand.New(rand.NewPCG(3, 4)))
	x := flat.New(4, 3, 32, 32)
	for i := range x.Data {
		x.Data[i] = float32(i%11)/5 - 1
	}
	labels := []int{0, 1, 2, 3}
	tape := ad.NewTape()
	train := &model.Ctx{Train: true, State: st}
	eval := &model.Ctx{State: st}
	for name, f := range map[string]func(){
		"training step": func() {
			y := net.Apply(train, tape.Param(θ), tape.Const(x))
			if _, err := tape.Grad(model.LogitCrossEntropy(y, labels)); err != nil {
				t.Fatal(err)
			}
			tape.Reset()
		},
		"inference": func() {
			net.Apply(eval, tape.Param(θ), tape.Const(x))
			if err := tape.Err(); err != nil {
				t.Fatal(err)
			}
			tape.Reset()
		},
	} {
		for range 3 {
			f()
		}
		if a := testing.AllocsPerRun(10, f); a != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, a)
		}
	}
}

// initNet draws net's parameters from rng and sets its state (the batch
// norms' running statistics) to its initial values, failing tb on error.
func initNet(tb testing.TB, net model.Layer, rng *rand.Rand) (θ, st []float32) {
	tb.Helper()
	θ, err := model.Init(net, rng)
	if err != nil {
		tb.Fatal(err)
	}
	st, err = model.InitState(net)
	if err != nil {
		tb.Fatal(err)
	}
	return θ, st
}
