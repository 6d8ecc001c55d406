#!/usr/bin/python3
"""Writes torch_state_dict.safetensors and torch_state_dict.json for layout's
tests: the state_dict of a small PyTorch nn.Sequential, in the safetensors
format the way the reference library writes it (tensors sorted by name, data
in that order, header padded with spaces to a multiple of 8, {"format": "pt"}
metadata), and the same values as JSON to check against.

Debian's PyTorch 1.13 has no safetensors writer, so the format is written here
from the state_dict itself. Run with Debian's interpreter:

    /usr/bin/python3 layout/testdata/torch_state_dict.py
"""
import json
import os
import struct

import torch
import torch.nn as nn

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

DTYPES = {torch.float32: "F32", torch.int64: "I64"}
names = sorted(sd)  # the reference library orders by dtype alignment, then name; all here are 4- or 8-byte
header, blobs, offset = {}, [], 0
for name in names:
    t = sd[name].contiguous()
    raw = t.numpy().tobytes()  # little-endian on this machine
    header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
    blobs.append(raw)
    offset += len(raw)
header["__metadata__"] = {"format": "pt"}
h = json.dumps(header, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "torch_state_dict.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)))
    f.write(h)
    for b in blobs:
        f.write(b)
with open(os.path.join(here, "torch_state_dict.json"), "w") as f:
    json.dump({n: {"shape": list(sd[n].shape), "values": sd[n].flatten().tolist()} for n in names}, f, indent=1)
