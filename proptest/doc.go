// Package proptest holds rapid generators and property checkers for
// flatkit's invariants, for flatkit's own tests and for users' suites.
//
// # Generators
//
// Layouts draws random layouts with nested and empty groups, ties, frozen
// leaves and odd shapes. Params draws parameter vectors for a layout.
// Structs builds random Go struct types and values at run time with
// reflect.StructOf. NoTies draws inputs away from kinks and ties. Stacks
// draws random valid layer stacks of package model: every layer kind,
// random geometry, nested Chain, Skip and Parallel, with the tracked
// output shape. InputFor and ParamsFor draw their inputs and parameters.
// ODECases and NeuralODECases draw ODE problems with a loss; HybridCases
// draws ODE problems with an event and a dose.
//
// # Checkers
//
// Checkers take a T, which both *testing.T and *rapid.T satisfy, and report
// what differs. CheckRoundTrip and CheckSaveLoad check layouts and structs.
// CheckGrad, CheckJVP, CheckTranspose and CheckHVP check derivatives,
// against finite differences and against each other. θ is []float32 or
// []float64: the function is recorded and differentiated in θ's precision
// (Tape.Param or Tape.Param64), and a float64 function must return a
// float64 Var. When θ is small they check along every coordinate
// direction: the full gradient, Jacobian or Hessian. Otherwise they check
// along several random directions, drawn deterministically from θ, so a
// failure replays exactly. The finite
// differences are extrapolated over several steps (Richardson), and the
// tolerance is made from their estimated error. In float64 the defaults
// catch a rule wrong by 1e-6 and pass right ones
// (TestCheckersCatchRulesWrongByOneIn1e6, TestCheckersPassRightRules64);
// in float32 the default relative tolerance is DefaultRelTol, and
// SharpTol() catches a rule wrong by 1 %
// (TestCheckersCatchRulesWrongByOnePercent, TestCheckersPassRightRules).
// CheckHVP checks the gradient first. CheckODEGradient compares the
// sensitivity methods of package ode with each other and with finite
// differences. CheckHybridGradient checks the gradient through the events
// and schedules of a hybrid problem against differences of its solve.
// CheckHv checks a user's own Hessian-vector product against
// differences of their gradient, and its symmetry.
//
// Steps, tolerances and directions are options of a check, never package
// variables. They are typed, so that an option given to a check it does
// not apply to does not compile. Directions and FullUpTo are Options of
// every check. Steps and Tol are FDOptions, for the checks against finite
// differences. TransposeTol and Exact are TransposeOptions, for
// CheckTranspose. Example_primitive shows a user's own Primitive with its
// rules tested by the checkers.
//
// proptest imports the packages it checks, so tests inside those packages
// use it from an external test package (package layout_test).
package proptest
