// Package conv holds the raw convolution kernels behind ad's conv family.
// They compute the forward convolution, its data gradient and its filter
// gradient; the data gradient is a transposed convolution. They take 1-,
// 2- and 3-D spatial inputs with stride, padding, dilation and groups, in
// PyTorch's layout:
//
//	x: (N, Cin, spatial…)   w: (Cout, Cin/Groups, k…)   y: (N, Cout, out…)
//
// For stride 1 with AVX-512, Forward and Data first try the blocked direct
// kernels of block.go, blockForward and blockData. They apply when the
// channels per group are a multiple of 8 and the output has more than
// SmallMaxOut positions. Forward counts output channels and Data input
// channels. They run ahead of both families below on every shape that
// BenchmarkForwardPaths measures, so UseGemm does not decide those.
// Otherwise each operation has two families of implementations, and
// UseGemm chooses:
//
//   - direct: DirectForward, DirectData, DirectFilter. Outputs of at most
//     SmallMaxOut positions, such as deepchain's 2×2 images, take a walk
//     over a cached list of the tap, output and input triples that exist.
//     It keeps four channels' sums in registers. Stride 1 takes
//     whole-plane tap kernels over a "wide" layout of the planes; see
//     wideGeom and taps.go. They are AVX-512 assembly, else flat's Axpy
//     and Dot. Other strides take the per-row loops of tapLoop.
//   - GEMM: GemmForward, GemmData, GemmFilter. For stride 1, the forward
//     pass copies a wide im2col matrix, with one contiguous row per channel
//     and tap; see cols.go. It then makes one flat.Gemm per image, of
//     depth CinG·KVol. The gradients make one flat.Gemm per kernel tap over
//     strided views of the planes, with no im2col matrix. So do the
//     forwards whose im2col matrix would exceed ColsMaxFloats. Other
//     strides take im2col or col2im and one flat.Gemm.
//
// Small outputs with many channels take neither family. This is ResNet's
// last stages: 16 output channels or more, an inner dimension Cin·KVol of
// 32 or more, and groups 1. They take one GEMM over the whole batch. The
// images sit side by side in the columns of an im2col matrix built from
// the small path's table; see smallgemm.go and useSmallGemm. COSTS.md
// lists the measurements behind these rules. TestResNet18Paths prints
// each ResNet-18 layer's chosen paths.
//
// ForwardBias is Forward with a per-channel bias and an optional ReLU. The
// blocked kernel starts its sums at the bias and applies ReLU in
// registers; the other paths add both in one pass. The stride-1 filter
// gradient splits its kernel taps over goroutines, and the blocked kernels
// split the batch. Either way every sum keeps its order, so results have
// the same bits on any number of goroutines.
//
// Scratch buffers come from free lists, so the kernels allocate nothing
// once warm.
//
// The package is imported only by ad.
package conv
