// Restructure is flatkit's main job in one program: a 256→256 dense layer
// (PyTorch's nn.Linear(256, 256), batch 1) written as a plain Go struct,
// destructured once into a flat []float32, then turned back into a model
// 100 000 times from two alternating parameter vectors, with a forward pass
// (gonum's blas32.Gemv) through the struct's fields after every restructure.
//
//	go run ./examples/restructure
//
// It prints the time per step for Restructure alone and for Restructure plus
// the forward pass, the heap allocations of each loop (runtime.MemStats
// Mallocs; zero in steady state) and a checksum of the final output, which is
// the same on every run and every machine with the same gonum.
package main
