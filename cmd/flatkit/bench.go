package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// A scenario is one named group of figures. Each scenario lives in its own
// file (restructure.go, …) and registers itself from an init function, so a
// new scenario is one new file.
type scenario struct {
	name      string
	about     string // one line for the usage text
	run       func(b *bencher) error
	onlyNamed bool // not run by "flatkit bench" without names: too long
}

var scenarios = map[string]scenario{}

func register(s scenario) {
	if _, dup := scenarios[s.name]; dup {
		panic("flatkit: scenario " + s.name + " registered twice")
	}
	scenarios[s.name] = s
}

// scenarioNames returns the registered names, sorted.
func scenarioNames() []string {
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// defaultNames returns the scenarios "flatkit bench" runs when none is
// named: all but the onlyNamed ones, sorted.
func defaultNames() []string {
	var names []string
	for _, n := range scenarioNames() {
		if !scenarios[n].onlyNamed {
			names = append(names, n)
		}
	}
	return names
}

// options set how steady-state figures are measured. The defaults follow
// ../shared/peers/torch_bench.py so that the two can be compared as ratios.
type options struct {
	samples   int           // timed batches per figure
	minBatch  time.Duration // a batch lasts at least this long
	warmup    time.Duration // untimed calls before choosing the batch size
	maxTotal  time.Duration // time budget per figure; fewer batches (never < minSamples) if exceeded
	loopSteps int           // steps of the long-loop figures
	quick     bool
}

const minSamples = 21

func defaultOptions() options {
	return options{samples: 41, minBatch: 2 * time.Millisecond, warmup: 300 * time.Millisecond,
		maxTotal: 6 * time.Second, loopSteps: 100_000}
}

func quickOptions() options {
	return options{samples: 3, minBatch: 100 * time.Microsecond, warmup: time.Millisecond,
		maxTotal: 50 * time.Millisecond, loopSteps: 1000, quick: true}
}

// result is one figure: one JSON line on stdout and one row of the table.
type result struct {
	Scenario string   `json:"scenario"`
	Case     string   `json:"case"`
	Median   float64  `json:"median"`
	Min      float64  `json:"min"`
	Max      float64  `json:"max"`
	Unit     string   `json:"unit"`
	Allocs   float64  `json:"allocs"` // heap allocations per call (per step for loops)
	Samples  int      `json:"samples,omitempty"`
	Inner    int      `json:"inner,omitempty"`
	N        int      `json:"n,omitempty"`
	Checksum *float64 `json:"checksum,omitempty"`
	Note     string   `json:"note,omitempty"`
}

// stats is a steady-state measurement in nanoseconds per call.
type stats struct {
	median, min, max float64
	allocs           float64 // mallocs per call, over all timed batches
	samples, inner   int
}

// bencher measures and emits figures for one scenario.
type bencher struct {
	opt      options
	scenario string
	out      io.Writer // JSON lines
	rows     []result  // for the human table
	err      error     // first write error
}

// measure times fn in steady state the way the peer scripts do: warm-up
// (at least 3 calls and opt.warmup), then inner calls per batch so that a batch
// lasts at least opt.minBatch, then opt.samples batches. Median, min and max
// are over the per-call means of the batches. Allocations are the runtime's
// Mallocs delta over the timed batches divided by the number of calls; the
// MemStats reads sit outside the timed region.
func (b *bencher) measure(fn func()) stats {
	o := b.opt
	inner, per := batchSize(o, fn)
	samples := o.samples
	if budget := int(float64(o.maxTotal) / (per * float64(inner))); budget < samples {
		samples = max(budget, min(o.samples, minSamples))
	}
	samples = max(samples, 1)

	ts := make([]float64, samples)
	var mallocs uint64
	runtime.GC()
	for s := range ts {
		ts[s] = timeBatch(fn, inner, &mallocs)
	}
	return summarise(ts, inner, mallocs)
}

// batchSize warms fn up (at least 3 calls and o.warmup) and returns how
// many calls make a batch of at least o.minBatch, and the warm-up's time
// per call in nanoseconds.
func batchSize(o options, fn func()) (inner int, per float64) {
	n := 0
	t0 := time.Now()
	for n < 3 || time.Since(t0) < o.warmup {
		fn()
		n++
	}
	per = float64(time.Since(t0)) / float64(n)
	return max(1, int(math.Ceil(float64(o.minBatch)/max(per, 1)))), per
}

// timeBatch times n calls of fn and returns the mean time per call in
// nanoseconds, adding the runtime's Mallocs delta over them to *mallocs;
// the MemStats reads sit outside the timed region.
func timeBatch(fn func(), n int, mallocs *uint64) float64 {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	for range n {
		fn()
	}
	el := time.Since(start)
	runtime.ReadMemStats(&m1)
	*mallocs += m1.Mallocs - m0.Mallocs
	return float64(el) / float64(n)
}

// summarise sorts the per-call times ts of len(ts) samples of inner calls
// each and returns their median, min and max with the allocations per
// call.
func summarise(ts []float64, inner int, mallocs uint64) stats {
	slices.Sort(ts)
	return stats{median: median(ts), min: ts[0], max: ts[len(ts)-1],
		allocs: float64(mallocs) / float64(len(ts)*inner), samples: len(ts), inner: inner}
}

// measured runs measure (b.measure, or a variant) on fn and returns the
// timings with fn's result from the last call; if a call fails, it returns
// the first error, prefixed by what.
func measured[R any](measure func(func()) stats, what string, fn func() (R, error)) (R, stats, error) {
	var last R
	var first error
	s := measure(func() {
		var err error
		if last, err = fn(); err != nil && first == nil {
			first = err
		}
	})
	if first != nil {
		var zero R
		return zero, stats{}, fmt.Errorf("%s: %w", what, first)
	}
	return last, s, nil
}

// measureCalls times fn, a call too long to batch (a second or so), as
// one warm-up call and then calls single calls; -quick mode uses measure.
// Median, min and max are over the calls.
//
// Allocations are counted over allocCalls more calls back to back, as
// testing.AllocsPerRun counts them, not over the timed ones: each timed
// call follows a forced GC (so that no collection lands inside it), and
// a forced GC wakes the runtime's scavenger, whose own allocations (its
// timer heap growing; an allocation profile of the timed calls of bench
// resnet showed them in runtime.bgscavenge) the process-wide count would
// charge to fn.
func (b *bencher) measureCalls(calls int, fn func()) stats {
	if b.opt.quick {
		return b.measure(fn)
	}
	fn()
	ts := make([]float64, calls)
	for i := range ts {
		d, _ := once(fn)
		ts[i] = float64(d)
	}
	const allocCalls = 3
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range allocCalls {
		fn()
	}
	runtime.ReadMemStats(&m1)
	s := summarise(ts, 1, 0)
	s.allocs = float64(m1.Mallocs-m0.Mallocs) / allocCalls
	return s
}

func median(sorted []float64) float64 {
	k := len(sorted)
	if k%2 == 1 {
		return sorted[k/2]
	}
	return (sorted[k/2-1] + sorted[k/2]) / 2
}

// once times a single call of fn (after the caller's own warm-up) and counts
// its allocations.
func once(fn func()) (d time.Duration, mallocs uint64) {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	fn()
	d = time.Since(start)
	runtime.ReadMemStats(&m1)
	return d, m1.Mallocs - m0.Mallocs
}

// emitNS writes a steady-state figure in nanoseconds per call.
func (b *bencher) emitNS(name string, s stats, note string) {
	b.emit(result{Case: name, Median: s.median, Min: s.min, Max: s.max, Unit: "ns",
		Allocs: s.allocs, Samples: s.samples, Inner: s.inner, Note: note})
}

func (b *bencher) emit(r result) { b.emitExtra(&r, &r) }

// emitExtra is emit for a figure with extra fields: full is a pointer to a
// struct that embeds r, written as the JSON line.
func (b *bencher) emitExtra(r *result, full any) {
	r.Scenario = b.scenario
	r.Median, r.Min, r.Max = round3(r.Median), round3(r.Min), round3(r.Max)
	r.Allocs = round3(r.Allocs)
	b.rows = append(b.rows, *r)
	enc := json.NewEncoder(b.out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(full); err != nil && b.err == nil {
		b.err = err
	}
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// table writes the aligned human summary of rows: names left, numbers right.
func table(w io.Writer, rows []result) {
	cells := [][]string{{"scenario", "case", "median", "min", "max", "unit", "allocs"}}
	for _, r := range rows {
		cells = append(cells, []string{r.Scenario, r.Case, num(r.Median), num(r.Min), num(r.Max), r.Unit, num(r.Allocs)})
	}
	width := make([]int, len(cells[0]))
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, row := range cells {
		var sb strings.Builder
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i < 2 || i == 5 {
				sb.WriteString(c + pad) // text: left
			} else {
				sb.WriteString(pad + c) // numbers: right
			}
			sb.WriteString("  ")
		}
		fmt.Fprintln(w, strings.TrimRight(sb.String(), " "))
	}
}

func num(x float64) string {
	switch {
	case x == math.Trunc(x) && math.Abs(x) < 1e15:
		return fmt.Sprintf("%.0f", x)
	case math.Abs(x) >= 100:
		return fmt.Sprintf("%.1f", x)
	case math.Abs(x) >= 1:
		return fmt.Sprintf("%.2f", x)
	default:
		return fmt.Sprintf("%.3g", x)
	}
}

// machine describes the conditions of a run, for the stderr header.
func machine() string {
	s := fmt.Sprintf("%s %s/%s, GOMAXPROCS=%d, NumCPU=%d", runtime.Version(), runtime.GOOS, runtime.GOARCH,
		runtime.GOMAXPROCS(0), runtime.NumCPU())
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			s += ", loadavg " + strings.Join(f[:3], " ")
		}
	}
	return s
}
