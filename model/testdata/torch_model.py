#!/usr/bin/python3
"""Writes torch_model.safetensors for model's PyTorch fixture test
(model/torch_fixture_test.go): a small nn.Sequential of convolutions,
pooling, a transposed convolution and linear layers with PyTorch's default
initialisation, in eval mode; its state_dict tensors under their state_dict
names ("0.weight", …) plus an "input" batch and the network's "output" on it.

Debian's PyTorch 1.13 has no safetensors writer, so the format is written
by layout/testdata/safetensors_writer.py (an 8-byte little-endian header
length, a JSON header {name: {dtype, shape, data_offsets}} padded with spaces
to a multiple of 8, then the raw little-endian float32 data in header
order). The Go test never runs Python.
Run from the repository root with Debian's interpreter:

    /usr/bin/python3 model/testdata/torch_model.py
"""
import os
import sys

import torch
import torch.nn as nn

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "layout", "testdata"))
from safetensors_writer import write_safetensors  # noqa: E402

torch.manual_seed(20240612)
net = nn.Sequential(
    nn.Conv2d(1, 4, 3, padding=1),  # 0: (2, 4, 8, 8)
    nn.ReLU(),  # 1
    nn.MaxPool2d(2),  # 2: (2, 4, 4, 4)
    nn.Conv2d(4, 6, 3, stride=1, groups=2, padding=(1, 0)),  # 3: (2, 6, 4, 2)
    nn.ReLU(),  # 4
    nn.AvgPool2d(2),  # 5: (2, 6, 2, 1)
    # 6: (2, 3, 4, 4); output_padding 1 within padding 1 on axis 0 and past
    # padding 0 on axis 1
    nn.ConvTranspose2d(6, 3, 3, stride=2, padding=(1, 0), output_padding=1, groups=3),
    nn.AdaptiveAvgPool2d((3, 2)),  # 7: (2, 3, 3, 2), overlapping windows on axis 0
    nn.Flatten(),  # 8: (2, 18)
    nn.Linear(18, 10),  # 9
    nn.Tanh(),  # 10
    nn.Linear(10, 3),  # 11
)
net.eval()
x = torch.randn(2, 1, 8, 8)
with torch.no_grad():
    y = net(x)

tensors = dict(net.state_dict())
tensors["input"] = x
tensors["output"] = y

assert all(t.dtype == torch.float32 for t in tensors.values())
write_safetensors(os.path.join(here, "torch_model.safetensors"), tensors)
