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

// unprefixed is an error of a package that is not a pkgerr.Error but can
// give its message without its prefix, as ode's typed errors do.
type unprefixed struct{}

func (unprefixed) Error() string      { return "c: typed: bad" }
func (unprefixed) Unprefixed() string { return "typed: bad" }

// TestKeepAndAdopt checks the two options: a package that keeps its
// prefix keeps it inside a package that adopts others' errors, and loses
// it only inside its own messages.
func TestKeepAndAdopt(t *testing.T) {
	cause := errors.New("the cause")
	a := pkgerr.Package{Prefix: "a: "}
	k := pkgerr.Package{Prefix: "k: ", Keep: true}
	ad := pkgerr.Package{Prefix: "d: ", Adopt: true}
	fromA, fromK := a.Errorf("A: %w", cause), k.Errorf("K: %w", cause)
	if _, ok := fromK.(pkgerr.Unprefixed); ok {
		t.Errorf("%T of a Keep package has an Unprefixed method, want none", fromK)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{fromK, "k: K: the cause"},
		{k.Errorf("outer: %w", fromK), "k: outer: K: the cause"},
		{k.Errorf("outer: %w", fromA), "k: outer: a: A: the cause"},
		{a.Errorf("outer: %w", fromK), "a: outer: k: K: the cause"},
		{ad.Errorf("outer: %w", fromA), "d: outer: A: the cause"},
		{ad.Errorf("outer: %w", fromK), "d: outer: k: K: the cause"},
		{ad.Errorf("outer: %w", unprefixed{}), "d: outer: typed: bad"},
		{a.Errorf("outer: %w", unprefixed{}), "a: outer: c: typed: bad"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
		if !errors.Is(c.err, cause) && !errors.Is(c.err, unprefixed{}) {
			t.Errorf("%v: the cause is not reachable with errors.Is", c.err)
		}
	}
	if err := ad.Errorf("outer: %w", fromK); !errors.Is(err, fromK) {
		t.Errorf("%v: the Keep error is not reachable with errors.Is", err)
	}
	for _, c := range []struct {
		p    pkgerr.Package
		err  error
		want string
	}{
		{k, fromK, "K: the cause"},
		{a, fromK, "k: K: the cause"},
		{ad, fromA, "A: the cause"},
		{ad, cause, "the cause"},
	} {
		if got := c.p.Text(c.err); got != c.want {
			t.Errorf("%q.Text(%v) = %q, want %q", c.p.Prefix, c.err, got, c.want)
		}
	}
	if !k.Of(fromK) || a.Of(fromK) || k.Of(fromA) {
		t.Error("Of: wrong package")
	}
}
