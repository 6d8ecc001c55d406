#!/usr/bin/python3
"""Reference solutions of SciPy's L-BFGS-B, for the optimisers package tests.

Run with Debian's python3-scipy (1.10), from the repository root:

    /usr/bin/python3 optimisers/testdata/scipy_lbfgsb.py

It writes optimisers/testdata/scipy_lbfgsb.json (next to this script); the
output is deterministic. TestLBFGSBMatchesSciPy reads it.

Problems (every bound is active at the solution for some variable):

  rosenbrock20  the 20-D Rosenbrock function
                sum_i 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2,
                from 0.5 everywhere (x0[3] clipped to 1.2) with
                lower = -2 and upper = 2 everywhere, except
                upper[0] = 0.5, upper[8] = 0.75, upper[15] = 0.9 and
                lower[3] = 1.2.
  lsq           bounded linear least squares, f = 1/2 |A x - b|^2 with A
                40 x 12 and b Gaussian (numpy default_rng(30)), bounds
                0 <= x <= 0.3 on every variable, start 0.15 everywhere.
                lsq_linear (BVLS) solves the same problem as a check; the
                script asserts that both agree to 1e-9.
  driver1       the example of L-BFGS-B's own distribution, n = 25:
                0.25 (x1 - 1)^2 + 4 sum_{i>=2} (x_i - x_{i-1}^2)^2 with the
                odd (1-based) variables in [1.1, 100] (the original has 1,
                where no bound is active with a non-zero gradient), the even ones in
                [-100, 100], from 3 everywhere.

SciPy runs with tolerances far below the 1e-6 the Go test asks for
(ftol 1e-15, gtol 1e-12, maxiter and maxfun 100000), so that the reference
is the solution itself rather than where SciPy stopped.

JSON format (numbers are repr(float(x)), exact float64 values):

    {
      "scipy": "1.10.1",
      "problems": [
        {
          "name": "rosenbrock20",
          "lower": [n], "upper": [n],   bounds; JSON has no Inf, and every
                                         bound here is finite
          "x0": [n],                     the start
          "a": [[n] x m], "b": [m],      lsq only
          "x": [n],                      SciPy's L-BFGS-B solution
          "f": number,                   the loss there
          "active": [indices],           variables at a bound in x
          "trace": [[n] x 8]             SciPy's first 8 iterates (callback),
                                         to check the path, not only the end
        }, ...
      ]
    }
"""
import json
import os

import numpy as np
import scipy
from scipy.optimize import lsq_linear, minimize


def rosen(x):
    return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


def rosen_grad(x):
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return g


OPTIONS = {"ftol": 1e-15, "gtol": 1e-12, "maxiter": 100000, "maxfun": 100000}


TRACE = 8


def solve(fun, jac, x0, lower, upper):
    trace = []
    res = minimize(fun, x0, jac=jac, method="L-BFGS-B",
                   bounds=list(zip(lower, upper)), options=OPTIONS,
                   callback=lambda xk: trace.append(num(xk)) if len(trace) < TRACE else None)
    x = res.x
    active = [i for i in range(len(x)) if x[i] == lower[i] or x[i] == upper[i]]
    return x, float(res.fun), active, trace


def num(v):
    return [float(repr(float(t))) for t in v]


def rosenbrock20():
    n = 20
    lower = np.full(n, -2.0)
    upper = np.full(n, 2.0)
    upper[0], upper[8], upper[15] = 0.5, 0.75, 0.9
    lower[3] = 1.2
    x0 = np.full(n, 0.5)
    x0 = np.clip(x0, lower, upper)
    x, f, active, trace = solve(rosen, rosen_grad, x0, lower, upper)
    assert active, "no bound is active"
    return {"name": "rosenbrock20", "lower": num(lower), "upper": num(upper),
            "x0": num(x0), "x": num(x), "f": f, "active": active, "trace": trace}


def lsq():
    rng = np.random.default_rng(30)
    m, n = 40, 12
    a = rng.standard_normal((m, n))
    b = rng.standard_normal(m)
    lower, upper = np.zeros(n), np.full(n, 0.3)
    x0 = np.full(n, 0.15)

    def fun(x):
        r = a @ x - b
        return 0.5 * float(r @ r)

    def jac(x):
        return a.T @ (a @ x - b)

    x, f, active, trace = solve(fun, jac, x0, lower, upper)
    ref = lsq_linear(a, b, bounds=(lower, upper), method="bvls", tol=1e-14).x
    assert np.max(np.abs(ref - x)) < 1e-9, (ref, x)
    assert any(x[i] == 0 for i in active) and any(x[i] == 0.3 for i in active)
    return {"name": "lsq", "lower": num(lower), "upper": num(upper), "x0": num(x0),
            "a": [num(row) for row in a], "b": num(b), "x": num(x), "f": f, "active": active,
            "trace": trace}


def driver1():
    # The example of L-BFGS-B's distribution (driver1): n = 25,
    # f = 0.25 (x1 - 1)^2 + 4 sum_{i>=2} (x_i - x_{i-1}^2)^2, odd (1-based)
    # variables in [1, 100], even ones in [-100, 100], start 3. The lower
    # bound 1 of the odd ones is 1.1 here, so that bounds are active where
    # the gradient is not zero (at 1, the minimum is the unbounded one).
    n = 25

    def fun(x):
        return float(0.25 * (x[0] - 1) ** 2 + 4 * np.sum((x[1:] - x[:-1] ** 2) ** 2))

    def jac(x):
        t = x[1:] - x[:-1] ** 2
        g = np.zeros_like(x)
        g[0] = 0.5 * (x[0] - 1)
        g[:-1] += -16 * x[:-1] * t
        g[1:] += 8 * t
        return g

    lower = np.array([1.1 if i % 2 == 0 else -100.0 for i in range(n)])
    upper = np.full(n, 100.0)
    x0 = np.full(n, 3.0)
    x, f, active, trace = solve(fun, jac, x0, lower, upper)
    assert active, "no bound is active"
    return {"name": "driver1", "lower": num(lower), "upper": num(upper),
            "x0": num(x0), "x": num(x), "f": f, "active": active, "trace": trace}


def main():
    out = {"scipy": scipy.__version__, "problems": [rosenbrock20(), lsq(), driver1()]}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scipy_lbfgsb.json")
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
