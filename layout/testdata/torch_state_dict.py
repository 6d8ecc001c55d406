#!/usr/bin/python3
"""Writes torch_state_dict.safetensors and torch_state_dict.json for layout's
tests: the state_dict of a small PyTorch nn.Sequential, in the safetensors
format the way the reference library writes it (tensors sorted by name, data
in that order, header padded with spaces to a multiple of 8, {"format": "pt"}
metadata), and the same values as JSON to check against.

Debian's PyTorch 1.13 has no safetensors writer, so the format is written by
safetensors_writer.py beside this script. Run with Debian's interpreter:

    /usr/bin/python3 layout/testdata/torch_state_dict.py
"""
import json
import os

import torch
import torch.nn as nn

from safetensors_writer import write_safetensors

torch.manual_seed(0)
net = nn.Sequential(
    nn.Conv2d(1, 2, 3),
    nn.BatchNorm2d(2),
    nn.ReLU(),
    nn.Flatten(),
    nn.Linear(2 * 2 * 2, 3),
)
net.train()
net(torch.randn(4, 1, 4, 4))  # move the running statistics and num_batches_tracked
sd = net.state_dict()

names = sorted(sd)
here = os.path.dirname(os.path.abspath(__file__))
write_safetensors(os.path.join(here, "torch_state_dict.safetensors"), sd)
with open(os.path.join(here, "torch_state_dict.json"), "w") as f:
    json.dump({n: {"shape": list(sd[n].shape), "values": sd[n].flatten().tolist()} for n in names}, f, indent=1)
