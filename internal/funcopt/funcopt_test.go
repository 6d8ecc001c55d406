package funcopt_test

import (
	"testing"

	"github.com/flatkit/flatkit/internal/funcopt"
)

type config struct{ calls []int }

type option func(*config)

func add(i int) option { return func(c *config) { c.calls = append(c.calls, i) } }

func TestCollectAppliesInOrderAndSkipsNil(t *testing.T) {
	got := funcopt.Collect([]option{add(1), nil, add(2), add(3)})
	want := []int{1, 2, 3}
	if len(got.calls) != len(want) {
		t.Fatalf("calls %v, want %v", got.calls, want)
	}
	for i := range want {
		if got.calls[i] != want[i] {
			t.Fatalf("calls %v, want %v", got.calls, want)
		}
	}
	if got := funcopt.Collect[config, option](nil); got.calls != nil {
		t.Errorf("no options gave %v, want the zero configuration", got)
	}
}
