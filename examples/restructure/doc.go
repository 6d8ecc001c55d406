// Restructure is flatkit's main job in one program. A 256→256 dense layer,
// PyTorch's nn.Linear(256, 256) at batch 1, is written as a plain Go
// struct. It is destructured once into a flat []float32. Then it is turned
// back into a model 100 000 times, from two alternating parameter vectors.
// After every restructure a forward pass runs through the struct's fields,
// by gonum's blas32.Gemv.
//
//	go run ./examples/restructure
//
// It prints the time per step for Restructure alone and for Restructure
// plus the forward pass. It prints the heap allocations of each loop, from
// runtime.MemStats.Mallocs, which are zero in steady state. Last comes a
// checksum of the final output, the same on every run and every machine
// with the same gonum.
package main
