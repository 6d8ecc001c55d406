package ode

import "math"

// Step-size control needs x^y to a few digits once per step, on the critical
// path from one step to the next. math.Log and math.Exp are slow there, as
// BenchmarkLotkaVolterraTsit5 shows. These are table-driven, with no
// division and no data-dependent branch, so their dependency chains are
// short. TestFastLogExp pins their accuracy, far more than the step size
// needs.

// log2Tab holds, for the top seven mantissa bits i, inv ≈ 1/c and
// −log2(inv) for that stored inv. c is the centre of the interval
// [1 + i/128, 1 + (i+1)/128).
var log2Tab [128]struct{ inv, log2c float64 }

// exp2Tab holds 2^(j/64).
var exp2Tab [64]float64

func init() {
	for i := range log2Tab {
		inv := 1 / (1 + (float64(i)+0.5)/128)
		log2Tab[i].inv, log2Tab[i].log2c = inv, -math.Log2(inv)
	}
	for j := range exp2Tab {
		exp2Tab[j] = math.Exp2(float64(j) / 64)
	}
}

// log2Fast is log2(x) for x > 0. With x = m·2^k, m in [1, 2), and c the
// centre of m's 1/128-wide interval, log2 x = k + log2 c + log2(m/c). The
// last term takes three terms of its series, as |m/c − 1| < 1/256.
func log2Fast(x float64) float64 {
	b := math.Float64bits(x)
	if b>>52-1 >= 0x7fe {
		return math.Log2(x) // zero, subnormal, Inf, NaN, negative
	}
	e := &log2Tab[b>>45&127]
	m := math.Float64frombits(b&(1<<52-1) | 1023<<52)
	r := m*e.inv - 1
	const l1, l2, l3 = math.Log2E, -math.Log2E / 2, math.Log2E / 3
	return (float64(int(b>>52)-1023) + e.log2c) + r*(l1+r*(l2+r*l3))
}

// exp2Fast is 2^y. With y = i/64 + f and |f| ≤ 1/128, 2^y = 2^(i/64)·2^f:
// the first factor from the table and the exponent bits, the second by four
// terms of its series.
func exp2Fast(y float64) float64 {
	if !(y > -1000 && y < 1000) {
		return math.Exp2(y)
	}
	// Adding 1.5·2^46 rounds y to a multiple of 1/64 (the spacing of
	// float64s there) and leaves 64y, rounded, in the low bits.
	const shifter = 0x1.8p46
	s := y + shifter
	i := int64(math.Float64bits(s) - math.Float64bits(shifter))
	x := (y - (s - shifter)) * math.Ln2 // exact difference, |x| ≤ ln2/128
	scale := math.Float64frombits(math.Float64bits(exp2Tab[i&63]) + uint64(i>>6)<<52)
	return scale * (1 + x*(1+x*(0.5+x*(1.0/6))))
}
