"""write_safetensors, shared by the scripts that write flatkit's PyTorch
fixtures (layout/testdata/torch_state_dict.py, model/testdata/torch_model.py,
examples/resnet/testdata/torch_resnet.py).

Debian's PyTorch 1.13 has no safetensors writer, so the format is written here
by hand the way the reference library writes it: an 8-byte little-endian
header length, a JSON header {name: {dtype, shape, data_offsets}} with
{"format": "pt"} metadata, padded with spaces to a multiple of 8, then the raw
little-endian data of the tensors sorted by name, in that order (the
reference library orders by dtype alignment, then name; float32 and int64
are 4- and 8-byte, so name order is the same here).
"""
import json
import struct

import torch

DTYPES = {torch.float32: ("F32", "<f4"), torch.int64: ("I64", "<i8")}


def write_safetensors(path, tensors):
    """Writes tensors (name -> float32 or int64 torch tensor) to path."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        dtype, layout = DTYPES[t.dtype]
        raw = t.numpy().astype(layout).tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
