package funcopt_test

import (
	"slices"
	"testing"

	"github.com/flatkit/flatkit/internal/funcopt"
)

type config struct{ calls []int }

type option func(*config)

func add(i int) option { return func(c *config) { c.calls = append(c.calls, i) } }

func TestCollectAppliesInOrderAndSkipsNil(t *testing.T) {
	got := funcopt.Collect([]option{add(1), nil, add(2), add(3)})
	if want := []int{1, 2, 3}; !slices.Equal(got.calls, want) {
		t.Errorf("calls %v, want %v", got.calls, want)
	}
	if got := funcopt.Collect[config, option](nil); got.calls != nil {
		t.Errorf("no options gave %v, want the zero configuration", got)
	}
}

func TestApplyStartsFromTheGivenConfiguration(t *testing.T) {
	cfg := config{calls: []int{0}}
	funcopt.Apply(&cfg, []option{add(1), nil, add(2)})
	if want := []int{0, 1, 2}; !slices.Equal(cfg.calls, want) {
		t.Errorf("calls %v, want %v", cfg.calls, want)
	}
}
