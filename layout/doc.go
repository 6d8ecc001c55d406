// Package layout names views into flatkit's one parameter buffer.
//
// A Layout is a tree of paths over a []float32 θ. Each storage leaf is a
// contiguous range of θ with a shape. Each group, a subtree, is a
// contiguous range too. A tied path is a second name for a leaf. Build a
// Layout with a Builder, or from a Go struct with Destructure:
//
//	type Kinetics struct {
//		Rates []float32 `flat:"shape=4"`
//		Init  []float32 `flat:"shape=2"`
//	}
//	k := Kinetics{Rates: []float32{1.5, 1, 3, 1}, Init: []float32{1, 1}}
//	θ, lay, err := layout.Destructure(&k) // one copy; k's slices now view θ
//	err = layout.Restructure(θ2, lay, &k) // zero-copy: k's slices view θ2
//
// Struct fields: exported []float32 fields are leaves. A leaf's shape comes
// from a `flat:"shape=3,4"` tag or the slice's length; `flat:"frozen"`
// marks it frozen, and `flat:"-"` leaves a field alone. Nested structs,
// pointers to structs, and slices and arrays of structs become groups. Their
// paths are field names and indices joined by dots: "Blocks.3.W". Two
// fields holding the same slice become one tied leaf. Numbers, strings,
// funcs, maps and interfaces are hyperparameters and are left alone.
// [N]float32 arrays and slices of other numeric types are errors, since
// they cannot view the buffer.
//
// Restructure needs reflection only the first time it sees a struct type
// with a layout; after that it writes one slice header per leaf and
// allocates nothing. Its struct is an any, though, so a struct local to
// the caller escapes to the heap. In a hot callback, such as an ODE
// right-hand side or a per-sample loss, make a typed Binder once with
// Bind[S](lay, nil). Its Restructure on a local struct allocates nothing
// at all.
//
// Save, Load and LoadInto read and write the safetensors format. The data
// section is the flat buffer itself. The layout's groups, ties and frozen
// marks travel in the header's metadata, and so does what the file holds
// when it is not parameters (Holds, WantHolds).
//
// Errors say "layout: " once, then the function and what was wrong: the
// path, what came and what was wanted. The functions below the exported
// ones return errors without the prefix, and each exported function adds
// it, so nothing is cut out of strings. Errors a caller may branch on are
// typed. A path the layout does not hold, or a leaf of another shape than
// what came, is a *PathError from View, Range, Sub, Restructure,
// RestructureInPlace, Bind and LoadInto. Its Err is ErrUnknownPath or
// ErrShape, for errors.Is:
//
//	layout: View "encoder.wieght": unknown path, want a path such as encoder.bias, encoder.weight
//	layout: LoadInto "0.weight": wrong shape: tensor "0.weight" of the file has [3 4], want [4 3]
package layout
