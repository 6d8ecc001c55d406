package flat

// The parallel split: the thread limit, the grid of sub-products and the
// worker goroutines that run them.

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Parallel split thresholds. A product with fewer multiply-adds than
// gemmParallelMin stays on the calling goroutine, and each goroutine gets
// at least gemmPerThreadMin multiply-adds. Waking a parked helper goroutine
// is slow on a VM, so a split must save more time than the wake-up takes:
// 256³ splits and 128³ stays whole. BenchmarkGemm and flatkit's bench gemm
// hold the figures. Tests lower the thresholds to exercise large grids on
// small products.
var (
	gemmParallelMin  = 1 << 23
	gemmPerThreadMin = 1 << 22
)

// gemmMaxThreads is the SetMaxThreads setting; 0 means runtime.GOMAXPROCS(0).
var gemmMaxThreads atomic.Int32

// SetMaxThreads sets the largest number of goroutines Gemm uses for one
// product and returns the previous setting. ParallelFor obeys the same
// limit. n ≤ 0 restores the default, runtime.GOMAXPROCS(0) read at each
// call, and is returned as 0. Settings above 1024 count as 1024. So
//
//	defer flat.SetMaxThreads(flat.SetMaxThreads(1))
//
// runs a section single-threaded and restores whatever was set before.
//
// A product of fewer than 2²³ multiply-adds (m·n·k), such as 128³, runs
// on the calling goroutine whatever the setting. A larger one gives each
// goroutine at least 2²² multiply-adds, so 256³ splits in at most four.
// The result does not depend on the setting.
//
// After a job, a worker goroutine polls for the next one for 200 µs before
// it blocks, yielding between polls, as OpenMP runtimes spin: waking a
// blocked thread is slow on a VM.
func SetMaxThreads(n int) (old int) {
	n = min(max(n, 0), 1024)
	return int(gemmMaxThreads.Swap(int32(n)))
}

// MaxThreads is the most goroutines one Gemm or ParallelFor call may use
// now: the SetMaxThreads setting, or GOMAXPROCS. Kernels that choose how
// finely to cut their work read it; the choice must not change results.
func MaxThreads() int { return maxThreads() }

// maxThreads is the most goroutines one Gemm or ParallelFor call may use:
// the SetMaxThreads setting, or GOMAXPROCS.
func maxThreads() int {
	if t := int(gemmMaxThreads.Load()); t > 0 {
		return t
	}
	return runtime.GOMAXPROCS(0)
}

// gemmThreads returns how many goroutines a product of this size gets.
func gemmThreads(m, n, k int) int {
	// float64 avoids overflow on 32-bit platforms; the product is exact
	// enough for a threshold.
	work := float64(m) * float64(n) * float64(k)
	if work < float64(gemmParallelMin) {
		return 1
	}
	t := maxThreads()
	if byWork := work / float64(gemmPerThreadMin); byWork < float64(t) {
		t = int(byWork)
	}
	return max(t, 1)
}

// gemmJob is one sub-product of a parallel Gemm: a block of C, with the
// parts of A and B it needs.
type gemmJob struct {
	ker         *gemmKernel
	tA, tB      bool
	m, n, k     int
	alpha, beta float32
	a           []float32
	lda         int
	b           []float32
	ldb         int
	c           []float32
	ldc         int
	pending     *atomic.Int32 // decremented when the job is done
}

// The worker goroutines, started on demand and never stopped; each owns a
// workspace. Jobs are values in a buffered channel, so handing one out does
// not allocate.
var gemmWorkers struct {
	mu   sync.Mutex
	n    int
	jobs chan gemmJob
}

func gemmWorker(jobs <-chan gemmJob) {
	ws := new(gemmWorkspace)
	for {
		j, _ := awaitJob(jobs)
		gemmSerial(j.ker, ws, j.tA, j.tB, j.m, j.n, j.k, j.alpha, j.a, j.lda, j.b, j.ldb, j.beta, j.c, j.ldc)
		j.pending.Add(-1)
	}
}

// startGemmWorkers makes sure at least n workers run and returns their
// job channel.
func startGemmWorkers(n int) chan gemmJob {
	w := &gemmWorkers
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.jobs == nil {
		w.jobs = make(chan gemmJob, 256)
	}
	for ; w.n < n; w.n++ {
		go gemmWorker(w.jobs)
	}
	return w.jobs
}

// gemmGrid chooses a tm×tn grid of blocks of C, tm·tn ≤ threads, for mt×nt
// tiles: the one whose largest block costs least, counting the block's
// multiply-adds plus a packing charge proportional to its perimeter.
func gemmGrid(threads, mt, nt, mr, nr int) (tm, tn int) {
	const packCost = 16 // a packed element costs about this many tile elements
	best := -1.0
	for i := 1; i <= min(threads, mt); i++ {
		j := min(threads/i, nt)
		bm := float64((mt + i - 1) / i * mr)
		bn := float64((nt + j - 1) / j * nr)
		cost := bm*bn + packCost*(bm+bn)
		if best < 0 || cost < best {
			best, tm, tn = cost, i, j
		}
	}
	return tm, tn
}

// gemmParallel splits C into a grid of blocks along tile boundaries and
// computes them on threads goroutines, the caller's among them.
func gemmParallel(ker *gemmKernel, threads int, tA, tB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	mr, nr := ker.mr, ker.nr
	mt, nt := (m+mr-1)/mr, (n+nr-1)/nr
	tm, tn := gemmGrid(threads, mt, nt, mr, nr)
	if tm*tn <= 1 {
		ws := getGemmWorkspace()
		gemmSerial(ker, ws, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		putGemmWorkspace(ws)
		return
	}
	jobs := startGemmWorkers(tm*tn - 1)
	ws := getGemmWorkspace()
	ws.pending.Store(int32(tm*tn - 1))
	var mine gemmJob
	for bi := 0; bi < tm; bi++ {
		i0 := bi * mt / tm * mr
		i1 := min((bi+1)*mt/tm*mr, m)
		for bj := 0; bj < tn; bj++ {
			j0 := bj * nt / tn * nr
			j1 := min((bj+1)*nt/tn*nr, n)
			job := gemmJob{ker: ker, tA: tA, tB: tB, m: i1 - i0, n: j1 - j0, k: k,
				alpha: alpha, beta: beta, lda: lda, ldb: ldb, ldc: ldc, pending: &ws.pending}
			if tA {
				job.a = a[i0:]
			} else {
				job.a = a[i0*lda:]
			}
			if tB {
				job.b = b[j0*ldb:]
			} else {
				job.b = b[j0:]
			}
			job.c = c[i0*ldc+j0:]
			if bi == 0 && bj == 0 {
				mine = job
				continue
			}
			jobs <- job
		}
	}
	gemmSerial(ker, ws, mine.tA, mine.tB, mine.m, mine.n, mine.k, mine.alpha, mine.a, mine.lda, mine.b, mine.ldb, mine.beta, mine.c, mine.ldc)
	for ws.pending.Load() != 0 {
		runtime.Gosched() // a worker is finishing its block
	}
	putGemmWorkspace(ws)
}
