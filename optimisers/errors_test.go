package optimisers_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/layout"
	"github.com/flatkit/flatkit/optimisers"
)

var errMine = errors.New("my rule's step is negative, want ≥ 0")

// badRule is a user's rule whose Validate fails with errMine.
type badRule struct{ optimisers.DescentRule }

func (badRule) Validate() error { return errMine }

// TestErrorsPrefixOnce checks that errors from rules nested in chains, paths
// and schedules name the package once, that the causes stay reachable with
// errors.Is and errors.As, and that layout's path errors come through.
func TestErrorsPrefixOnce(t *testing.T) {
	b := layout.NewBuilder()
	b.Group("0").Add("weight", 2, 2).Add("bias", 2)
	lay, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	adam := optimisers.Adam(1e-3)
	adam.Beta1 = 1.5
	tests := []struct {
		name string
		rule optimisers.Rule
		want string
	}{
		{"chain in chain", optimisers.Chain(optimisers.ClipNorm(1), optimisers.Chain(adam)),
			"optimisers: Chain: rule 1: Chain: rule 0: Adam: Beta1 = 1.5, want 0 ≤ Beta1 < 1"},
		{"by path", optimisers.ByPath(lay, []optimisers.PathRule{{Pattern: "*", Rule: optimisers.Chain(adam)}}),
			`optimisers: ByPath: rule 0 ("*"): Chain: rule 0: Adam: Beta1 = 1.5`},
		{"user rule", badRule{}, "optimisers: optimisers_test.badRule: " + errMine.Error()},
		{"user rule in a chain", optimisers.Chain(badRule{}), "optimisers: Chain: rule 0: optimisers_test.badRule: " + errMine.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := optimisers.Setup(tt.rule, lay)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Count(err.Error(), "optimisers:") != 1 {
				t.Errorf("Setup: %v, want %q with the prefix once", err, tt.want)
			}
		})
	}
	_, err = optimisers.Setup(optimisers.Chain(optimisers.ClipNorm(1), badRule{}), lay)
	if !errors.Is(err, errMine) {
		t.Errorf("errors.Is(%v, errMine) = false", err)
	}
	opt := mustSetup(t, optimisers.Descent(0.1), lay)
	err = opt.Freeze("0.wieght")
	var pe *layout.PathError
	if !errors.As(err, &pe) || pe.Path != "0.wieght" || !errors.Is(err, layout.ErrUnknownPath) ||
		!strings.HasPrefix(err.Error(), "optimisers: Freeze: layout: ") || strings.Count(err.Error(), "optimisers:") != 1 {
		t.Errorf("Freeze of an unknown path: %v, want a *layout.PathError behind %q", err, "optimisers: Freeze: ")
	}
}
