// Package geom is the one rule for the per-axis fields of a convolution's
// or a pooling window's geometry (stride, padding, dilation), shared by
// ad.ConvGeom, ad.PoolGeom and model's options: a field is empty (its
// default on every axis), one value (used for every axis) or one value per
// spatial axis; any other length is an error naming the field. An empty
// PadHi means the same padding as PadLo (Pads), as PyTorch's padding does.
//
// It is a leaf utility of internal/: it imports nothing of flatkit's.
package geom
