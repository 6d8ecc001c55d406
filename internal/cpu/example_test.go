package cpu_test

import (
	"fmt"

	"github.com/flatkit/flatkit/internal/cpu"
)

// The rule picks the widest kernel set whose features are all present:
// AVX-512F without FMA is still the generic kernels.
func ExampleFeatures_Level() {
	for _, f := range []cpu.Features{
		{AVX: true},
		{AVX: true, AVX2: true, FMA: true},
		{AVX: true, AVX2: true, FMA: true, AVX512F: true},
		{AVX: true, AVX2: true, AVX512F: true},
	} {
		fmt.Printf("%+v: %v\n", f, f.Level())
	}
	// Output:
	// {AVX:true AVX2:false FMA:false AVX512F:false}: go
	// {AVX:true AVX2:true FMA:true AVX512F:false}: avx2
	// {AVX:true AVX2:true FMA:true AVX512F:true}: avx512
	// {AVX:true AVX2:true FMA:false AVX512F:true}: go
}
