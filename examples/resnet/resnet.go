package resnet

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flatkit/flatkit/ad"
	"github.com/flatkit/flatkit/model"
)

// Blocks18 is ResNet-18's number of BasicBlocks per stage.
var Blocks18 = [4]int{2, 2, 2, 2}

// ResNet18 returns torchvision's resnet18(num_classes=classes).
func ResNet18(classes int) model.Layer { return New(64, Blocks18, classes) }

// New returns a ResNet of BasicBlocks whose stages have width, 2·width,
// 4·width and 8·width channels, and blocks[i] blocks each. It ends in a
// Dense layer to classes outputs. torchvision's ResNet(BasicBlock, blocks)
// has width 64. A small width gives the same architecture at a fraction of
// the cost, for tests.
func New(width int, blocks [4]int, classes int) model.Layer {
	k3, k1, k7 := []int{3, 3}, []int{1, 1}, []int{7, 7}
	layers := []model.Layer{
		model.Conv(k7, 3, width, model.Stride(2), model.Pad(3), model.NoBias()),
		model.BatchNorm(width),
		model.Relu(),
		model.MaxPool(k3, model.Stride(2), model.Pad(1)),
	}
	in := width
	for stage, n := range blocks {
		out := width << stage
		for b := 0; b < n; b++ {
			stride := 1
			if stage > 0 && b == 0 {
				stride = 2
			}
			main := model.Chain(
				model.Conv(k3, in, out, model.Stride(stride), model.Pad(1), model.NoBias()),
				model.BatchNorm(out),
				model.Relu(),
				model.Conv(k3, out, out, model.Pad(1), model.NoBias()),
				model.BatchNorm(out),
			)
			var short model.Layer = identity
			if stride != 1 || in != out {
				short = model.Chain(
					model.Conv(k1, in, out, model.Stride(stride), model.NoBias()),
					model.BatchNorm(out),
				)
			}
			layers = append(layers, model.Chain(model.Parallel(ad.Add, main, short), model.Relu()))
			in = out
		}
	}
	layers = append(layers, model.GlobalMeanPool(), model.Flatten(), model.Dense(in, classes))
	return model.Chain(layers...)
}

// identity is the shortcut of a block that keeps its shape.
var identity = model.Func("Identity", func(x ad.Var) ad.Var { return x })

// The first block's index in the top-level Chain, and the block paths of
// the parts of a torchvision BasicBlock.
const firstBlock = 4

var blockPart = map[string]string{
	"conv1":        "0.0.0",
	"bn1":          "0.0.1",
	"conv2":        "0.0.3",
	"bn2":          "0.0.4",
	"downsample.0": "0.1.0",
	"downsample.1": "0.1.1",
}

// TorchName returns the layout path of a torchvision ResNet state_dict
// name, in New's parameter or state layout, for the blocks per stage of
// the network. It returns "" for a name to skip: BatchNorm's
// num_batches_tracked, which flatkit does not keep, and names that are not
// ResNet's. Use it with layout.Rename:
//
//	layout.Rename(func(n string) string { return resnet.TorchName(n, resnet.Blocks18) })
func TorchName(name string, blocks [4]int) string {
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 {
		return ""
	}
	mod, leaf := name[:dot], name[dot+1:]
	if leaf == "num_batches_tracked" {
		return ""
	}
	switch mod {
	case "conv1":
		return "0." + leaf
	case "bn1":
		return "1." + leaf
	case "fc":
		return strconv.Itoa(firstBlock+blocks[0]+blocks[1]+blocks[2]+blocks[3]+2) + "." + leaf
	}
	// layerS.B.part
	var stage, block int
	var part string
	rest, ok := strings.CutPrefix(mod, "layer")
	if !ok {
		return ""
	}
	s, rest, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	b, part, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	var err error
	if stage, err = strconv.Atoi(s); err != nil || stage < 1 || stage > 4 {
		return ""
	}
	if block, err = strconv.Atoi(b); err != nil || block < 0 || block >= blocks[stage-1] {
		return ""
	}
	p, ok := blockPart[part]
	if !ok {
		return ""
	}
	idx := firstBlock + block
	for i := 0; i < stage-1; i++ {
		idx += blocks[i]
	}
	return fmt.Sprintf("%d.%s.%s", idx, p, leaf)
}
