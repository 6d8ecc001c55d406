package ode

// Compile-time checks, gonum style. Every method and sensitivity
// implements its interface, and every stepper implements stepper. A
// stepper whose attempts can fail for a reason of its own implements
// stepFailer too. The integrator finds stepFailer by type assertion, so a
// mistyped failure method would silently turn a singular W into a plain
// dt underflow.
var (
	_ Method = (*erkMethod)(nil)
	_ Method = Rodas5PMethod{}
	_ Method = Rosenbrock23Method{}
	_ Method = BDFMethod{}
	_ Method = (*BDFMethod)(nil)

	_ Sensitivity = BacksolveAdjoint{}
	_ Sensitivity = DiscreteAdjoint{}
	_ Sensitivity = ForwardSensitivity{}
	_ Sensitivity = InterpolatingAdjoint{}

	_ stepper[float32] = (*erk[float32])(nil)
	_ stepper[float64] = (*erk[float64])(nil)
	_ stepper[float32] = (*rosenbrock[float32])(nil)
	_ stepper[float64] = (*rosenbrock[float64])(nil)
	_ stepper[float32] = (*ros23[float32])(nil)
	_ stepper[float64] = (*ros23[float64])(nil)

	_ stepFailer = (*rosenbrock[float64])(nil)
	_ stepFailer = (*ros23[float64])(nil)
	_ stepFailer = (*bdf[float64])(nil)

	_ stepper[float64]     = (*bdf[float64])(nil)
	_ stepChooser[float64] = (*bdf[float64])(nil)
)
