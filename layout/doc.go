// Package layout names views into flatkit's one parameter buffer.
//
// A Layout is a tree of paths over a []float32 θ: each storage leaf is a
// contiguous range of θ with a shape, each group (a subtree) is a contiguous
// range too, and a tied path is a second name for a leaf. Build one with a
// Builder, or from a Go struct with Destructure:
//
//	type Kinetics struct {
//		Rates []float32 `flat:"shape=4"`
//		Init  []float32 `flat:"shape=2"`
//	}
//	k := Kinetics{Rates: []float32{1.5, 1, 3, 1}, Init: []float32{1, 1}}
//	θ, lay, err := layout.Destructure(&k) // one copy; k's slices now view θ
//	err = layout.Restructure(θ2, lay, &k) // zero-copy: k's slices view θ2
//
// Struct fields: exported []float32 fields are leaves (shape from a
// `flat:"shape=3,4"` tag or the slice's length; `flat:"frozen"` marks them
// frozen; `flat:"-"` leaves a field alone). Nested structs, pointers to
// structs, and slices and arrays of structs become groups, with paths made of
// field names and indices joined by dots ("Blocks.3.W"). Two fields holding
// the same slice become one tied leaf. Numbers, strings, funcs, maps and
// interfaces are hyperparameters and are left alone; [N]float32 arrays and
// slices of other numeric types are errors, since they cannot view the buffer.
//
// Restructure needs reflection only the first time it sees a struct type with
// a layout; after that it writes one slice header per leaf and allocates
// nothing. Its struct is an any, though, so a struct local to the caller
// escapes to the heap: in a hot callback (an ODE right-hand side, a
// per-sample loss) make a typed Binder once with Bind[S](lay, nil) and call
// b.Restructure(θ, &s) on a local s, which allocates nothing at all.
//
// Save, Load and LoadInto read and write the safetensors format: the data
// section is the flat buffer itself, and the layout's groups, ties and frozen
// marks travel in the header's metadata, with what the file holds when it
// is not parameters (Holds, WantHolds).
//
// Errors say "layout: " once, then the function and what was wrong: the
// path, what came and what was wanted. The functions below the exported
// ones return errors without the prefix and each exported function adds
// it (wrap), so nothing is cut out of strings. Errors a caller may branch
// on are typed: a path the layout does not hold, or a leaf of another shape
// than what came, is a *PathError (Op, Path, Err, Got, Want) from View,
// Range, Sub, Restructure, RestructureInPlace, Bind and LoadInto, with
// ErrUnknownPath or ErrShape as its Err for errors.Is:
//
//	layout: View "encoder.wieght": unknown path, want a path such as encoder.bias, encoder.weight
//	layout: LoadInto "0.weight": wrong shape: tensor "0.weight" of the file has [3 4], want [4 3]
package layout
