// Brusselator solves the 2-D Brusselator of the SciML tutorial, a
// reaction-diffusion system on the N×N periodic grid of [0, 1]²,
//
//	u' = α ∇²u + 1 + u²v − 4.4 u + f(x, y, t)
//	v' = α ∇²v + 3.4 u − u²v,        α = 10/Δx²,
//
// where the forcing f = 5 in the disc of radius 0.1 about (0.3, 0.6) from
// t = 1.1 on, on t ∈ [0, 11.5]: at 64×64, 8192 states. The Laplacian
// makes it stiff and its Jacobian sparse, 6 entries a row. The solver
// works with that sparsity pattern and never forms the dense 8192×8192
// matrix. It writes a PNG heatmap of u at a few times and prints a
// one-line summary of the solver's statistics.
//
//	go run ./examples/brusselator                  # 64×64, PNGs in the working directory
//	go run ./examples/brusselator -n 32 -out /tmp  # 32×32
//
// The Jacobian's sparsity pattern is detected from the right-hand side
// written with ad ops (adrhs.go) by odead.Sparsity, from one recording:
// structurally, so it holds at every state. The solve then runs the
// float64 right-hand side and its Jacobian's values in that pattern from
// internal/stiffprob.Bruss2D, which cmd/flatkit's bench stiff also solves;
// the pattern detected is checked to be the one they fill. BDF solves
// with a sparse LU on it (where ode has none, grids of up to 512 states
// fall back to a dense Jacobian). The solve
// restarts at t = 1.1, where the forcing switches on, so that no step
// spans the jump in F.
//
// Flags and their defaults:
//
//	-n      grid points a side, 64
//	-out    directory of the PNGs, .
//	-times  the times of the heatmaps, 0,1.5,4,11.5
package main
