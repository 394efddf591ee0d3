"""The arithmetic bound of a kernel on this machine: its counted operations times what one costs here.

``op_costs()`` measures, in compiled loops over arrays that stay in L1 cache, the seconds per
multiply-add (a dependent sum, as a row sum is, and an independent update, as a vectorised loop
is), per ``exp``, per ``log`` and per division.  ``bound(counts, costs)`` is then the time a kernel
with those operation counts cannot beat on this core, and a benchmark prints its measured time
over that bound (1.0 = at the bound).
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from structpred.outputs._fastmath import fexp, flog

N = 2048       # elements per measuring loop (16 KiB: L1)
REPEAT = 2000  # loops per measurement


@njit(cache=True)
def _dependent_fma(x, y, repeat):
    s = 0.0
    for _ in range(repeat):
        for i in range(x.shape[0]):
            s += x[i] * y[i]
    return s


@njit(cache=True)
def _independent_fma(x, y, repeat):
    for _ in range(repeat):
        for i in range(x.shape[0]):
            y[i] += 1e-9 * x[i]
    return y[0]


@njit(cache=True)
def _exp_op(v):
    return np.exp(v)


@njit(cache=True)
def _fexp_op(v):
    return fexp(v)


@njit(cache=True)
def _log_op(v):
    return np.log(v)


@njit(cache=True, error_model="numpy")
def _flog_loop(x, out, repeat):
    for _ in range(repeat):
        for i in range(x.shape[0]):
            out[i] = flog(x[i])
    return out[0]


@njit(cache=True)
def _div_op(v):
    return 1.0 / v


@njit
def _unary(op, x, out, repeat):
    for _ in range(repeat):
        for i in range(x.shape[0]):
            out[i] = op(x[i])
    return out[0]


def _per_op(f, *args) -> float:
    f(*args[:-1], 1)  # compile
    best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        f(*args)
        best = min(best, time.perf_counter() - t0)
    return best / (N * args[-1])


def op_costs() -> dict[str, float]:
    """Seconds per operation on this core: ``fma_dep`` (a reduction), ``fma`` (independent,
    vectorisable), ``exp`` and ``log`` (each the cheaper of the C library's and the kernels'
    inlined :func:`~structpred.outputs._fastmath.fexp`, :func:`~structpred.outputs._fastmath.flog`),
    ``div``."""
    rng = np.random.default_rng(0)
    x, y, out = rng.random(N) + 0.5, rng.random(N), np.empty(N)
    return {"fma_dep": _per_op(_dependent_fma, x, y, REPEAT), "fma": _per_op(_independent_fma, x, y.copy(), REPEAT),
            "exp": min(_per_op(_unary, _exp_op, x - 1.0, out, REPEAT), _per_op(_unary, _fexp_op, x - 1.0, out, REPEAT)),
            "log": min(_per_op(_unary, _log_op, x, out, REPEAT), _per_op(_flog_loop, x, out, REPEAT)),
            "div": _per_op(_unary, _div_op, x, out, REPEAT)}


def bound(counts: dict[str, float], costs: dict[str, float]) -> float:
    """Seconds the counted operations take at this core's measured costs."""
    return sum(n * costs[op] for op, n in counts.items())


def describe(costs: dict[str, float]) -> str:
    return ", ".join(f"{op} {1e9 * c:.2f} ns" for op, c in costs.items())
