// Package proptest holds rapid generators and property checkers for
// flatkit's invariants, for flatkit's own tests and for users' suites.
//
// Generators draw random layouts (nested and empty groups, ties, frozen
// leaves, odd shapes), parameter vectors for a layout, and random Go struct
// types and values built at run time with reflect.StructOf. Checkers take a T,
// which both *testing.T and *rapid.T satisfy, and report what differs.
//
// proptest imports the packages it checks, so tests inside those packages
// use it from an external test package (package layout_test).
package proptest
