package cluster

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
	"unsafe"
)

// The wire format: three messages, each a fixed header (a 4-byte magic, the
// format version, the kind of request and the precision) followed by
// little-endian fields. Every variable-length field has a length prefix
// that is checked against a limit and against the bytes that remain before
// anything is allocated, so a message allocates at most what it is long.

// wireVersion 2 carries all ten of ode.Stats' counters in a result
// (version 1: the first five), so that a stiff ensemble's Newton and
// linear-solver counts arrive as computed.
const wireVersion = 2

// statsLen is the number of ode.Stats counters a result carries.
const statsLen = 10

var (
	magicRequest = [4]byte{'F', 'K', 'R', 'Q'}
	magicShard   = [4]byte{'F', 'K', 'S', 'H'}
	magicResult  = [4]byte{'F', 'K', 'R', 'S'}
)

// Limits of what a message may hold. A message beyond them is refused.
const (
	// MaxNameLen is the longest registered name.
	MaxNameLen = 64
	// MaxArgs is the largest argument blob of a request (bytes).
	MaxArgs = 1 << 20
	// MaxTheta is the largest parameter vector (float32 values, 256 MiB).
	MaxTheta = 1 << 26
	// MaxIndices is the longest Indices list of a gradient request.
	MaxIndices = 1 << 24
	// MaxTrajectories bounds N, the positions and the shard indices.
	MaxTrajectories = math.MaxInt32
	// MaxValues bounds each array of a result (outputs, accumulator, dL/dθ,
	// dL/du0).
	MaxValues = 1 << 26
	// MaxMessage bounds the length of an error message or a failure reason
	// carried in a result (bytes; longer ones are cut at encoding).
	MaxMessage = 4096
	// MaxErrorText bounds the text of one failed trajectory's error in a
	// result: its message and its cause's together (bytes). A worker cuts
	// a longer one, ending it with ErrorTextCut, and a decoder refuses
	// one above it. So each failure counts against the bound of a stored
	// result at a fixed maximum.
	MaxErrorText = 1024
	// ErrorTextCut ends an error text cut to MaxErrorText.
	ErrorTextCut = " …[cut]"
	// maxInnerText is the part of MaxErrorText a cut leaves to the cause.
	maxInnerText = MaxErrorText / 4
	// maxBlob bounds the size an offloaded result may claim (the
	// coordinator reads at most what the request implies, far less).
	maxBlob = 1 << 40
	// maxCount bounds the counters of a result's Stats.
	maxCount = 1 << 53
)

// kind is what a request computes.
type kind uint8

const (
	kindSolve    kind = 1 // Ensemble.Solve: outputs and/or Reduce sums
	kindGradient kind = 2 // Ensemble.Gradient
)

func (k kind) String() string {
	switch k {
	case kindSolve:
		return "solve"
	case kindGradient:
		return "gradient"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// precision is the state type of an ensemble: the size of T in bytes.
type precision uint8

const (
	precFloat32 precision = 4
	precFloat64 precision = 8
)

func (p precision) String() string {
	switch p {
	case precFloat32:
		return "float32"
	case precFloat64:
		return "float64"
	}
	return fmt.Sprintf("precision(%d)", uint8(p))
}

// float is ode.Float.
type float interface{ ~float32 | ~float64 }

func precisionOf[T float]() precision {
	var z T
	if unsafe.Sizeof(z) == 4 {
		return precFloat32
	}
	return precFloat64
}

// ErrMalformed is wrapped by every error of decoding a message.
var ErrMalformed = errors.New("malformed message")

// reqID names a request: 16 random bytes, written as 32 hex digits in
// subjects and object names.
type reqID [16]byte

func (id reqID) String() string { return hex.EncodeToString(id[:]) }

// thetaHash is the SHA-256 of θ's little-endian bytes.
func thetaHash(theta []float32) [32]byte {
	h := sha256.New()
	var buf [4096]byte
	for len(theta) > 0 {
		n := min(len(theta), len(buf)/4)
		for i, v := range theta[:n] {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		h.Write(buf[:4*n])
		theta = theta[n:]
	}
	var s [32]byte
	h.Sum(s[:0])
	return s
}

func encodeTheta(theta []float32) []byte {
	b := make([]byte, 4*len(theta))
	for i, v := range theta {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func decodeTheta(b []byte) []float32 {
	t := make([]float32, len(b)/4)
	for i := range t {
		t[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return t
}

// validName reports whether s may name an ensemble (or a prefix): 1 to
// MaxNameLen letters, digits, '-' or '_' (it becomes a subject token and a
// consumer name).
func validName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// --- writer and reader -------------------------------------------------

type writer struct{ b []byte }

func (w *writer) u8(v uint8)    { w.b = append(w.b, v) }
func (w *writer) u16(v uint16)  { w.b = binary.LittleEndian.AppendUint16(w.b, v) }
func (w *writer) u32(v uint32)  { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *writer) u64(v uint64)  { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *writer) f64(v float64) { w.u64(math.Float64bits(v)) }
func (w *writer) raw(p []byte)  { w.b = append(w.b, p...) }
func (w *writer) str8(s string) { w.u8(uint8(len(s))); w.b = append(w.b, s...) }
func (w *writer) str16(s string) {
	s = truncUTF8(s, MaxMessage)
	w.u16(uint16(len(s)))
	w.b = append(w.b, s...)
}

func (w *writer) header(magic [4]byte, k kind, p precision, flags uint8) {
	w.raw(magic[:])
	w.u8(wireVersion)
	w.u8(uint8(k))
	w.u8(uint8(p))
	w.u8(flags)
}

// truncUTF8 cuts s to at most n bytes on a rune boundary.
func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.RuneStart(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && !utf8.ValidString(s[len(s)-1:]) {
		s = s[:len(s)-1]
	}
	return s
}

// writeFloats writes len(v) and v's values.
func writeFloats[T float](w *writer, v []T) {
	w.u32(uint32(len(v)))
	writeValues(w, v)
}

func writeValues[T float](w *writer, v []T) {
	if precisionOf[T]() == precFloat32 {
		for _, x := range v {
			w.u32(math.Float32bits(float32(x)))
		}
		return
	}
	for _, x := range v {
		w.u64(math.Float64bits(float64(x)))
	}
}

type reader struct {
	b    []byte
	what string
	err  error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("cluster: decode %s: %s: %w", r.what, fmt.Sprintf(format, args...), ErrMalformed)
	}
}

func (r *reader) take(n int, field string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail("%s: %d bytes wanted, %d left", field, n, len(r.b))
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) u8(field string) uint8 {
	if p := r.take(1, field); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u16(field string) uint16 {
	if p := r.take(2, field); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (r *reader) u32(field string) uint32 {
	if p := r.take(4, field); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64(field string) uint64 {
	if p := r.take(8, field); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (r *reader) f64(field string) float64 { return math.Float64frombits(r.u64(field)) }

// int32 reads a u32 that must be at most limit.
func (r *reader) count(field string, limit int) int {
	v := r.u32(field)
	if r.err == nil && uint64(v) > uint64(limit) {
		r.fail("%s = %d, want ≤ %d", field, v, limit)
		return 0
	}
	return int(v)
}

func (r *reader) str8(field string, limit int) string {
	return r.str(field, int(r.u8(field+" length")), limit)
}

func (r *reader) str16(field string) string {
	return r.str(field, int(r.u16(field+" length")), MaxMessage)
}

// str reads the n bytes of a UTF-8 string whose length (≤ limit) was just
// read.
func (r *reader) str(field string, n, limit int) string {
	if r.err == nil && n > limit {
		r.fail("%s: length %d, want ≤ %d", field, n, limit)
		return ""
	}
	p := r.take(n, field)
	if r.err == nil && !utf8.Valid(p) {
		r.fail("%s: not UTF-8", field)
	}
	return string(p)
}

// floats reads a count (≤ MaxValues) and that many values of size bytes,
// returned as raw bytes (checked against the remaining length first).
func (r *reader) floats(field string, size int) (raw []byte, n int) {
	n = r.count(field+" count", MaxValues)
	if r.err != nil {
		return nil, 0
	}
	if n > len(r.b)/size {
		r.fail("%s: %d values of %d bytes, %d bytes left, want ≥ %d", field, n, size, len(r.b), n*size)
		return nil, 0
	}
	return r.take(n*size, field), n
}

// header reads a message's magic, version, kind, precision and flags
// byte, failing on flags outside known (a result's flags byte is its
// status, which decodeResult checks itself).
func (r *reader) header(magic [4]byte, known uint8) (kind, precision, uint8) {
	m := r.take(4, "magic")
	if r.err != nil {
		return 0, 0, 0
	}
	if [4]byte(m) != magic {
		r.fail("magic %q, want %q", m, magic[:])
		return 0, 0, 0
	}
	if v := r.u8("version"); r.err == nil && v != wireVersion {
		r.fail("version %d, want %d", v, wireVersion)
	}
	k := kind(r.u8("kind"))
	if r.err == nil && k != kindSolve && k != kindGradient {
		r.fail("kind %d, want %d (solve) or %d (gradient)", k, kindSolve, kindGradient)
	}
	p := precision(r.u8("precision"))
	if r.err == nil && p != precFloat32 && p != precFloat64 {
		r.fail("precision %d, want 4 (float32) or 8 (float64)", p)
	}
	flags := r.u8("flags")
	if r.err == nil && flags&^known != 0 {
		want := fmt.Sprintf("only bits of %#x", known)
		if known == 0 {
			want = "0"
		}
		r.fail("unknown flags %#x, want %s", flags, want)
	}
	return k, p, flags
}

func (r *reader) end() {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
}

// rawToFloats converts n little-endian values of T's size (raw has
// exactly n·size bytes).
func rawToFloats[T float](raw []byte, n int) []T {
	if raw == nil {
		return nil
	}
	v := make([]T, n)
	if precisionOf[T]() == precFloat32 {
		for i := range v {
			v[i] = T(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		}
		return v
	}
	for i := range v {
		v[i] = T(math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:])))
	}
	return v
}

// --- the request -------------------------------------------------------

// request is the descriptor of one request, stored once in the object store
// beside θ.
type request struct {
	ID         reqID
	Kind       kind
	Prec       precision
	Name       string
	Args       []byte
	ThetaHash  [32]byte
	ThetaLen   int
	HasTol     bool
	RelTol     float64
	AbsTol     float64
	HasIndices bool
	Indices    []int
	PerU0      bool
	Shards     int // number of shards
}

const (
	reqFlagTol     = 1 << 0
	reqFlagIndices = 1 << 1
	reqFlagPerU0   = 1 << 2
	reqFlagsAll    = reqFlagTol | reqFlagIndices | reqFlagPerU0
)

// flagIf returns f if b, else 0.
func flagIf(b bool, f uint8) uint8 {
	if b {
		return f
	}
	return 0
}

func encodeRequest(q *request) []byte {
	w := &writer{b: make([]byte, 0, 128+len(q.Args)+4*len(q.Indices))}
	flags := flagIf(q.HasTol, reqFlagTol) | flagIf(q.HasIndices, reqFlagIndices) | flagIf(q.PerU0, reqFlagPerU0)
	w.header(magicRequest, q.Kind, q.Prec, flags)
	w.raw(q.ID[:])
	w.str8(q.Name)
	w.u32(uint32(len(q.Args)))
	w.raw(q.Args)
	w.raw(q.ThetaHash[:])
	w.u32(uint32(q.ThetaLen))
	w.f64(q.RelTol)
	w.f64(q.AbsTol)
	w.u32(uint32(q.Shards))
	w.u32(uint32(len(q.Indices)))
	for _, i := range q.Indices {
		w.u32(uint32(i))
	}
	return w.b
}

// decodeRequest decodes and validates a request descriptor.
func decodeRequest(b []byte) (*request, error) {
	r := &reader{b: b, what: "request"}
	q := &request{}
	var flags uint8
	q.Kind, q.Prec, flags = r.header(magicRequest, reqFlagsAll)
	q.HasTol, q.HasIndices, q.PerU0 = flags&reqFlagTol != 0, flags&reqFlagIndices != 0, flags&reqFlagPerU0 != 0
	copy(q.ID[:], r.take(16, "id"))
	q.Name = r.str8("name", MaxNameLen)
	if r.err == nil && !validName(q.Name) {
		r.fail("name %q: want 1 to %d letters, digits, '-' or '_'", q.Name, MaxNameLen)
	}
	na := r.count("args length", MaxArgs)
	q.Args = append([]byte(nil), r.take(na, "args")...)
	copy(q.ThetaHash[:], r.take(32, "θ hash"))
	q.ThetaLen = r.count("θ length", MaxTheta)
	q.RelTol, q.AbsTol = r.f64("rel tol"), r.f64("abs tol")
	if r.err == nil {
		switch {
		case q.HasTol && !(q.RelTol >= 0 && q.AbsTol > 0 && !math.IsInf(q.RelTol, 0) && !math.IsInf(q.AbsTol, 0)):
			r.fail("Tol(%g, %g): want finite rel ≥ 0 and abs > 0", q.RelTol, q.AbsTol)
		case !q.HasTol && (q.RelTol != 0 || q.AbsTol != 0):
			r.fail("tolerances %g, %g without the Tol flag, want 0, 0", q.RelTol, q.AbsTol)
		}
	}
	q.Shards = r.count("shards", MaxTrajectories)
	ni := r.count("indices", MaxIndices)
	if r.err == nil {
		switch {
		case ni > len(r.b)/4:
			r.fail("indices: %d, but %d bytes left, want ≤ %d", ni, len(r.b), len(r.b)/4)
		case q.Kind != kindGradient && (q.HasIndices || q.PerU0):
			r.fail("Indices or PerTrajectoryU0 in a %v request, want a %v request", q.Kind, kindGradient)
		case !q.HasIndices && ni != 0:
			r.fail("%d indices without the Indices flag, want 0", ni)
		}
	}
	if r.err == nil && q.HasIndices {
		q.Indices = make([]int, ni)
		for k := range q.Indices {
			v := r.u32("index")
			if v > MaxTrajectories {
				r.fail("Indices[%d] = %d, want ≤ %d", k, v, MaxTrajectories)
			}
			q.Indices[k] = int(v)
		}
	}
	r.end()
	if r.err != nil {
		return nil, r.err
	}
	return q, nil
}

// --- the shard ---------------------------------------------------------

// shardMsg is one work item: a shard of a request, naming the request and
// the hash of its θ.
type shardMsg struct {
	Req       reqID
	Kind      kind
	Prec      precision
	ThetaHash [32]byte
	Index     int // the shard's number in the request's shard list
	Attempt   int // the coordinator's publication of it (0, then 1, … after invalid results)
	Lo, Hi    int
	Seed      uint64
}

const shardMsgLen = 8 + 16 + 32 + 4*4 + 8

func encodeShard(s *shardMsg) []byte {
	w := &writer{b: make([]byte, 0, shardMsgLen)}
	w.header(magicShard, s.Kind, s.Prec, 0)
	w.raw(s.Req[:])
	w.raw(s.ThetaHash[:])
	w.shardPos(s.Index, s.Attempt, s.Lo, s.Hi, s.Seed)
	return w.b
}

// shardPos writes a shard's index, attempt, range and seed, which a shard
// message and its result carry alike.
func (w *writer) shardPos(index, attempt, lo, hi int, seed uint64) {
	w.u32(uint32(index))
	w.u32(uint32(attempt))
	w.u32(uint32(lo))
	w.u32(uint32(hi))
	w.u64(seed)
}

// shardPos reads what writer.shardPos wrote, with the same limits in a
// shard message and a result.
func (r *reader) shardPos() (index, attempt, lo, hi int, seed uint64) {
	index = r.count("index", MaxTrajectories)
	attempt = r.count("attempt", 1<<16)
	lo = r.count("lo", MaxTrajectories)
	hi = r.count("hi", MaxTrajectories)
	seed = r.u64("seed")
	return index, attempt, lo, hi, seed
}

func decodeShard(b []byte) (*shardMsg, error) {
	r := &reader{b: b, what: "shard"}
	s := &shardMsg{}
	s.Kind, s.Prec, _ = r.header(magicShard, 0)
	copy(s.Req[:], r.take(16, "request id"))
	copy(s.ThetaHash[:], r.take(32, "θ hash"))
	s.Index, s.Attempt, s.Lo, s.Hi, s.Seed = r.shardPos()
	if r.err == nil && s.Hi < s.Lo {
		r.fail("shard [%d, %d): hi < lo, want lo ≤ hi", s.Lo, s.Hi)
	}
	r.end()
	if r.err != nil {
		return nil, r.err
	}
	return s, nil
}
