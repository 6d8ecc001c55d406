// Cnn trains a small convolutional network with model, ad and optimisers.
// It tells four kinds of stroke apart in noisy 12×12 images: a horizontal,
// a vertical, a diagonal and an anti-diagonal line at a random place.
//
//	go run ./examples/cnn                  # 400 steps of Adam, batch 32
//	go run ./examples/cnn -steps 100 -ckpt /tmp/cnn.safetensors
//
// The images are drawn from a seeded generator, so the default data is the
// same for every run. The network is
//
//	Conv 3×3 1→8 pad 1, Relu, MaxPool 2×2, Conv 3×3 8→16 pad 1, Relu,
//	GlobalMeanPool, Flatten, Dense 16→4
//
// with parameters in one flat buffer laid out with PyTorch's nn.Sequential
// paths, "0.weight" to "7.bias". It is trained with ClipGlobalNorm(1) and
// AdamW on the logit cross-entropy. Every 100 steps the program prints the
// training loss and the accuracy on 512 held-out images. At the end it
// saves the parameters atomically to a safetensors checkpoint. Then it
// loads them back by name and checks that the reloaded network predicts
// the same classes.
//
// One training step reuses its tape, so once warm it allocates nothing.
// The program prints the count. Go's runtime still fills its
// type-assertion caches now and then during the first few hundred steps.
//
// Flags and their defaults:
//
//	-steps 400
//	-batch 32
//	-lr 0.01
//	-seed 1
//	-ckpt a file in the temporary directory
package main
