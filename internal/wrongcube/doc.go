// Package wrongcube holds a user's own primitive, x³ elementwise, whose
// derivative rules can be made wrong by a factor on purpose. It serves the
// tests that check that proptest's checkers notice a wrong rule: proptest's
// own, and model's through layer stacks. It imports ad only.
package wrongcube
