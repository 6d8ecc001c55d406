//go:build noasm || !amd64

package flat

func peakFMA(isaLevel, int) int { return 0 }
