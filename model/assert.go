package model

// Compile-time checks, gonum style: every layer type implements Layer, and
// those that keep state implement Stateful. StateLayout finds Stateful by
// type assertion, so a mistyped DeclareState would silently drop the
// state.
var (
	_ Layer    = (*AdaptiveMeanPoolLayer)(nil)
	_ Stateful = (*BatchNormLayer)(nil)
	_ Stateful = (*ChainLayer)(nil)
	_ Layer    = (*ConvLayer)(nil)
	_ Layer    = (*ConvTransposeLayer)(nil)
	_ Layer    = (*DenseLayer)(nil)
	_ Layer    = (*DropoutLayer)(nil)
	_ Layer    = (*EmbeddingLayer)(nil)
	_ Layer    = (*FuncLayer)(nil)
	_ Layer    = (*LayerNormLayer)(nil)
	_ Stateful = (*ParallelLayer)(nil)
	_ Layer    = (*PoolLayer)(nil)
	_ Stateful = (*SkipLayer)(nil)
)
