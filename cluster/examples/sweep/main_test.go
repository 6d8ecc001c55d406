package main

import (
	"strings"
	"testing"
)

// Flags that would run nothing, or otherwise than asked, are refused
// before anything starts: -n 0 printed "NaN ± NaN" on 0 workers, and
// -shard 0 became the ensemble's default shard size without a word. A
// NATS server that cannot be reached is named by its URL.
func TestRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		name              string
		url               string
		n, shard, workers int
		want              string
	}{
		{"no trajectories", "", 0, 1024, 2, "-n 0: want at least 1 trajectory"},
		{"negative trajectories", "", -5, 1024, 2, "-n -5"},
		{"no shard size", "", 100, 0, 2, "-shard 0: want at least 1 trajectory per shard"},
		{"no workers", "", 100, 16, 0, "-workers 0"},
		{"unreachable server", "nats://127.0.0.1:1", 100, 16, 0, "connecting to the NATS server at nats://127.0.0.1:1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := run(c.url, c.n, c.shard, c.workers, 1, false)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v; want one saying %q", err, c.want)
			}
		})
	}
}
