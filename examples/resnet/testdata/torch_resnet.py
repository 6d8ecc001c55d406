#!/usr/bin/python3
"""Writes the PyTorch fixtures of examples/resnet's tests (resnet_test.go).

torch_resnet.safetensors: a width-reduced torchvision ResNet-18 (torchvision's
BasicBlock and ResNet layout with stage widths 4-8-16-32 instead of
64-128-256-512, two blocks per stage, 10 classes), under torchvision's
state_dict names, with non-trivial BatchNorm parameters and running
statistics, plus
  input                 x, (2, 3, 48, 48)
  eval.output           the logits in eval mode (running statistics)
  train.output          the logits in train mode (batch statistics)
  train.loss            cross_entropy(train.output, labels [3, 7]), shape (1)
  grad.<name>           d train.loss / d parameter, for every parameter
  train.<name>          every running_mean / running_var after that forward

resnet18_names.json: the state_dict names and shapes of
torchvision.models.resnet18(num_classes=10) itself (no values), so the test
can check that the full-size network's layout holds every tensor.

Debian's PyTorch 1.13 has no safetensors writer, so the format is written by
layout/testdata/safetensors_writer.py. Run from the repository root:

    /usr/bin/python3 examples/resnet/testdata/torch_resnet.py
"""
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models.resnet import BasicBlock, conv1x1

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "layout", "testdata"))
from safetensors_writer import write_safetensors  # noqa: E402

torch.manual_seed(20261203)


class SmallResNet(nn.Module):
    """torchvision.models.resnet.ResNet(BasicBlock, [2, 2, 2, 2]) with a base
    width w instead of 64; the same module names, so the same state_dict
    names."""

    def __init__(self, w, num_classes=10):
        super().__init__()
        self.inplanes = w
        self.conv1 = nn.Conv2d(3, w, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(w)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(w, 2)
        self.layer2 = self._make_layer(2 * w, 2, stride=2)
        self.layer3 = self._make_layer(4 * w, 2, stride=2)
        self.layer4 = self._make_layer(8 * w, 2, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8 * w, num_classes)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes, stride), nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        for _ in range(1, blocks):
            layers.append(BasicBlock(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


net = SmallResNet(4)
with torch.no_grad():
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.weight.copy_(torch.rand_like(m.weight) + 0.5)
            m.bias.copy_(torch.randn_like(m.bias) * 0.2)
    net.train()
    for _ in range(3):  # non-trivial running statistics
        net(torch.randn(4, 3, 48, 48) * 1.5 + 0.3)

tensors = {k: v.clone() for k, v in net.state_dict().items()}
x = torch.randn(2, 3, 48, 48)
labels = torch.tensor([3, 7])
net.eval()
with torch.no_grad():
    tensors["eval.output"] = net(x)
net.train()
out = net(x)
loss = F.cross_entropy(out, labels)
loss.backward()
tensors["input"] = x
tensors["train.output"] = out.detach()
tensors["train.loss"] = loss.detach().reshape(1)
for name, p in net.named_parameters():
    tensors["grad." + name] = p.grad
for name, b in net.named_buffers():
    if b.dtype == torch.float32:
        tensors["train." + name] = b.clone()

write_safetensors(os.path.join(here, "torch_resnet.safetensors"), tensors)

full = torchvision.models.resnet18(num_classes=10)
names = [{"name": k, "shape": list(v.shape)} for k, v in full.state_dict().items()]
with open(os.path.join(here, "resnet18_names.json"), "w") as f:
    json.dump(names, f, separators=(",", ":"))
    f.write("\n")
