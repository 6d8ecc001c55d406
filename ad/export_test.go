package ad

// The batch-norm primitives that BatchNorm's rules use, for tests that
// check each one's own rules as a function of all its inputs.

// BatchNormStats records BatchNormStats(x): (μ; σ²), (2, C).
func BatchNormStats(x Var) Var { return Apply(bnStatsOp, Attrs{}, x) }

// BatchNormSums records BatchNormSums(x, S, g) = (Σg; Σg·x̂).
func BatchNormSums(x, S, g Var, eps float32) Var {
	return bnSums(x, S, g, Attrs{Floats: []float32{eps}})
}

// BatchNormBackData records BatchNormBackData(x, S, g, T, γ), γ the zero
// Var for none.
func BatchNormBackData(x, S, g, T, gamma Var, eps float32) Var {
	return bnBackData(x, S, g, T, gamma, Attrs{Floats: []float32{eps}})
}
