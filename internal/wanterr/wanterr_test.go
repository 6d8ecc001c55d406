package wanterr

import (
	"errors"
	"fmt"
	"testing"
)

// recorder is a TB that records what it is told; Fatalf does not stop it.
type recorder struct{ fatal, errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, a ...any) {
	r.fatal = append(r.fatal, fmt.Sprintf(format, a...))
}
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}

func TestMentions(t *testing.T) {
	var r recorder
	Mentions(&r, errors.New("model: 1: Dense: in 0"), "Dense", "in 0")
	if len(r.fatal)+len(r.errs) != 0 {
		t.Errorf("a matching error was reported: %v %v", r.fatal, r.errs)
	}
	Mentions(&r, errors.New("model: Dense"), "Dense", "in 0", "1:")
	if want := []string{`error "model: Dense" does not mention "in 0"`, `error "model: Dense" does not mention "1:"`}; fmt.Sprint(r.errs) != fmt.Sprint(want) || len(r.fatal) != 0 {
		t.Errorf("missing fragments reported as %q (fatal %q), want %q", r.errs, r.fatal, want)
	}
	r = recorder{}
	Mentions(&r, nil, "x")
	if len(r.fatal) != 1 || r.fatal[0] != `no error, want one mentioning ["x"]` {
		t.Errorf("nil error reported as %q", r.fatal)
	}
}
