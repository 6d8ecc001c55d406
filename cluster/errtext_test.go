package cluster

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flatkit/flatkit/ode"
)

// An error text longer than MaxErrorText is cut, on a rune boundary, with
// ErrorTextCut at its end, and still decodes with its *ode.Error; a result
// carrying a longer one is refused.
func TestErrorTextBound(t *testing.T) {
	long := strings.Repeat("é", 3000) // 6000 bytes, two a rune
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"plain", errors.New(long)},
		{"ode with a long cause", &ode.Error{Code: ode.NonFinite, T: 1, Dt: 0.5, Component: 2, Err: errors.New(long)}},
		{"short", errors.New("short")},
	} {
		w := toWireErr(ode.TrajectoryError{Index: 3, Err: tc.err})
		n := len(w.Msg) + len(w.Inner)
		cut := len(tc.err.Error()) > MaxErrorText
		switch {
		case n > MaxErrorText:
			t.Errorf("%s: %d bytes of text, want ≤ %d", tc.name, n, MaxErrorText)
		case !utf8.ValidString(w.Msg) || !utf8.ValidString(w.Inner):
			t.Errorf("%s: cut inside a rune", tc.name)
		case cut != (strings.HasSuffix(w.Msg, ErrorTextCut) || strings.HasSuffix(w.Inner, ErrorTextCut)):
			t.Errorf("%s: cut %v, but the marker says otherwise: %q…", tc.name, cut, w.Msg[:min(len(w.Msg), 40)])
		case !cut && w.Msg != tc.err.Error():
			t.Errorf("%s: %q, want it unchanged", tc.name, w.Msg)
		}
		m := &resultMsg{Req: reqID{1}, Kind: kindSolve, Prec: precFloat64, Lo: 0, Hi: 4, Errors: []wireErr{w}}
		got, err := decodeResult(encodeResult(m))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		te := fromWireErr(got.Errors[0])
		var oe *ode.Error
		if isODE := errors.As(tc.err, &oe); isODE != errors.As(te.Err, &oe) || isODE && oe.Code != ode.NonFinite {
			t.Errorf("%s: decoded %v, want the *ode.Error kept", tc.name, te.Err)
		}
	}
	m := &resultMsg{Req: reqID{1}, Kind: kindSolve, Prec: precFloat64, Lo: 0, Hi: 1,
		Errors: []wireErr{{Index: 0, Msg: strings.Repeat("x", MaxErrorText+1), Component: -1}}}
	if _, err := decodeResult(encodeResult(m)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "bytes of text") {
		t.Errorf("an error text of %d bytes: %v, want refused", MaxErrorText+1, err)
	}
}
