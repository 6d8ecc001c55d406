package ode

import "math"

// Step-size control needs x^y to a few digits once per step, on the critical
// path from one step to the next; math.Log and math.Exp took a third of the
// time of a small solve. These are accurate to about 5e-6 relative (the
// step size needs far less), continuous, and short dependency chains.

// log2Fast is log2(x) for x > 0.
func log2Fast(x float64) float64 {
	b := math.Float64bits(x)
	ex := int(b>>52) & 0x7ff
	if ex == 0 || ex == 0x7ff || b>>63 != 0 {
		return math.Log2(x) // zero, subnormal, Inf, NaN, negative
	}
	m := math.Float64frombits(b&(1<<52-1) | 1023<<52) // [1, 2)
	e := float64(ex - 1023)
	if m > math.Sqrt2 {
		m *= 0.5
		e++
	}
	s := (m - 1) / (m + 1) // |s| ≤ 0.172; ln m = 2 atanh s
	s2 := s * s
	ln := 2 * s * (1 + s2*(1.0/3+s2*(1.0/5)))
	return e + ln*math.Log2E
}

// exp2Fast is 2^y.
func exp2Fast(y float64) float64 {
	if !(y > -1000 && y < 1000) {
		return math.Exp2(y)
	}
	i := int(y)
	if float64(i) > y {
		i--
	}
	x := (y - float64(i) - 0.5) * math.Ln2 // |x| ≤ ln2/2
	x2 := x * x
	p := (1 + x2*(1.0/2+x2*(1.0/24))) + x*(1+x2*(1.0/6+x2*(1.0/120))) // e^x, even and odd parts
	return p * math.Sqrt2 * math.Float64frombits(uint64(i+1023)<<52)
}
