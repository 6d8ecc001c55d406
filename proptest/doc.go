// Package proptest holds rapid generators and property checkers for
// flatkit's invariants, for flatkit's own tests and for users' suites.
//
// Generators draw random layouts (nested and empty groups, ties, frozen
// leaves, odd shapes), parameter vectors for a layout, random Go struct
// types and values built at run time with reflect.StructOf, inputs away
// from kinks and ties (NoTies), and random valid layer stacks of
// package model (Stacks: every layer kind, random geometry, nested Chain,
// Skip and Parallel, with the tracked output shape; InputFor, ParamsFor).
//
// Checkers take a T, which both *testing.T and *rapid.T satisfy, and report
// what differs: CheckRoundTrip and CheckSaveLoad for layouts and structs;
// CheckGrad, CheckJVP, CheckTranspose and CheckHVP for derivatives, against
// finite differences and against each other, along every coordinate
// direction when θ is small (the full gradient, Jacobian, Hessian) and
// along several random directions drawn deterministically from θ
// otherwise (a failure replays exactly). CheckHVP checks the gradient
// first. Steps, tolerances and directions are options of a check (Steps,
// Tol, Directions, FullUpTo; TransposeTol and Exact for CheckTranspose),
// never package variables; an option given to a check it does not apply
// to is a fatal error naming both. Example_primitive shows a user's own
// Primitive with its rules tested by the checkers.
//
// proptest imports the packages it checks, so tests inside those packages
// use it from an external test package (package layout_test).
package proptest
