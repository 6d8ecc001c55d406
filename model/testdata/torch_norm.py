"""Reference values for model's normalisation layers and losses, from PyTorch.

Run from the repository root with Debian's python3-torch (PyTorch 1.13):

    /usr/bin/python3 model/testdata/torch_norm.py

It writes model/testdata/torch_norm.json, which model/norm_test.go and
model/loss_test.go read; the Go tests never run Python. Inputs are drawn in
float32 (so the Go side holds them exactly) and the references are computed
in float64 from those same values.

Each entry is {"shape": [...], "data": [...]} (row-major), or a number, or
{"labels": [...]} for class indices.
"""

import json
import os

import torch
import torch.nn.functional as F

torch.manual_seed(20240611)
out = {}


def f32(*shape, scale=1.0, shift=0.0):
    """A float32 random normal tensor, returned as float64."""
    return (torch.randn(*shape, dtype=torch.float32) * scale + shift).double()


def put(name, t):
    t = t.detach()
    if t.dim() == 0:
        out[name] = float(t)
    else:
        out[name] = {"shape": list(t.shape), "data": [float(v) for v in t.reshape(-1)]}


def as32(t):
    """Round to float32 and back: parameters the Go side holds exactly."""
    return t.float().double()


# LayerNorm over the last two axes, affine with non-trivial parameters.
x = f32(2, 3, 4, scale=2.0, shift=0.5)
ln = torch.nn.LayerNorm([3, 4]).double()
with torch.no_grad():
    ln.weight.copy_(as32(torch.rand(3, 4) + 0.5))
    ln.bias.copy_(as32(torch.randn(3, 4)))
put("ln_x", x)
put("ln_weight", ln.weight)
put("ln_bias", ln.bias)
put("ln_y", ln(x))
# LayerNorm over the last axis, no affine, eps 1e-3.
ln1 = torch.nn.LayerNorm(4, eps=1e-3, elementwise_affine=False).double()
put("ln1_y", ln1(x))

# BatchNorm2d: two training steps, then evaluation.
bn = torch.nn.BatchNorm2d(3).double()
with torch.no_grad():
    bn.weight.copy_(as32(torch.rand(3) + 0.5))
    bn.bias.copy_(as32(torch.randn(3)))
x1 = f32(4, 3, 2, 2, scale=1.5, shift=0.3)
x2 = f32(4, 3, 2, 2, scale=0.7, shift=-1.0)
put("bn_weight", bn.weight)
put("bn_bias", bn.bias)
put("bn_x1", x1)
put("bn_x2", x2)
bn.train()
put("bn_y1", bn(x1))
put("bn_y2", bn(x2))
put("bn_running_mean", bn.running_mean)
put("bn_running_var", bn.running_var)
bn.eval()
put("bn_eval", bn(x1))

# BatchNorm1d on (N, C), no affine, momentum 0.3, eps 1e-3: one step.
bn1 = torch.nn.BatchNorm1d(3, eps=1e-3, momentum=0.3, affine=False).double()
x3 = f32(5, 3, scale=2.0)
put("bn1_x", x3)
bn1.train()
put("bn1_y", bn1(x3))
put("bn1_running_mean", bn1.running_mean)
put("bn1_running_var", bn1.running_var)
bn1.eval()
put("bn1_eval", bn1(x3))

# Losses, each with reduction "mean" and "sum".
a = f32(4, 3, scale=1.5)
b = f32(4, 3, scale=1.5)
put("loss_a", a)
put("loss_b", b)
z = f32(4, 3, scale=2.0)
yb = as32(torch.rand(4, 3))
put("loss_z", z)
put("loss_yb", yb)
logits = f32(3, 5, scale=2.0)
labels = torch.tensor([4, 0, 2])
logits_sp = f32(2, 3, 4, scale=2.0)
labels_sp = torch.tensor([[2, 0, 1, 2], [1, 1, 0, 2]])
soft = as32(torch.softmax(torch.randn(2, 3, 4, dtype=torch.float64), dim=1))
put("ce_logits", logits)
out["ce_labels"] = {"labels": labels.tolist()}
put("ce_logits_sp", logits_sp)
out["ce_labels_sp"] = {"labels": labels_sp.reshape(-1).tolist()}
put("ce_soft", soft)
probs_sp = as32(torch.softmax(logits_sp, dim=1))
put("ce_probs_sp", probs_sp)
for red in ("mean", "sum"):
    put(f"mse_{red}", F.mse_loss(a, b, reduction=red))
    put(f"l1_{red}", F.l1_loss(a, b, reduction=red))
    put(f"huber_{red}", F.huber_loss(a, b, delta=float(torch.tensor(0.7, dtype=torch.float32)), reduction=red))
    put(f"bce_logits_{red}", F.binary_cross_entropy_with_logits(z, yb, reduction=red))
    put(f"ce_{red}", F.cross_entropy(logits, labels, reduction=red))
    put(f"ce_sp_{red}", F.cross_entropy(logits_sp, labels_sp, reduction=red))
    put(f"ce_soft_{red}", F.cross_entropy(logits_sp, soft, reduction=red))
    put(f"nll_probs_sp_{red}", F.nll_loss(torch.log(probs_sp), labels_sp, reduction=red))
# binary_cross_entropy takes the probabilities: the Go side feeds the
# float32 sigmoid of z; store them so both sides use the same numbers.
put("loss_pb", as32(torch.sigmoid(z)))
for red in ("mean", "sum"):
    put(f"bce_pb_{red}", F.binary_cross_entropy(as32(torch.sigmoid(z)), yb, reduction=red))

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_norm.json")
with open(path, "w") as fh:
    json.dump(out, fh, indent=1, sort_keys=True)
    fh.write("\n")
