package cluster

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/flatkit/flatkit/ode"
)

func sampleRequests() []*request {
	return []*request{
		{ID: reqID{1, 2, 3}, Kind: kindSolve, Prec: precFloat64, Name: "lv", Args: []byte(`{"n":1000}`), ThetaHash: thetaHash([]float32{1, 2}), ThetaLen: 2, Shards: 63},
		{ID: reqID{9}, Kind: kindGradient, Prec: precFloat32, Name: "a-b_C", Args: nil, ThetaLen: 0, HasTol: true, RelTol: 1e-6, AbsTol: 1e-8,
			HasIndices: true, Indices: []int{3, 0, 3, 7}, PerU0: true, Shards: 1},
		{ID: reqID{4}, Kind: kindGradient, Prec: precFloat64, Name: "x", HasIndices: true, Indices: []int{}},
	}
}

func sampleShards() []*shardMsg {
	return []*shardMsg{
		{Req: reqID{1}, Kind: kindSolve, Prec: precFloat64, ThetaHash: [32]byte{7}, Index: 3, Lo: 48, Hi: 64, Seed: 42},
		{Req: reqID{2}, Kind: kindGradient, Prec: precFloat32, Index: 0, Attempt: 2, Lo: 0, Hi: 0, Seed: math.MaxUint64},
	}
}

func sampleResults() []*resultMsg {
	u := floatBytes([]float64{1, 2, math.NaN(), math.NaN(), 5, 6})
	return []*resultMsg{
		{Req: reqID{1}, Kind: kindSolve, Prec: precFloat64, Index: 1, Lo: 16, Hi: 19, Seed: 5, Delivered: 1, Worker: "w1",
			Stats: [statsLen]int64{10, 0, 0, 5, 1, 7, 1, 30, 2, 1}, U: u, NU: 6, Acc: []float64{1.5, -2},
			Errors: []wireErr{{Index: 17, IsODE: true, Code: int8(ode.MaxStepsReached), T: 3, Dt: 1e-3, Component: -1, Msg: (&ode.Error{Code: ode.MaxStepsReached, T: 3, Dt: 1e-3}).Error()}}},
		{Req: reqID{2}, Kind: kindGradient, Prec: precFloat32, Index: 0, Lo: 0, Hi: 2, Delivered: 3, Worker: "w2",
			Value: 0.25, Count: 1, P: []float64{0.1, 0.2, 0.3, 0.4}, U0: floatBytes([]float32{1, 2, float32(math.NaN()), float32(math.NaN())}), NU0: 4,
			Errors: []wireErr{{Index: 9, Msg: "Gradient: the loss returned NaN", Prefixed: true, Component: -1}, {Index: 3, IsODE: true, HasInner: true, Inner: "singular", Msg: "x"}}[:1]},
		{Req: reqID{3}, Kind: kindSolve, Prec: precFloat64, Status: resFailed, Index: 2, Lo: 4, Hi: 6, Delivered: 5, Worker: "w3", Reason: "refused: θ"},
		{Req: reqID{4}, Kind: kindGradient, Prec: precFloat32, Status: resOffloaded, Index: 7, Attempt: 1, Lo: 70, Hi: 80, Delivered: 2, Worker: "w4",
			Blob: [16]byte{0xab, 1}, BlobSize: 3 << 20, BlobSum: [32]byte{9, 8, 7}},
	}
}

// Encodings decode to what was encoded, and re-encode to the same bytes.
func TestWireRoundTrip(t *testing.T) {
	for _, q := range sampleRequests() {
		b := encodeRequest(q)
		d, err := decodeRequest(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(encodeRequest(d), b) || d.Name != q.Name || d.ThetaHash != q.ThetaHash || len(d.Indices) != len(q.Indices) || d.HasIndices != q.HasIndices {
			t.Errorf("request %+v decoded as %+v", q, d)
		}
	}
	for _, s := range sampleShards() {
		b := encodeShard(s)
		d, err := decodeShard(b)
		if err != nil || *d != *s {
			t.Errorf("shard %+v decoded as %+v, %v", s, d, err)
		}
	}
	for _, m := range sampleResults() {
		b := encodeResult(m)
		d, err := decodeResult(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(encodeResult(d), b) || d.Index != m.Index || d.NU != m.NU || len(d.Errors) != len(m.Errors) || d.Reason != m.Reason ||
			d.Blob != m.Blob || d.BlobSize != m.BlobSize || d.BlobSum != m.BlobSum {
			t.Errorf("result %+v decoded as %+v", m, d)
		}
	}
	// An *ode.Error comes back as an *ode.Error with the same message.
	oe := &ode.Error{Code: ode.DtUnderflow, T: 1.25, Dt: 1e-17, Component: -1}
	te := fromWireErr(toWireErr(ode.TrajectoryError{Index: 4, Err: oe}))
	var got *ode.Error
	if !errors.As(te.Err, &got) || *got != *oe || te.Error() != (ode.TrajectoryError{Index: 4, Err: oe}).Error() {
		t.Errorf("ode.Error came back as %#v", te.Err)
	}
}

// Hostile messages: truncations, huge counts on short bodies, bit flips.
// Each is refused with ErrMalformed (or decodes to a valid message), never
// panics, and allocates at most a small multiple of its own length.
func TestWireHostile(t *testing.T) {
	var inputs [][]byte
	for _, q := range sampleRequests() {
		inputs = append(inputs, encodeRequest(q))
	}
	for _, s := range sampleShards() {
		inputs = append(inputs, encodeShard(s))
	}
	for _, m := range sampleResults() {
		inputs = append(inputs, encodeResult(m))
	}
	// Counts claiming 2²⁶ values, 2²⁴ indices, 2³¹ errors, with no body.
	huge := encodeResult(&resultMsg{Req: reqID{1}, Kind: kindSolve, Prec: precFloat64, Lo: 0, Hi: 1 << 30})
	binary.LittleEndian.PutUint32(huge[len(huge)-12:], MaxValues)
	inputs = append(inputs, huge)
	hreq := encodeRequest(&request{Kind: kindGradient, Prec: precFloat64, Name: "x", HasIndices: true})
	binary.LittleEndian.PutUint32(hreq[len(hreq)-4:], MaxIndices)
	inputs = append(inputs, hreq)
	hreq2 := encodeRequest(&request{Kind: kindSolve, Prec: precFloat64, Name: "x"})
	binary.LittleEndian.PutUint32(hreq2[8+16+2:], MaxArgs) // the args length
	inputs = append(inputs, hreq2)
	rng := rand.New(rand.NewPCG(1, 2))
	var cases [][]byte
	for _, in := range inputs {
		for n := 0; n <= len(in); n++ {
			cases = append(cases, in[:n])
		}
		for range 200 {
			c := bytes.Clone(in)
			c[rng.IntN(len(c))] ^= byte(1 << rng.IntN(8))
			cases = append(cases, c)
		}
	}
	var ms runtime.MemStats
	for _, c := range cases {
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		decodeAll(t, c)
		runtime.ReadMemStats(&ms)
		if a := ms.TotalAlloc - before; a > uint64(16*len(c)+16<<10) {
			t.Fatalf("decoding %d bytes allocated %d: %x", len(c), a, c)
		}
	}
}

// A malformed message, or a result that does not fit its shard, is refused
// with an error naming what came and what was wanted.
func TestWireErrorsSayWhatWasWanted(t *testing.T) {
	flagged := encodeShard(sampleShards()[0])
	flagged[7] = 1 // the flags byte, after magic, version, kind and precision
	status := encodeResult(sampleResults()[0])
	status[7] = 9
	grad := func(m *resultMsg) error {
		_, err := gradPart(fuzzSpec[float64](), &request{Kind: kindGradient}, ode.Shard{Lo: 0, Hi: 2}, m)
		return err
	}
	tests := []struct {
		name      string
		err       error
		want      string
		malformed bool // wraps ErrMalformed
	}{
		{"shard flags", decodeErr(decodeShard, flagged), "unknown flags 0x1, want 0", true},
		{"shard hi < lo", decodeErr(decodeShard, encodeShard(&shardMsg{Kind: kindSolve, Prec: precFloat64, Lo: 5, Hi: 2})),
			"shard [5, 2): hi < lo, want lo ≤ hi", true},
		{"tolerances without Tol", decodeErr(decodeRequest, encodeRequest(&request{Kind: kindSolve, Prec: precFloat64, Name: "x", RelTol: 1})),
			"tolerances 1, 0 without the Tol flag, want 0, 0", true},
		{"indices without the flag", decodeErr(decodeRequest, encodeRequest(&request{Kind: kindGradient, Prec: precFloat64, Name: "x", Indices: []int{1}})),
			"1 indices without the Indices flag, want 0", true},
		{"indices in a solve", decodeErr(decodeRequest, encodeRequest(&request{Kind: kindSolve, Prec: precFloat64, Name: "x", HasIndices: true})),
			"Indices or PerTrajectoryU0 in a solve request, want a gradient request", true},
		{"result status", decodeErr(decodeResult, status), "status 9, want 0 (ok), 1 (failed) or 2 (offloaded)", true},
		{"errors past the shard", decodeErr(decodeResult, encodeResult(&resultMsg{Kind: kindSolve, Prec: precFloat64, Lo: 0, Hi: 1,
			Errors: []wireErr{{Index: 0, Msg: "a"}, {Index: 0, Msg: "b"}}})), "2 errors in a shard of 1, want ≤ 1", true},
		{"count and failures", grad(&resultMsg{P: make([]float64, 4), Count: 1}),
			"count 1 and 0 failures in a shard of 2, want count + failures = 2", false},
		{"NaN value", grad(&resultMsg{P: make([]float64, 4), Count: 2, Value: math.NaN()}),
			"value NaN with count 2, want a number, 0 if the count is 0", false},
	}
	for _, tt := range tests {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error with %q", tt.name, tt.err, tt.want)
		} else if tt.malformed && !errors.Is(tt.err, ErrMalformed) {
			t.Errorf("%s: %v does not wrap ErrMalformed", tt.name, tt.err)
		}
	}
}

func decodeErr[M any](decode func([]byte) (M, error), data []byte) error {
	_, err := decode(data)
	return err
}

// decodeAll decodes data as each message; a decoded one must re-encode to
// the same bytes, and a result is also checked against a small ensemble.
func decodeAll(t testing.TB, data []byte) {
	roundTrip(t, "request", data, decodeRequest, encodeRequest)
	roundTrip(t, "shard", data, decodeShard, encodeShard)
	m, ok := roundTrip(t, "result", data, decodeResult, encodeResult)
	if !ok {
		return
	}
	if m.Status != resOK {
		return
	}
	// The coordinator's checks against an ensemble and its shard never
	// panic either.
	sh := ode.Shard{Lo: m.Lo, Hi: m.Hi, Seed: m.Seed}
	if sh.Hi-sh.Lo > 1<<16 {
		return
	}
	switch {
	case m.Kind == kindSolve && m.Prec == precFloat64:
		solvePart(fuzzSpec[float64](), 2, sh, m)
	case m.Kind == kindSolve:
		solvePart(fuzzSpec[float32](), 2, sh, m)
	case m.Prec == precFloat64:
		gradPart(fuzzSpec[float64](), &request{Kind: kindGradient, PerU0: true}, sh, m)
	default:
		// The request's indices are the request's, not the decoder's
		// allocation: a shared slice, so that TestWireHostile's bound
		// measures the decoding and the checks alone.
		if sh.Hi > len(fuzzIndices) {
			return
		}
		gradPart(fuzzSpec[float32](), &request{Kind: kindGradient, HasIndices: true, Indices: fuzzIndices[:sh.Hi]}, sh, m)
	}
}

// fuzzIndices is the index list of decodeAll's float32 gradient requests.
var fuzzIndices = make([]int, 1<<17)

func fuzzSpec[T ode.Float]() *Spec[T] {
	return &Spec[T]{Ensemble: ode.Ensemble[T]{
		Base:       ode.Problem[T]{F: func(du, u []T, p []float32, t float64) { copy(du, u) }, U0: []T{1, 1}, T1: 1, P: []float32{1, 2, 3, 4}},
		N:          1 << 20,
		ReduceSize: 2, Reduce: func(acc []float64, i int, out []T) {},
	}}
}

// roundTrip decodes data as a message of the kind what names: one it
// accepts must re-encode to data, and one it rejects must be rejected with
// ErrMalformed. It returns the message and whether it was accepted.
func roundTrip[M any](t testing.TB, what string, data []byte, decode func([]byte) (M, error), encode func(M) []byte) (M, bool) {
	t.Helper()
	m, err := decode(data)
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s error %v does not wrap ErrMalformed", what, err)
		}
		return m, false
	}
	if !bytes.Equal(encode(m), data) {
		t.Fatalf("%s %x re-encodes differently", what, data)
	}
	return m, true
}

func FuzzDecodeRequest(f *testing.F) {
	for _, q := range sampleRequests() {
		f.Add(encodeRequest(q))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		q, ok := roundTrip(t, "request", data, decodeRequest, encodeRequest)
		if ok && (!validName(q.Name) || len(q.Args) > MaxArgs || q.ThetaLen > MaxTheta) {
			t.Fatalf("accepted %+v", q)
		}
	})
}

func FuzzDecodeShard(f *testing.F) {
	for _, s := range sampleShards() {
		f.Add(encodeShard(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if s, ok := roundTrip(t, "shard", data, decodeShard, encodeShard); ok && s.Hi < s.Lo {
			t.Fatalf("accepted %+v", s)
		}
	})
}

func FuzzDecodeResult(f *testing.F) {
	for _, m := range sampleResults() {
		f.Add(encodeResult(m))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeAll(t, data)
	})
}

// FuzzOpenStored: a stored result (the object a resOffloaded message names)
// is accepted only if it hashes to the message's SHA-256 and is a plain
// result of the message's own request, shard, attempt, delivery and worker;
// what is accepted passes the coordinator's checks without a panic. The
// message is decoded from msg (any result, made a reference); data's hash is
// put in it (a worker that hashed a hostile payload) unless fix is false,
// when nothing may pass.
func FuzzOpenStored(f *testing.F) {
	for _, m := range sampleResults() {
		if m.Status == resOK {
			b := encodeResult(m)
			f.Add(b, b, true)
			f.Add(b, b, false)
		}
	}
	f.Fuzz(func(t *testing.T, data, msg []byte, fix bool) {
		ref, err := decodeResult(msg)
		if err != nil {
			ref = &resultMsg{Req: reqID{1}, Kind: kindSolve, Prec: precFloat64, Hi: 4}
		}
		ref.Status, ref.Blob, ref.BlobSize = resOffloaded, [16]byte{7}, len(data)
		ref.BlobSum = sha256.Sum256(data)
		if !fix {
			ref.BlobSum[0] ^= 1 // the message's hash is of other bytes
		}
		m, err := openStored(ref, data)
		if err != nil {
			return
		}
		switch {
		case !fix:
			t.Fatalf("accepted %x, whose hash is not the message's", data)
		case m.Status != resOK || m.Req != ref.Req || m.Kind != ref.Kind || m.Prec != ref.Prec || m.Index != ref.Index ||
			m.Attempt != ref.Attempt || m.Lo != ref.Lo || m.Hi != ref.Hi || m.Seed != ref.Seed || m.Delivered != ref.Delivered || m.Worker != ref.Worker:
			t.Fatalf("accepted %+v for the message %+v", m, ref)
		}
		decodeAll(t, data)
	})
}
