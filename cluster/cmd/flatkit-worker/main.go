package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/flatkit/flatkit/cluster"
	"github.com/flatkit/flatkit/cluster/lv"
	"github.com/flatkit/flatkit/cluster/neural"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func main() {
	lv.Register()
	neural.Register()
	if len(os.Args) > 1 && os.Args[1] == "bench" {
		if err := bench(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "flatkit-worker bench:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "flatkit-worker:", err)
		os.Exit(1)
	}
}

// serve runs a worker until ctx ends.
func serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("flatkit-worker", flag.ExitOnError)
	url := fs.String("nats", nats.DefaultURL, "NATS server URL")
	names := fs.String("names", "", "comma-separated names to serve (default: all registered: "+strings.Join(cluster.Registered(), ", ")+")")
	conc := fs.Int("concurrency", 0, "shards computed at once (default GOMAXPROCS)")
	prefix := fs.String("prefix", "", "prefix of the streams and subjects (default flatkit)")
	ackWait := fs.Duration("ack-wait", 0, "AckWait of the shards (default 30s)")
	maxDeliver := fs.Int("max-deliver", 0, "deliveries of a shard before it is given up (default 5)")
	id := fs.String("id", "", "worker id (default host-pid-random)")
	quiet := fs.Bool("quiet", false, "print only 'ready' and the final counters")
	metrics := fs.String("metrics", "", "serve Prometheus metrics on this address (host:port, path /metrics); off if empty")
	fs.Parse(args)

	nc, err := nats.Connect(*url, nats.Name("flatkit-worker"), nats.MaxReconnects(-1))
	if err != nil {
		return err
	}
	defer nc.Close()
	cfg := cluster.WorkerConfig{
		Config:      cluster.Config{Prefix: *prefix, AckWait: *ackWait, MaxDeliver: *maxDeliver},
		Concurrency: *conc,
		ID:          *id,
	}
	if *names != "" {
		cfg.Names = strings.Split(*names, ",")
	}
	if !*quiet {
		cfg.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	}
	w, err := cluster.NewWorker(nc, cfg)
	if err != nil {
		return err
	}
	if *metrics != "" {
		reg := prometheus.NewRegistry()
		if err := w.RegisterMetrics(reg); err != nil {
			return err
		}
		ln, err := net.Listen("tcp", *metrics)
		if err != nil {
			return fmt.Errorf("-metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		if !*quiet {
			fmt.Fprintf(os.Stderr, "metrics on http://%s/metrics\n", ln.Addr())
		}
	}
	go func() {
		select {
		case <-w.Ready():
			fmt.Println("ready")
			if !*quiet {
				fmt.Fprintf(os.Stderr, "worker %s serving on %s\n", w.ID(), *url)
			}
		case <-ctx.Done():
			return
		}
		if *quiet {
			return
		}
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		last := int64(0)
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if s := w.Stats(); s.Shards != last {
					last = s.Shards
					fmt.Fprintf(os.Stderr, "worker %s: %d shards, %d redelivered to it, %d retried, %d given up\n", w.ID(), s.Shards, s.Redelivered, s.Retried, s.Failed)
				}
			}
		}
	}()
	if err := w.Run(ctx); err != nil {
		return err
	}
	b, _ := json.Marshal(w.Stats())
	fmt.Printf("stats %s\n", b)
	return nil
}
