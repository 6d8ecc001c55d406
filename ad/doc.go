// Package ad differentiates functions written with its ops, in reverse mode
// and forward mode, to any order.
//
// One Tape records every op applied to its Vars. Reverse mode sweeps the
// record backwards: Grad, Backward, VJP. Forward mode sweeps it forwards
// carrying tangents, several directions at once for Jacobians: JVP. Every
// derivative rule is written with ops of the same set. So a sweep records
// its own work on the tape, and its results are Vars that can be
// differentiated again. HVP is forward-over-reverse, HVPReverse is
// reverse-over-reverse, and GradVar nests gradients inside differentiated
// functions. Each nested derivative differentiates with respect to a fresh
// copy of its argument, so perturbations of different levels never mix.
//
// JacobianPattern finds the sparsity pattern of a Jacobian from the
// recording, structurally: each op has a rule for which input elements an
// output element is computed from, and no value is read.
//
// Names: XOf(y, …) is X of the recorded expression y, as in VJPOf, JVPOf
// and HVPOf. GradWrt(p) is the gradient with respect to the Param p, the
// wrt of those products.
//
// Parameters live in one flat []float32. Param records it, and View gives
// each layer its tensors without copying; ViewPath does so by a layout
// path. The gradient is a flat vector of the same length, assembled from
// the views' ranges.
//
// Precision: a value is float32 or float64. Param records the float32
// parameter buffer; ParamFloat64 records it converted to float64, and
// Param64, Const64, Scalar64 and Full64 record float64 data, such as the
// state of a stiff model solved at tight tolerances. Each op computes in
// its inputs' precision, with tangents and cotangents of the same, so the
// derivatives of a float64 computation are float64 throughout; GradWrt64
// returns its gradients, and ValueAndGrad64, JVP64, VJP64, HVP64 and
// HVPReverse64 are the functional helpers for a float64 input. Mixing is
// explicit: an op given values of two
// precisions is an error naming both, Convert changes a value's precision,
// and ScalarLike and FullLike make constants in the precision of a value.
// The op set and its rules are written once for both precisions; the
// convolution, pooling, batch-norm and channel-affine kernels are float32
// only, and given float64 values they record an error naming the op and
// the precision.
//
// Errors are sticky, like bufio.Scanner's. The first bad shape or stale Var
// is recorded on the tape, and later ops return a failed Var. Grad,
// Backward and Err report it with the op and the shapes involved. A
// derivative rule that is missing at some order is an error naming the op
// and the order, never a silent zero. A structural zero, such as the second
// derivative of ReLU, is a correct answer.
//
// The op set:
//
//   - arithmetic, broadcasting: Add, Sub, Mul, Div, Neg, Scale
//   - precision: Convert, and the constants ScalarLike and FullLike
//   - elementwise functions: Exp, Log, Log1p, Sqrt, Square, Pow, Abs,
//     Sign, Sin, Cos, Erf
//   - activations: Tanh, Sigmoid, Relu, LeakyRelu, Elu, Gelu, Softplus,
//     Swish
//   - masks and selection: Clamp, Indicator, Where, StopGradient
//   - reductions: Sum, Mean, Max and Min with the argmax saved, and SumTo
//     with its adjoint BroadcastTo
//   - products: MatMul and MatMulT, with transposes as attributes, batches
//     and 1-D operands
//   - shapes: View, ViewPath, Slice, Reshape, Transpose, Concat, Stack,
//     SliceAxis, PadAxis, Pad, Crop
//   - indexing: Gather and ScatterAdd by flat index, each the other's
//     adjoint
//   - the softmax family: LogSumExp, Softmax, LogSoftmax
//   - convolutions: Conv, ConvBias, ConvBiasRelu, ConvTranspose, ConvFilter
//   - pooling: MaxPool, MeanPool, AdaptiveMeanPool, GlobalMeanPool
//   - batch normalisation: BatchNorm in training mode, ChannelAffine in
//     test mode
//
// TestDocListsEveryOp checks that this list names every op.
//
// The op set is open. A Primitive has a forward kernel and optional JVPRule
// and VJPRule methods, and a float64 kernel if it is a Float64Kernel. Applied with Apply, it composes with every other op
// to any order, exactly as the built-in ops do.
//
// Memory: values, shapes and gradients live in arenas owned by the tape and
// rewound by Reset. So a training loop that reuses one tape allocates
// nothing after its first step. The functional helpers, such as
// ValueAndGrad, JVP and HVP, make a tape per call and allocate.
package ad
