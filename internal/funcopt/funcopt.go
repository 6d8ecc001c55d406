// Package funcopt gathers functional options, the one convention for
// options across flatkit's packages (see the README's Contributing section):
// each option is a func that sets a field of the call's configuration.
// It is a leaf: it imports nothing of flatkit's and any package may use it.
package funcopt

// Collect applies opts in order to a zero configuration and returns it. A
// nil option is skipped, so that callers may pass a conditional option as
// nil.
func Collect[C any, O ~func(*C)](opts []O) C {
	var cfg C
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return cfg
}
