"""Learning rates of torch.optim.lr_scheduler schedules, for schedule_test.go.

Run with Debian's python3-torch (1.13):

    /usr/bin/python3 optimisers/testdata/torch_schedules.py > optimisers/testdata/torch_schedules.json

Each schedule drives SGD(lr=base) over a dummy parameter; "lrs" lists the
learning rate in force for optimiser steps 1, 2, … (the scheduler is
stepped once after every optimiser step, so step k uses epoch k-1).
"""
import json
import torch

def run(name, make, base, steps):
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=base)
    sched = make(opt)
    lrs = []
    for _ in range(steps):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return {"name": name, "base": base, "lrs": lrs}

S = torch.optim.lr_scheduler
out = {"torch": torch.__version__, "runs": [
    run("CosineAnnealingLR(T_max=20, eta_min=1e-4)", lambda o: S.CosineAnnealingLR(o, T_max=20, eta_min=1e-4), 0.1, 21),
    run("StepLR(step_size=3, gamma=0.5)", lambda o: S.StepLR(o, step_size=3, gamma=0.5), 0.1, 12),
    run("ExponentialLR(gamma=0.9)", lambda o: S.ExponentialLR(o, gamma=0.9), 0.1, 12),
    run("LinearLR(start_factor=0.25, end_factor=1, total_iters=4)", lambda o: S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=4), 0.1, 8),
]}
print(json.dumps(out, indent=1))
