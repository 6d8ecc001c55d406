// Dosing fits a pharmacokinetic model with a dosing schedule and a
// threshold dose by gradients through the doses. A one-compartment model
// with first-order absorption,
//
//	A' = −ka·A,  C' = ka·A/V − ke·C,
//
// gets oral doses of 100 mg into the gut A at t = 0, 8 and 16 h (an
// ode.Schedule, exact at those times), and one more dose when the
// concentration C first falls below a threshold c* (an ode.Event, found by
// root finding; a switch kept in the state gives it once). The absorption
// and elimination rates ka and ke, the volume V and the threshold c* are
// fitted to 48 hourly samples of C with Gaussian noise from a fixed seed,
// starting 20–25 % off.
//
//	go run ./examples/dosing
//
// The right-hand side, the event's condition and both effects are written
// with ad ops (odead.Problem, odead.AddEvent, odead.AddSchedule), which
// gives the derivatives that ode.Gradient needs to differentiate through
// the firings: the jump of the sensitivities at each dose, and the extra
// dose's time as a function of the parameters. L-BFGS works on the
// logarithms of the parameters (optimisers.Positive). The program prints
// the fitted values with their standard errors beside the true ones, and
// the time of the extra dose, and writes dosing.png: the samples, the fitted curve,
// the fitted threshold and the doses. The gradients are forward
// sensitivities by default, the adjoint with -sens adjoint or -sens
// discrete. The standard errors are the Laplace approximation
// (optimisers.NewLaplace) from the Hessian of the loss, which
// ode.FullHessian takes through the doses and through the extra dose's
// event, whose time moves with the parameters.
package main
