// Package resnet is torchvision's ResNet-18 built from flatkit's model
// layers, as code to copy. New returns the network. TorchName renames
// torchvision's state_dict names to its layout paths. So a PyTorch
// checkpoint's parameters load by name with layout.LoadInto. The same
// rename loads BatchNorm's running statistics into the state buffer.
//
// The network is torchvision.models.resnet18(num_classes=classes), layer
// for layer. It has a 7×7/2 stem convolution without bias, BatchNorm,
// ReLU, and a 3×3/2 max pool with padding 1. Four stages of two
// BasicBlocks of 3×3 convolutions follow. The first block of stages 2–4
// halves the plane with stride 2, and has a 1×1/2 downsampling
// convolution on its shortcut. A global mean pool and a Dense layer end
// it. It is a Chain, so its paths are indices:
//
//	0        conv1            (stem convolution)
//	1        bn1
//	2, 3     relu, maxpool
//	4 … 11   layer1.0 … layer4.1 (two blocks per stage)
//	12, 13   avgpool, flatten
//	14       fc
//
// Each block is a Chain of Parallel(Add, main, shortcut) and Relu. main is
// the Chain conv1, bn1, relu, conv2, bn2. shortcut is the Chain conv, bn,
// or the identity. So "layer2.0.conv2.weight" is "6.0.0.3.weight", and
// "layer2.0.downsample.1.running_var" is "6.0.1.1.running_var".
package resnet
