// Package model builds networks from layers written with ad ops.
//
// A Layer is a configuration: kernel sizes, channel counts, options. Its
// numbers live in the one flat parameter buffer. Layout(net) names the
// buffer's ranges with PyTorch's nn.Sequential paths, such as "0.weight"
// and "3.bias". So a PyTorch state_dict of the same architecture loads by
// name with layout.LoadInto. Init(net, rng) fills a new buffer with
// PyTorch's default initialisations. net.Apply(c, p, x) applies the
// network to x, where p is the ad.Var of the buffer. Every layer reads its
// parameters as zero-copy views of p. So gradients are flat vectors in the
// same layout, and derivatives of any order work through every layer.
//
// A Ctx carries training or test mode, the RNG for Dropout and the state
// buffer. The state holds BatchNorm's running statistics, laid out by
// StateLayout and made by InitState. A nil Ctx is inference without state.
//
// Layers: Dense, Conv, ConvTranspose, MaxPool, MeanPool, AdaptiveMeanPool,
// GlobalMeanPool, Flatten, LayerNorm, BatchNorm, Embedding, Dropout, the
// activations (Relu, Tanh, …) and Func for any function of one Var.
//
// Containers: Chain, Skip and Parallel. Chain is a slice of layers of any
// depth; it applies a Conv followed by Relu() as one op, ad.ConvBiasRelu.
// Skip is a skip connection, combine(layer(x), x).
//
// Losses: MSE, L1, Huber, CrossEntropy and LogitCrossEntropy, and the
// binary BinaryCrossEntropy and LogitBinaryCrossEntropy. The
// cross-entropies take class indices or, with the OneHot variants,
// target distributions. A loss is the mean of its terms by default, or
// their sum with the option SumReduction().
//
// # Options
//
// Layers take functional options: Stride, Pad, Groups, NormEps,
// WeightInit(ConstantInit(0)), and so on. Their types say where they
// apply, so an option that does not apply to a layer does not compile:
// NormEps given to Conv, Groups given to MaxPool. A nil option is skipped,
// so that a conditional option may be nil. There are seven kinds of
// option:
//
//	WindowOption     Stride, Pad, PadSides: Conv, ConvTranspose, MaxPool, MeanPool
//	KernelOption     Dilation, Groups: Conv, ConvTranspose
//	TransposeOption  OutputPad: ConvTranspose
//	AffineOption     NoBias, BiasInit, Activation: Conv, ConvTranspose, Dense
//	WeightOption     WeightInit: Conv, ConvTranspose, Dense, Embedding
//	NormOption       NormEps, NoAffine: LayerNorm, BatchNorm
//	MomentumOption   BNMomentum: BatchNorm
//
// Each constructor takes an interface that the kinds it accepts satisfy:
//
//	ConvOption           Conv                WindowOption, KernelOption, AffineOption, WeightOption
//	ConvTransposeOption  ConvTranspose       the same and TransposeOption
//	DenseOption          Dense               AffineOption, WeightOption
//	EmbeddingOption      Embedding           WeightOption
//	LayerNormOption      LayerNorm           NormOption
//	BatchNormOption      BatchNorm           NormOption, MomentumOption
//	PoolOption           MaxPool, MeanPool   WindowOption
//
// A list of options is a slice of the constructor's interface, such as
// []ConvOption. Per-axis options follow ad's geometry rule in
// internal/geom: one value for every spatial axis, or one per axis. A loss
// takes LossOptions last, like Flux's keyword arguments.
//
// # Conventions
//
// A configuration error surfaces from Layout, Init and Apply with the
// "model:" prefix once and the layer's layout path. For example, "model:
// 1.0: Conv: in 3, out 4 channels, groups 2; …" is layer 0 of the Chain at
// index 1. A layer's Declare returns its error without the prefix, which
// Layout adds. An error naming a bad value says what was wanted: "input
// shape [1 4], want (…, 3)". An error recorded while a layer inside Chain
// or Parallel is applied carries the same path on the tape: "model: 1.0:
// Dense(4, 5): input shape [1 3], want (…, 4)". ad.Tape.WrapErr adds the
// path, and errors.As still reaches the layer's error.
//
// assert.go checks every layer type against Layer, and Stateful where it
// applies, at compile time.
package model
