// Package cpu decides, once and by one rule, which SIMD kernel set this
// machine runs. flat, internal/vmath, internal/conv, optimisers and ode
// all read Best instead of asking golang.org/x/sys/cpu themselves.
//
// The rule is Features.Level: AVX512 needs AVX-512F, AVX2, FMA and AVX;
// AVX2 needs AVX2, FMA and AVX; otherwise Generic. Each level includes the
// one below because the wide kernels lean on the narrower ones: flat's
// AVX-512 GEMM hands narrow products to its AVX2 kernel. FMA is part of
// the AVX2 level because flat's AVX2 kernels need it. No x86 CPU ships
// AVX2 without FMA or AVX-512F without AVX2. So on real hardware the
// kernels that use no FMA, such as vmath and Adam, lose nothing. x/sys/cpu
// reports the wide features only where the operating system saves their
// registers.
//
// It is a leaf utility of internal/: it imports nothing of flatkit's and
// any package of the module may use it.
package cpu
