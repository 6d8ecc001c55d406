package ad

// tanh32 is a float32 tanh by a rational approximation (the 13/6-degree
// odd/even polynomials Eigen uses), clamped where tanh rounds to ±1 in
// float32. It is several times faster than converting to float64 for
// math.Tanh; TestTanh32 bounds its error against math.Tanh.
func tanh32(x float32) float32 {
	const clamp = 7.90531110763549805
	if x > clamp {
		x = clamp
	} else if x < -clamp {
		x = -clamp
	}
	if x != x { // NaN
		return x
	}
	if -0.0004 < x && x < 0.0004 {
		return x // tanh x = x − x³/3 + …, and x³/3 is below x's last bit
	}
	const (
		a1  = 4.89352455891786e-03
		a3  = 6.37261928875436e-04
		a5  = 1.48572235717979e-05
		a7  = 5.12229709037114e-08
		a9  = -8.60467152213735e-11
		a11 = 2.00018790482477e-13
		a13 = -2.76076847742355e-16
		b0  = 4.89352518554385e-03
		b2  = 2.26843463243900e-03
		b4  = 1.18534705686654e-04
		b6  = 1.19825839466702e-06
	)
	x2 := x * x
	p := float32(a13)
	p = p*x2 + a11
	p = p*x2 + a9
	p = p*x2 + a7
	p = p*x2 + a5
	p = p*x2 + a3
	p = p*x2 + a1
	p *= x
	q := float32(b6)
	q = q*x2 + b4
	q = q*x2 + b2
	q = q*x2 + b0
	return p / q
}
