// Command flatkit is flatkit's command line.
//
//	flatkit bench [flags] [scenario...]
//
// runs the named benchmark scenarios (all of them if none is named) and prints
// one JSON line per figure on standard output:
//
//	{"scenario":"restructure","case":"Restructure Dense 256->256","median":41.2,"min":40.8,"max":45.1,"unit":"ns","allocs":0,...}
//
// and an aligned table of the same figures on standard error.
//
// Steady-state figures are measured as ../shared/peers/torch_bench.py
// measures its own. After a warm-up, the calls run in batches lasting at
// least 2 ms, at least 21 batches. median, min and max are over the
// per-call means of the batches. allocs is the heap allocations per call,
// from runtime.MemStats.Mallocs.
package main
