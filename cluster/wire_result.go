package cluster

// --- the result --------------------------------------------------------

// wireErr is a TrajectoryError on the wire: the index, the message, and the
// fields of the *ode.Error it wraps, if any.
type wireErr struct {
	Index     int
	IsODE     bool
	HasInner  bool
	Code      int8
	T, Dt     float64
	Component int32
	Prefixed  bool   // Err is an ode error: it reads "ode: " + Msg
	Msg       string // the TrajectoryError's Err.Error(), or its Unprefixed() if Prefixed
	Inner     string // the *ode.Error's Err.Error() if HasInner
}

const (
	resOK     = 0
	resFailed = 1
	// resOffloaded: the result (an encoded resOK result) is the object
	// REQ.res.BLOB of the object store, of BlobSize bytes with SHA-256
	// BlobSum: it was larger than the server's max payload.
	resOffloaded = 2
)

// resultMsg is one shard's partial result, a reference to it in the object
// store, or a worker's report that it gave up on the shard.
type resultMsg struct {
	Req       reqID
	Kind      kind
	Prec      precision
	Status    uint8
	Index     int
	Attempt   int
	Lo, Hi    int
	Seed      uint64
	Delivered int    // the shard message's delivery count at the worker
	Worker    string // the worker's id
	Reason    string // Status == resFailed: why

	// Status == resOffloaded: where the result is.
	Blob     [16]byte
	BlobSize int
	BlobSum  [32]byte

	Stats [statsLen]int64 // ode.Stats' counters, in its fields' order (statsArray)

	// Solve.
	U   []byte // raw, NU values of Prec bytes
	NU  int
	Acc []float64

	// Gradient.
	Value float64
	Count int
	P     []float64
	U0    []byte // raw, NU0 values of Prec bytes
	NU0   int

	Errors []wireErr
}

const (
	errFlagODE      = 1 << 0
	errFlagInner    = 1 << 1
	errFlagPrefixed = 1 << 2
	minErrLen       = 4 + 1 + 1 + 8 + 8 + 4 + 2 + 2
)

func encodeResult(m *resultMsg) []byte {
	n := 128 + len(m.U) + len(m.U0) + 8*len(m.Acc) + 8*len(m.P) + len(m.Errors)*(minErrLen+64)
	w := &writer{b: make([]byte, 0, n)}
	w.header(magicResult, m.Kind, m.Prec, m.Status)
	w.raw(m.Req[:])
	w.shardPos(m.Index, m.Attempt, m.Lo, m.Hi, m.Seed)
	w.u32(uint32(m.Delivered))
	w.str8(truncUTF8(m.Worker, MaxNameLen))
	switch m.Status {
	case resFailed:
		w.str16(m.Reason)
		return w.b
	case resOffloaded:
		w.raw(m.Blob[:])
		w.u64(uint64(m.BlobSize))
		w.raw(m.BlobSum[:])
		return w.b
	}
	for _, s := range m.Stats {
		w.u64(uint64(s))
	}
	switch m.Kind {
	case kindSolve:
		w.u32(uint32(m.NU))
		w.raw(m.U)
		writeFloats(w, m.Acc)
	case kindGradient:
		w.f64(m.Value)
		w.u32(uint32(m.Count))
		writeFloats(w, m.P)
		w.u32(uint32(m.NU0))
		w.raw(m.U0)
	}
	w.u32(uint32(len(m.Errors)))
	for _, e := range m.Errors {
		w.u32(uint32(e.Index))
		w.u8(flagIf(e.IsODE, errFlagODE) | flagIf(e.HasInner, errFlagInner) | flagIf(e.Prefixed, errFlagPrefixed))
		w.u8(uint8(e.Code))
		w.f64(e.T)
		w.f64(e.Dt)
		w.u32(uint32(e.Component))
		w.str16(e.Msg)
		w.str16(e.Inner)
	}
	return w.b
}

// decodeResult decodes a result and checks what can be checked without the
// request (the sizes of its arrays against the shard are checked by the
// coordinator, which knows the ensemble).
func decodeResult(b []byte) (*resultMsg, error) {
	r := &reader{b: b, what: "result"}
	m := &resultMsg{}
	m.Kind, m.Prec, m.Status = r.header(magicResult, 0xff) // the flags byte is the status, checked below
	if r.err == nil && m.Status != resOK && m.Status != resFailed && m.Status != resOffloaded {
		r.fail("status %d, want %d (ok), %d (failed) or %d (offloaded)", m.Status, resOK, resFailed, resOffloaded)
	}
	copy(m.Req[:], r.take(16, "request id"))
	m.Index, m.Attempt, m.Lo, m.Hi, m.Seed = r.shardPos()
	m.Delivered = r.count("delivered", MaxTrajectories)
	m.Worker = r.str8("worker", MaxNameLen)
	if r.err == nil && m.Hi < m.Lo {
		r.fail("shard [%d, %d): hi < lo, want lo ≤ hi", m.Lo, m.Hi)
	}
	switch m.Status {
	case resFailed:
		m.Reason = r.str16("reason")
		r.end()
		if r.err != nil {
			return nil, r.err
		}
		return m, nil
	case resOffloaded:
		copy(m.Blob[:], r.take(16, "object id"))
		size := r.u64("object size")
		if r.err == nil && size > maxBlob {
			r.fail("object size %d, want ≤ %d", size, uint64(maxBlob))
		}
		m.BlobSize = int(size)
		copy(m.BlobSum[:], r.take(32, "object SHA-256"))
		r.end()
		if r.err != nil {
			return nil, r.err
		}
		return m, nil
	}
	for k := range m.Stats {
		v := r.u64("stats")
		if r.err == nil && v > maxCount {
			r.fail("stats[%d] = %d, want ≤ 2⁵³", k, v)
		}
		m.Stats[k] = int64(v)
	}
	size := int(m.Prec)
	switch m.Kind {
	case kindSolve:
		m.U, m.NU = r.floats("outputs", max(size, 1))
		raw, na := r.floats("accumulator", 8)
		if r.err == nil {
			m.Acc = rawToFloats[float64](raw, na)
		}
	case kindGradient:
		m.Value = r.f64("value")
		m.Count = r.count("count", MaxTrajectories)
		raw, np := r.floats("dL/dθ", 8)
		if r.err == nil {
			m.P = rawToFloats[float64](raw, np)
		}
		m.U0, m.NU0 = r.floats("dL/du0", max(size, 1))
	}
	ne := r.count("errors", MaxTrajectories)
	if r.err == nil {
		switch {
		case ne > m.Hi-m.Lo:
			r.fail("%d errors in a shard of %d, want ≤ %d", ne, m.Hi-m.Lo, m.Hi-m.Lo)
		case ne > len(r.b)/minErrLen:
			r.fail("%d errors, %d bytes left, want ≤ %d", ne, len(r.b), len(r.b)/minErrLen)
		}
	}
	if r.err == nil && ne > 0 {
		m.Errors = make([]wireErr, ne)
		for k := range m.Errors {
			e := &m.Errors[k]
			e.Index = r.count("error index", MaxTrajectories)
			f := r.u8("error flags")
			if r.err == nil && f&^(errFlagODE|errFlagInner|errFlagPrefixed) != 0 {
				r.fail("error %d: unknown flags %#x, want only bits of %#x", k, f, errFlagODE|errFlagInner|errFlagPrefixed)
			}
			e.IsODE, e.HasInner, e.Prefixed = f&errFlagODE != 0, f&errFlagInner != 0, f&errFlagPrefixed != 0
			e.Code = int8(r.u8("error code"))
			e.T, e.Dt = r.f64("error t"), r.f64("error dt")
			e.Component = int32(r.u32("error component"))
			e.Msg = r.str16("error message")
			e.Inner = r.str16("error cause")
			if r.err == nil && len(e.Msg)+len(e.Inner) > MaxErrorText {
				r.fail("error %d: %d bytes of text, want ≤ %d", k, len(e.Msg)+len(e.Inner), MaxErrorText)
			}
			if r.err == nil && !e.IsODE && (e.HasInner || e.Inner != "") {
				r.fail("error %d: a cause without an ode.Error", k)
			}
			if r.err != nil {
				break
			}
		}
	}
	r.end()
	if r.err != nil {
		return nil, r.err
	}
	return m, nil
}
