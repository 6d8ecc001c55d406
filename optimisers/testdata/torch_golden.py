#!/usr/bin/python3
"""Golden trajectories of PyTorch's optimisers, for the optimisers package tests.

Run with Debian's python3-torch (1.13), from the repository root:

    /usr/bin/python3 optimisers/testdata/torch_golden.py

It writes optimisers/testdata/torch_golden.json (next to this script). The
output is deterministic: the same torch version writes the same bytes. It
takes well under a second after torch is imported.

The problem: one parameter tensor of 10 float32 values, theta0, and a fixed
sequence of 50 float32 gradient vectors g_1 … g_50. The gradients do not
depend on the parameters (the test is decoupled from any loss): before step t
the script sets p.grad = g_t and calls opt.step(). Weight decay, where a
configuration has it, is applied by torch to that gradient as usual (it reads
the current parameters), so the Go rule must do the same. The gradients are
Gaussian (seeded) times a per-coordinate scale from 1e-3 to 10, plus a
per-coordinate drift so that moments build up; a few entries are exactly 0
(g_10[3], g_20[7], g_21[7]) to exercise the zero-gradient branches (Rprop's
sign, Adamax's max, Adagrad's sum).

JSON format (all numbers are float32 values written as repr(float(x)), which
round-trips exactly whether parsed as float32 or as float64 then narrowed):

    {
      "torch": "1.13.0a0",             torch.__version__ that wrote the file
      "steps": 50,
      "theta0": [10 numbers],          the parameters before step 1
      "grads": [[10 numbers] × 50],    grads[t-1] is g_t, the gradient of step t
      "runs": [
        {
          "name": "adam_amsgrad",      unique, snake_case
          "optimizer": "Adam",         the torch.optim class
          "hyper": {...},              every hyperparameter of the param group,
                                       named as torch names them, including the
                                       defaults that were not passed (lists for
                                       torch's tuples, e.g. "betas": [0.9, 0.999],
                                       booleans as JSON booleans); torch's
                                       implementation switches (foreach, fused,
                                       capturable, differentiable) are left out
          "trajectory": [[10 numbers] × 50]
                                       trajectory[t-1] is the parameter vector
                                       after step t
        },
        …
      ]
    }

Hyperparameters are Python floats (float64) in torch: torch multiplies float32
tensors by them, so the Go side should hold them as float64 or round them the
same way; the agreement asked for is 1e-5 relative plus 1e-6 absolute.

Notes on torch 1.13's semantics that the Go rules must match (single-tensor
code paths, torch/optim/*.py):
  SGD       the first momentum step sets buf = g (no dampening); later
            buf = momentum·buf + (1−dampening)·g; nesterov steps along
            g + momentum·buf.
  Adam      denom = sqrt(v)/sqrt(1−β2^t) + eps; step lr/(1−β1^t); amsgrad keeps
            the running max of v and uses it in denom. weight_decay adds wd·θ
            to g (L2). AdamW instead scales θ by 1 − lr·wd before the update.
  RMSprop   v = α·v + (1−α)·g²; centered subtracts the squared mean gradient;
            avg = sqrt(·) + eps; momentum: buf = m·buf + g/avg, θ −= lr·buf.
  Adagrad   clr = lr / (1 + (t−1)·lr_decay); sum starts at
            initial_accumulator_value; θ −= clr·g/(sqrt(sum) + eps).
  Adadelta  δ = sqrt(u + eps)/sqrt(v + eps)·g; θ −= lr·δ.
  NAdam     μ_t = β1·(1 − 0.5·0.96^(t·momentum_decay)); the running product of
            μ is a float32 tensor; denom = sqrt(v/(1−β2^t)) + eps.
  RAdam     rectified only when ρ_t > 5 (else θ −= lr·m̂); the adaptive term is
            sqrt(1−β2^t)/(sqrt(v) + eps), eps outside the bias correction.
  Adamax    u = max(β2·u, |g| + eps); θ −= lr/(1−β1^t)·m/u.
  Rprop     step sizes start at lr; a sign change multiplies by etas[0] and
            zeroes that gradient entry (no move, and prev = 0); same sign
            multiplies by etas[1]; a zero product keeps the size; clamped to
            step_sizes.
"""

import inspect
import json
import math
import os

import torch

STEPS = 50
THETA0 = [0.5, -1.25, 2.0, 0.0, -0.3, 1.7, -2.2, 0.05, 3.0, -0.8]
SCALE = [1e-3, 1e-2, 0.1, 0.5, 1.0, 1.0, 2.0, 5.0, 10.0, 0.3]
DRIFT = [1e-3, -5e-3, 0.05, 0.2, -0.5, 0.3, 1.0, -2.0, 3.0, 0.0]
ZEROS = [(10, 3), (20, 7), (21, 7)]  # (step t, index) with g_t[index] = 0

# (name, class, keyword arguments). Non-default values where they matter.
RUNS = [
    ("sgd", "SGD", dict(lr=0.1)),
    ("sgd_momentum", "SGD", dict(lr=0.05, momentum=0.9, dampening=0.0)),
    ("sgd_momentum_dampening", "SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("sgd_nesterov", "SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("sgd_weight_decay", "SGD", dict(lr=0.1, weight_decay=0.05)),
    ("sgd_momentum_weight_decay", "SGD", dict(lr=0.05, momentum=0.8, weight_decay=0.05)),
    ("adam", "Adam", dict(lr=0.01)),
    ("adam_betas_eps", "Adam", dict(lr=0.02, betas=(0.8, 0.95), eps=1e-3)),
    ("adam_weight_decay", "Adam", dict(lr=0.01, weight_decay=0.1)),
    ("adam_amsgrad", "Adam", dict(lr=0.01, amsgrad=True)),
    ("adamw", "AdamW", dict(lr=0.01, weight_decay=0.01)),
    ("adamw_large_decay_amsgrad", "AdamW", dict(lr=0.01, weight_decay=0.5, amsgrad=True)),
    ("rmsprop", "RMSprop", dict(lr=0.01, alpha=0.99, eps=1e-8)),
    ("rmsprop_centered", "RMSprop", dict(lr=0.01, alpha=0.9, eps=1e-8, centered=True)),
    ("rmsprop_momentum", "RMSprop", dict(lr=0.01, alpha=0.99, eps=1e-8, momentum=0.9)),
    ("rmsprop_centered_momentum_weight_decay", "RMSprop",
     dict(lr=0.005, alpha=0.95, eps=1e-6, momentum=0.5, centered=True, weight_decay=0.1)),
    ("adagrad", "Adagrad", dict(lr=0.1)),
    ("adagrad_lr_decay", "Adagrad", dict(lr=0.1, lr_decay=0.05)),
    ("adagrad_initial_accumulator", "Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-6)),
    ("adagrad_weight_decay", "Adagrad", dict(lr=0.1, weight_decay=0.1, lr_decay=0.01)),
    ("adadelta", "Adadelta", dict(lr=1.0, rho=0.9, eps=1e-6)),
    ("adadelta_lr_weight_decay", "Adadelta", dict(lr=0.5, rho=0.95, eps=1e-4, weight_decay=0.1)),
    ("nadam", "NAdam", dict(lr=0.01)),
    ("nadam_momentum_decay_weight_decay", "NAdam",
     dict(lr=0.02, betas=(0.85, 0.99), momentum_decay=0.01, weight_decay=0.05)),
    ("radam", "RAdam", dict(lr=0.01)),
    ("radam_betas_weight_decay", "RAdam", dict(lr=0.02, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.05)),
    ("adamax", "Adamax", dict(lr=0.01)),
    ("adamax_betas_weight_decay", "Adamax", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05)),
    ("rprop", "Rprop", dict(lr=0.01)),
    ("rprop_etas_step_sizes", "Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
]

# Implementation switches, not hyperparameters.
SKIP = {"params", "foreach", "fused", "capturable", "differentiable"}


def gradients():
    gen = torch.Generator().manual_seed(20240601)
    noise = torch.randn(STEPS, len(THETA0), generator=gen, dtype=torch.float32)
    g = noise * torch.tensor(SCALE, dtype=torch.float32) + torch.tensor(DRIFT, dtype=torch.float32)
    for t, i in ZEROS:
        g[t - 1, i] = 0.0
    return g


def floats(t):
    out = [float(x) for x in t.reshape(-1).tolist()]
    for x in out:
        if not math.isfinite(x):
            raise ValueError("non-finite value %r" % x)
    return out


def hyper(opt):
    out = {}
    for k, v in sorted(opt.param_groups[0].items()):
        if k in SKIP:
            continue
        out[k] = [number(x) for x in v] if isinstance(v, (tuple, list)) else number(v)
    return out


def number(v):
    """Integers that torch uses as floats (momentum=0, step_sizes' 50) become floats."""
    if isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    return v


def run(cls, kwargs, theta0, grads):
    p = torch.nn.Parameter(theta0.clone())
    if "foreach" in inspect.signature(cls).parameters:
        kwargs = dict(kwargs, foreach=False)  # the single-tensor code path
    opt = cls([p], **kwargs)
    traj = []
    for t in range(STEPS):
        p.grad = grads[t].clone()
        opt.step()
        traj.append(floats(p.detach()))
    return hyper(opt), traj


def row(xs):
    return "[" + ", ".join(repr(x) for x in xs) + "]"


def main():
    torch.set_num_threads(1)
    theta0 = torch.tensor(THETA0, dtype=torch.float32)
    grads = gradients()
    names = set()
    lines = ["{",
             '  "torch": %s,' % json.dumps(torch.__version__),
             '  "steps": %d,' % STEPS,
             '  "theta0": %s,' % row(floats(theta0)),
             '  "grads": [']
    lines += ["    " + row(floats(g)) + ("," if t < STEPS - 1 else "") for t, g in enumerate(grads)]
    lines += ["  ],", '  "runs": [']
    for k, (name, cls_name, kwargs) in enumerate(RUNS):
        assert name not in names, name
        names.add(name)
        h, traj = run(getattr(torch.optim, cls_name), kwargs, theta0, grads)
        lines += ["    {",
                  '      "name": %s,' % json.dumps(name),
                  '      "optimizer": %s,' % json.dumps(cls_name),
                  '      "hyper": %s,' % json.dumps(h, sort_keys=True),
                  '      "trajectory": [']
        lines += ["        " + row(x) + ("," if t < STEPS - 1 else "") for t, x in enumerate(traj)]
        lines += ["      ]", "    }" + ("," if k < len(RUNS) - 1 else "")]
    lines += ["  ]", "}"]
    text = "\n".join(lines) + "\n"
    json.loads(text)  # well-formed
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_golden.json")
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
