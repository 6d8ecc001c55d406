//go:build noasm || !amd64

package peak

import "github.com/flatkit/flatkit/internal/cpu"

func peakFMA(cpu.Level, int) int { return 0 }
