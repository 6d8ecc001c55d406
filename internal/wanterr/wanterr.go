package wanterr

import "strings"

// TB is what Mentions needs of a *testing.T, a *testing.B or a *rapid.T.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}

// Mentions fails t at once if err is nil, and reports each fragment that
// err's text does not contain.
func Mentions(t TB, err error, frags ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", frags)
		return // for a TB whose Fatalf returns
	}
	for _, f := range frags {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not mention %q", err, f)
		}
	}
}
