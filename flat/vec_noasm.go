//go:build noasm || !amd64

package flat

// Without assembly every kernel is the pure-Go one.

func axpy(alpha float32, x, y []float32) { axpyGo(alpha, x, y) }
func dot(x, y []float32) float32         { return dotGo(x, y) }
func sum(x []float32) float32            { return sumGo(x) }
func norm(x []float32) float32           { return normGo(x) }
func scale(alpha float32, x []float32)   { scaleGo(alpha, x) }
func fill(x []float32, v float32)        { fillGo(x, v) }
