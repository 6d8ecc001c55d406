#!/usr/bin/python3
"""Peer for `flatkit bench gemm`: torch.matmul GFLOP/s at 64³, 256³, 1024³ (float32).

Run with Debian's interpreter (python3-torch is installed for /usr/bin/python3 only):

    /usr/bin/python3 cmd/flatkit/peers/torch_matmul.py [--threads 1]
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 cmd/flatkit/peers/torch_matmul.py

The second form lets OpenBLAS pick its kernel from the CPU (AVX-512 on this
machine) instead of the environment's OPENBLAS_CORETYPE. Debian's torch calls
the system libblas.so.3: with only libblas3 installed that is the reference
BLAS, a few GFLOP/s; `apt-get install libopenblas0` switches it to OpenBLAS.
Each line's "blas" field names the library that was loaded.

One JSON line per figure, measured as ../shared/peers/torch_bench.py measures:
warm-up, then `samples` timed batches of `inner` calls each (inner chosen so
that a batch lasts at least 2 ms); median, min and max are over the per-call
rates of the batches. C = A·B into a preallocated C (out=), like flat.Gemm.
"""
import argparse
import json
import math
import os
import statistics
import time

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--sizes", default="64,256,1024")
ap.add_argument("--samples", type=int, default=41)
ap.add_argument("--max-sample-s", type=float, default=6.0, help="time budget per figure")
args = ap.parse_args()

# Thread pools are sized when torch loads: fix them first.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, str(args.threads))

import torch  # noqa: E402

torch.set_num_threads(args.threads)
torch.manual_seed(0)
perf = time.perf_counter
ENV = {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS")}


def blas_libs():
    """The BLAS libraries torch has mapped. Debian's torch calls whatever
    libblas.so.3 points to: the reference BLAS of libblas3 (a few GFLOP/s)
    unless an optimised one such as libopenblas0 is installed, so the
    figures mean nothing without this."""
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                if "blas" in os.path.basename(path).lower() or "/blas/" in path or "openblas" in path:
                    libs.add(os.path.realpath(path))
    except OSError:
        pass
    return sorted(libs)


def measure(fn, min_batch=2e-3, warmup=0.3):
    n, t0 = 0, perf()
    while n < 3 or perf() - t0 < warmup:
        fn()
        n += 1
    per = (perf() - t0) / n
    inner = max(1, math.ceil(min_batch / max(per, 1e-9)))
    samples = args.samples
    budget = int(args.max_sample_s / (per * inner))
    if budget < samples:
        samples = max(budget, min(args.samples, 21))
    ts = []
    for _ in range(max(samples, 1)):
        s = perf()
        for _ in range(inner):
            fn()
        ts.append((perf() - s) / inner)
    ts.sort()
    return ts, inner


for n in [int(s) for s in args.sizes.split(",")]:
    a = torch.rand(n, n, dtype=torch.float32) * 2 - 1
    b = torch.rand(n, n, dtype=torch.float32) * 2 - 1
    c = torch.empty(n, n, dtype=torch.float32)
    ts, inner = measure(lambda: torch.matmul(a, b, out=c))
    libs = blas_libs()
    flops = 2.0 * n * n * n
    print(json.dumps({
        "scenario": "gemm", "case": f"torch.matmul {n}³, {args.threads} thread" + ("s" if args.threads > 1 else ""),
        "median": round(flops / statistics.median(ts) / 1e9, 3),
        "min": round(flops / ts[-1] / 1e9, 3), "max": round(flops / ts[0] / 1e9, 3),
        "unit": "GFLOP/s", "samples": len(ts), "inner": inner, "threads": args.threads,
        "torch": torch.__version__, "env": ENV, "blas": libs,
    }), flush=True)
