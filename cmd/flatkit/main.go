package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func usage(w io.Writer) {
	fmt.Fprintf(w, `usage: flatkit <command> [arguments]

commands:
  bench [flags] [scenario...]   run benchmark scenarios (all if none named); "flatkit bench -h" for flags

scenarios:
`)
	for _, n := range scenarioNames() {
		fmt.Fprintf(w, "  %-12s %s\n", n, scenarios[n].about)
	}
}

// run is main without the exit, for tests. It returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	case "bench":
		return bench(args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "flatkit: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
}

// benchFlags add the flags of scenarios (named "<scenario>-…") to bench's
// flag set; a scenario's file appends to it from its init function.
var benchFlags []func(fs *flag.FlagSet)

func bench(args []string, stdout, stderr io.Writer) int {
	def := defaultOptions()
	fs := flag.NewFlagSet("flatkit bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	samples := fs.Int("samples", def.samples, fmt.Sprintf("timed batches per steady-state figure (at least %d unless set lower)", minSamples))
	batch := fs.Duration("batch", def.minBatch, "minimum duration of one timed batch")
	steps := fs.Int("steps", def.loopSteps, "steps of the long-loop figures")
	quick := fs.Bool("quick", false, "tiny batches, 3 samples and 1000 loop steps: checks that scenarios run, not how fast")
	for _, add := range benchFlags {
		add(fs)
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: flatkit bench [flags] [scenario...]\n\nflags:\n")
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nscenarios: %s\n", strings.Join(scenarioNames(), ", "))
	}
	// Flags may come before or after the scenario names.
	var names []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		names = append(names, rest[0])
		rest = rest[1:]
	}

	opt := def
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *quick {
		opt = quickOptions()
	}
	if set["samples"] {
		opt.samples = *samples
	}
	if set["batch"] {
		opt.minBatch = *batch
	}
	if set["steps"] {
		opt.loopSteps = *steps
	}
	if opt.samples < 1 || opt.loopSteps < 1 || opt.minBatch < 0 {
		fmt.Fprintln(stderr, "flatkit bench: -samples and -steps must be positive, -batch not negative")
		return 2
	}

	if len(names) == 0 {
		names = defaultNames()
	}
	for _, n := range names {
		if _, ok := scenarios[n]; !ok {
			fmt.Fprintf(stderr, "flatkit bench: unknown scenario %q; known scenarios: %s\n", n, strings.Join(scenarioNames(), ", "))
			return 2
		}
	}

	fmt.Fprintf(stderr, "flatkit bench: %s\n", machine())
	var rows []result
	start := time.Now()
	for _, n := range names {
		b := &bencher{opt: opt, scenario: n, out: stdout}
		err := scenarios[n].run(b)
		rows = append(rows, b.rows...)
		if err == nil {
			err = b.err
		}
		if err != nil {
			fmt.Fprintf(stderr, "flatkit bench: %s: %v\n", n, err)
			return 1
		}
	}
	fmt.Fprintln(stderr)
	table(stderr, rows)
	fmt.Fprintf(stderr, "\n%d figures in %.1f s\n", len(rows), time.Since(start).Seconds())
	return 0
}
