package funcopt

// Collect applies opts in order to a zero configuration and returns it. A
// nil option is skipped, so that callers may pass a conditional option as
// nil.
func Collect[C any, O ~func(*C)](opts []O) C {
	var cfg C
	Apply(&cfg, opts)
	return cfg
}

// Apply applies opts in order to cfg, for a configuration that starts from
// defaults rather than from zero. A nil option is skipped, as in Collect.
func Apply[C any, O ~func(*C)](cfg *C, opts []O) {
	for _, o := range opts {
		Call(o, cfg)
	}
}

// Call applies the one option o to cfg unless o is nil. Typed options,
// whose func types satisfy per-call interfaces, call it from their apply
// method.
func Call[C any, O ~func(*C)](o O, cfg *C) {
	if o != nil {
		o(cfg)
	}
}
