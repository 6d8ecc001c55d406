package pkgerr_test

import (
	"errors"
	"testing"

	"github.com/flatkit/flatkit/internal/pkgerr"
)

func TestErrorfPrefixOnce(t *testing.T) {
	cause := errors.New("the cause")
	inner := pkgerr.Errorf("a: ", "Op: %w", cause)
	other := pkgerr.Errorf("b: ", "Other: bad")
	for _, c := range []struct {
		err  error
		want string
	}{
		{inner, "a: Op: the cause"},
		{pkgerr.Errorf("a: ", "outer: %w", inner), "a: outer: Op: the cause"},
		{pkgerr.Errorf("a: ", "outer: %v", inner), "a: outer: Op: the cause"},
		{pkgerr.Errorf("a: ", "outer: %w", other), "a: outer: b: Other: bad"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	if err := pkgerr.Errorf("a: ", "outer: %w", inner); !errors.Is(err, cause) || !errors.Is(err, inner) {
		t.Errorf("%v: the causes are not reachable with errors.Is", err)
	}
	if !pkgerr.Of(inner, "a: ") || pkgerr.Of(inner, "b: ") || pkgerr.Of(cause, "a: ") {
		t.Error("Of: wrong package")
	}
}
