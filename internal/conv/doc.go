// Package conv holds the raw convolution kernels behind ad's conv family:
// the forward convolution, its data gradient (transposed convolution) and
// its filter gradient, for 1-, 2- and 3-D spatial inputs with stride,
// padding, dilation and groups, in PyTorch's layout:
//
//	x: (N, Cin, spatial…)   w: (Cout, Cin/Groups, k…)   y: (N, Cout, out…)
//
// For stride 1 with AVX-512, Forward and Data first try the blocked direct
// kernels (blockForward, blockData; block.go): with output channels
// (Forward) or input channels (Data) per group a multiple of 8 and outputs
// of more than SmallMaxOut positions, they run ahead of both families below
// on every shape BenchmarkForwardPaths measures, so UseGemm does not
// decide those. Otherwise each operation has two families of
// implementations, chosen by UseGemm:
//
//   - direct (DirectForward, DirectData, DirectFilter): for outputs of at
//     most SmallMaxOut positions (deepchain's 2×2 images), a walk over a
//     cached list of the (tap, output, input) triples that exist, with
//     four channels' sums in registers; for stride 1, whole-plane tap
//     kernels over a "wide" layout of the planes (see wideGeom, taps.go;
//     AVX-512 assembly, else flat's Axpy and Dot); otherwise per-row loops
//     (tapLoop).
//   - GEMM (GemmForward, GemmData, GemmFilter): for stride 1, the forward
//     pass copies a wide im2col matrix (one contiguous row per (channel,
//     tap), see cols.go) and makes one flat.Gemm per image of depth
//     CinG·KVol; the gradients (and forwards whose im2col matrix would
//     exceed ColsMaxFloats) make one flat.Gemm per kernel tap over strided
//     views of the planes, with no im2col matrix; otherwise im2col (or
//     col2im) and one flat.Gemm.
//
// Small outputs with many channels (16 output channels and an inner
// dimension Cin·KVol of 32 or more, groups 1: ResNet's last stages) take
// neither family: one GEMM over the whole batch, the images side by side
// in the columns of an im2col matrix built from the small path's table
// (smallgemm.go, useSmallGemm). COSTS.md lists the measurements behind
// these rules and each ResNet-18 layer's chosen paths (TestResNet18Paths).
//
// ForwardBias is Forward with a per-channel bias and an optional ReLU: the
// blocked kernel starts its sums at the bias and applies ReLU in registers;
// the other paths add both in one pass. The stride-1 filter gradient splits
// its kernel taps over goroutines, and the blocked kernels split the batch;
// either way every sum keeps its order, so results have the same bits on
// any number of goroutines.
//
// Scratch buffers come from free lists, so the kernels allocate nothing
// once warm.
//
// The package is imported only by ad.
package conv
