package flat

import (
	"runtime"
	"sync/atomic"
	"time"
)

// DefaultMinChunk is the chunk length ParallelFor uses when it is given
// minChunk ≤ 0. It is about where handing a chunk to another goroutine
// starts to pay for an elementwise pass that streams several float32
// slices from memory; BenchmarkParallelFor holds the figures.
const DefaultMinChunk = 1 << 15

// ParallelFor calls fn on disjoint chunks [lo, hi) that together cover
// [0, n), and returns when every call has returned. It is the loop driver for
// one fused pass over several slices of equal length, such as an optimiser's
// update of parameters, gradients and state:
//
//	// built once, at setup; the slices are fields of o, set before each call
//	o.step = func(lo, hi int) {
//		θ, g, m := o.θ[lo:hi], o.g[lo:hi], o.m[lo:hi]
//		for i := range θ { … }
//	}
//	…
//	flat.ParallelFor(len(o.θ), 0, o.step)
//
// The range is split into at most as many chunks as the thread limit
// allows: runtime.GOMAXPROCS, or less if SetMaxThreads set it lower. Each
// chunk is at least minChunk long, DefaultMinChunk if minChunk ≤ 0. Each
// starts on a multiple of 16 elements, so that chunks of 64-byte-aligned
// slices never share a cache line. With fewer than 2·minChunk elements, or
// a limit of one thread, fn(0, n) runs on the calling goroutine: no
// goroutine, no channel, no allocation. Otherwise the calling goroutine
// runs chunks itself and hands the others to idle workers of a small pool.
// A chunk no worker is free for runs on the caller. So ParallelFor never
// waits for a worker, and it may be called from inside fn or from several
// goroutines at once.
//
// fn must be safe to call concurrently on disjoint ranges: it may write
// elements in [lo, hi) of its slices and read anything nothing writes. The
// order and number of calls are unspecified; a pass whose result depends on
// the split (a sum, say) must combine per-chunk results itself. A panic in fn
// on a worker goroutine crashes the program, as in any goroutine.
//
// Because fn may be handed to another goroutine, it escapes to the heap: a
// closure literal written at the call site is allocated on every call, even
// when the loop then runs serially. Build the closure once (as above) to keep
// steady state allocation-free; ParallelFor itself allocates nothing after
// its first parallel calls.
func ParallelFor(n, minChunk int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if minChunk <= 0 {
		minChunk = DefaultMinChunk
	}
	p := min(maxThreads(), n/minChunk)
	if p <= 1 {
		fn(0, n)
		return
	}
	parallelRun(n, p, fn)
}

// parallelJob is one ParallelFor call shared with the workers that help:
// each participant takes chunk indices from next until none are left.
//
// The caller waits for the chunks, not for the helpers: a helper that
// takes the job late finds no chunk left, and the caller has already
// returned. The caller waits by yielding until pending reaches 0,
// not by blocking on a channel: a blocked goroutine takes a runtime sudog,
// and those caches, unbalanced between processors, make the runtime
// allocate now and then. The job goes back to parallelFree when its last
// holder lets go (refs).
type parallelJob struct {
	fn      func(lo, hi int)
	n, p    int
	next    atomic.Int64
	pending atomic.Int64 // chunks not yet completed
	refs    atomic.Int32 // the caller plus helpers holding the job
}

// chunk returns the bounds of chunk k of p: k·n/p rounded down to a multiple
// of 16, except at the ends.
func (j *parallelJob) chunk(k int) (lo, hi int) {
	bound := func(k int) int {
		if k >= j.p {
			return j.n
		}
		return (k * j.n / j.p) &^ 15
	}
	return bound(k), bound(k + 1)
}

// work runs chunks until none are left.
func (j *parallelJob) work() {
	for {
		k := int(j.next.Add(1) - 1)
		if k >= j.p {
			return
		}
		if lo, hi := j.chunk(k); lo < hi {
			j.fn(lo, hi)
		}
		j.pending.Add(-1)
	}
}

// release drops one holder's reference; the last one recycles the job.
func (j *parallelJob) release() {
	if j.refs.Add(-1) != 0 {
		return
	}
	j.fn = nil
	select {
	case parallelFree <- j:
	default:
	}
}

var (
	// parallelWork hands jobs to the workers. It is buffered: a job is
	// queued even when no worker is waiting for one. A worker still waking
	// for an earlier job takes it as soon as it is done with that one. With
	// an unbuffered channel the offer failed in that window, and the next
	// pass, however long, ran on the caller alone. A job no worker takes in time is done by its caller; the
	// worker that takes it late finds no chunk left.
	parallelWork = make(chan *parallelJob, 8)
	// parallelWorkers counts the workers started so far.
	parallelWorkers atomic.Int32
	// parallelFree recycles jobs, so steady state does not allocate; it is
	// stocked at the first parallel call (parallelFilled).
	parallelFree   = make(chan *parallelJob, 32)
	parallelFilled atomic.Bool
)

func parallelWorker() {
	for {
		j, _ := awaitJob(parallelWork)
		j.work()
		j.release()
	}
}

// workerSpin is how long a worker of ParallelFor's or Gemm's pool keeps
// polling for its next job before it blocks. A blocked worker's thread
// sleeps, and on a VM waking it takes an inter-processor interrupt through
// the hypervisor. A network's layers come one after another, with short
// serial passes between them. A worker woken for each would lose most of
// what the split saves: a 256³ Gemm on two goroutines took longer than on
// one. OpenMP runtimes spin for the same reason: GOMP_SPINCOUNT,
// KMP_BLOCKTIME. The worker yields between polls, so runnable goroutines
// are not held up.
const workerSpin = 200 * time.Microsecond

// awaitJob receives the next job from ch, polling it for workerSpin before
// blocking.
func awaitJob[J any](ch <-chan J) (J, bool) {
	select {
	case j, ok := <-ch:
		return j, ok
	default:
	}
	start := time.Now()
	for time.Since(start) < workerSpin {
		runtime.Gosched()
		select {
		case j, ok := <-ch:
			return j, ok
		default:
		}
	}
	j, ok := <-ch
	return j, ok
}

func parallelRun(n, p int, fn func(lo, hi int)) {
	// Make sure p-1 workers exist. A worker started just now may not be
	// waiting yet; its chunk then runs here, once.
	for w := parallelWorkers.Load(); int(w) < p-1; w = parallelWorkers.Load() {
		if parallelWorkers.CompareAndSwap(w, w+1) {
			go parallelWorker()
		}
	}
	if parallelFilled.CompareAndSwap(false, true) {
		// Jobs still queued for a late worker are not free yet: stock
		// enough that the queue's worth of them and a few callers never
		// find the list empty, so steady state does not allocate one
		// whenever a worker is slow.
		for range cap(parallelWork) + 8 {
			select {
			case parallelFree <- &parallelJob{}:
			default:
			}
		}
	}
	var j *parallelJob
	select {
	case j = <-parallelFree:
	default:
		j = &parallelJob{}
	}
	j.fn, j.n, j.p = fn, n, p
	j.next.Store(0)
	j.pending.Store(int64(p))
	j.refs.Store(1)
offer:
	for range p - 1 {
		j.refs.Add(1)
		select {
		case parallelWork <- j:
		default: // the queue is full: the chunks left run here
			j.refs.Add(-1)
			break offer
		}
	}
	j.work()
	for j.pending.Load() != 0 {
		runtime.Gosched() // a helper is finishing its chunk
	}
	j.release()
}
