package cluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/cluster/embedded"
	"github.com/flatkit/flatkit/ode"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// fetchResult refuses a stored result that claims more than its bound, or
// whose object has another size than its reference claims, and removes the
// object either way; within the bound, with the size and hash claimed, it
// returns the result.
func TestFetchResultBound(t *testing.T) {
	srv, err := embedded.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	c, err := NewCoordinator(ctx, nc, Config{})
	if err != nil {
		t.Fatal(err)
	}
	q := &request{ID: reqID{5}}
	m := sampleResults()[0]
	m.Req = q.ID
	data := encodeResult(m)
	ref := *m
	ref.Status, ref.BlobSize, ref.BlobSum = resOffloaded, len(data), sha256.Sum256(data)
	for k, tc := range []struct {
		stored []byte
		bound  int
		want   string // "" : accepted
	}{
		{data, len(data) - 1, "want ≤"},
		{append(data[:len(data):len(data)], 0), len(data) + 100, "bytes, want"},
		{data, len(data), ""},
	} {
		r := ref
		r.Blob = [16]byte{byte(k + 1)}
		name := c.cfg.resultObject(q.ID, r.Blob)
		if _, err := c.st.obj.PutBytes(ctx, name, tc.stored); err != nil {
			t.Fatal(err)
		}
		got, err := c.fetchResult(ctx, q, &r, tc.bound)
		switch {
		case tc.want == "" && (err != nil || got.Index != m.Index || got.NU != m.NU):
			t.Errorf("case %d: %+v, %v; want the result", k, got, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("case %d: %v, want an error with %q", k, err, tc.want)
		}
		if _, err := c.st.obj.GetInfo(ctx, name, jetstream.GetObjectInfoShowDeleted()); !errors.Is(err, jetstream.ErrObjectNotFound) {
			t.Errorf("case %d: the object is still there (%v)", k, err)
		}
	}
}

// Every counter of ode.Stats crosses the wire: statsOf undoes statsArray
// for a Stats with each counter distinct (Retcode is not carried).
func TestStatsRoundTrip(t *testing.T) {
	s := ode.Stats{FEvals: 1, JacEvals: 2, LUs: 3, Accepted: 4, Rejected: 5,
		NewtonIters: 6, NewtonFails: 7, LinearIters: 8, LinearFails: 9, ErrTestFails: 10}
	if got := statsOf(statsArray(s)); got != s {
		t.Errorf("statsOf(statsArray(%+v)) = %+v", s, got)
	}
	m := &resultMsg{Req: reqID{1}, Kind: kindSolve, Prec: precFloat64, Lo: 0, Hi: 1, Worker: "w", Stats: statsArray(s),
		U: floatBytes([]float64{1}), NU: 1}
	got, err := decodeResult(encodeResult(m))
	if err != nil {
		t.Fatal(err)
	}
	if statsOf(got.Stats) != s {
		t.Errorf("decoded stats %+v, want %+v", statsOf(got.Stats), s)
	}
}
