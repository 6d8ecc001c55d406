// Package geom is the one rule for the per-axis fields of a convolution's
// or a pooling window's geometry: stride, padding, dilation. ad.ConvGeom,
// ad.PoolGeom and model's options share it. A field is empty, which means
// its default on every axis; one value, used for every axis; or one value
// per spatial axis. Any other length is an error naming the field. By
// Pads, an empty PadHi means the same padding as PadLo, as PyTorch's
// padding does.
//
// It is a leaf utility of internal/: it imports nothing of flatkit's.
package geom
