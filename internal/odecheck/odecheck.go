package odecheck

import (
	"errors"
	"regexp"
	"slices"
	"strings"

	"github.com/flatkit/flatkit/ode"
)

// T is the part of *testing.T that the checks use.
type T interface {
	Helper()
	Errorf(format string, args ...any)
}

// Cause checks that err has cause as its cause and, if it holds a
// solve's *ode.Error, that its Retcode is Failed: a callback's failure,
// never a NonFinite.
func Cause(t T, what string, err, cause error) {
	t.Helper()
	if !errors.Is(err, cause) {
		t.Errorf("%s: %v, want %v as the cause", what, err, cause)
		return
	}
	var oe *ode.Error
	if errors.As(err, &oe) && oe.Code != ode.Failed {
		t.Errorf("%s: %v: Retcode %v, want Failed", what, err, oe.Code)
	}
}

// Failures checks an ensemble's error and its failed trajectories: those
// of the indices want, in order, each with cause as its cause.
func Failures(t T, what string, err error, errs []ode.TrajectoryError, cause error, want ...int) {
	t.Helper()
	Cause(t, what, err, cause)
	got := make([]int, len(errs))
	for i, te := range errs {
		got[i] = te.Index
		Cause(t, what, te, cause)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: trajectories %v failed, want %v", what, got, want)
	}
}

// adPrefix is ad's package prefix as a word ("ad:", not the end of "load:"
// or "odead:").
var adPrefix = regexp.MustCompile(`\bad:`)

// Prefixed checks that err's message starts with prefix, holds it once
// and never ad's "ad:", and contains want; and, when as is not nil, that
// errors.As finds the type as points to.
func Prefixed(t T, err error, prefix, want string, as any) {
	t.Helper()
	if err == nil {
		t.Errorf("no error, want one with %q", want)
		return
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) || strings.Count(msg, strings.TrimSpace(prefix)) != 1 {
		t.Errorf("%q: want the prefix %q once, at the start", msg, prefix)
	}
	if adPrefix.MatchString(msg) {
		t.Errorf("%q says ad's prefix", msg)
	}
	if !strings.Contains(msg, want) {
		t.Errorf("%q: want it to contain %q", msg, want)
	}
	if as != nil && !errors.As(err, as) {
		t.Errorf("%q: errors.As(%T) = false", msg, as)
	}
}
