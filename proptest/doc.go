// Package proptest holds rapid generators and property checkers for
// flatkit's invariants, for flatkit's own tests and for users' suites.
//
// Generators draw random layouts (nested and empty groups, ties, frozen
// leaves, odd shapes), parameter vectors for a layout, random Go struct
// types and values built at run time with reflect.StructOf, inputs away
// from kinks and ties (NoTies, Positive), and random valid layer stacks of
// package model (Stacks: every layer kind, random geometry, nested Chain,
// Skip and Parallel, with the tracked output shape; InputFor, ParamsFor).
//
// Checkers take a T, which both *testing.T and *rapid.T satisfy, and report
// what differs: CheckRoundTrip and CheckSaveLoad for layouts and structs;
// CheckGrad, CheckJVP, CheckTranspose and CheckHVP for derivatives, against
// finite differences along one direction drawn deterministically from θ
// (a failure replays exactly) and against each other.
//
// proptest imports the packages it checks, so tests inside those packages
// use it from an external test package (package layout_test).
package proptest
