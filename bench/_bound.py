"""The arithmetic bound of a kernel on this machine: its counted operations times what one costs here.

``op_costs()`` measures, in compiled loops over arrays that stay in L1 cache, the seconds per
multiply-add (a dependent sum, as a row sum is, and an independent update, as a vectorised loop
is), per ``exp``, per ``log`` and per division.  ``bound(counts, costs)`` is then the time a kernel
with those operation counts cannot beat on this core, and a benchmark prints its measured time
over that bound (1.0 = at the bound).

``op_costs(scalar=True)`` times the same loops compiled with LLVM's loop and SLP vectorisers off
(``numba.config.LOOP_VECTORIZE`` and ``SLP_VECTORIZE``, fresh uncached dispatchers): one operation
per instruction at this core's throughput for independent operations.  ``bound_costs()`` gives the
two cost sets a benchmark divides by: ``"vectorised"`` (``op_costs()``: the bound only a kernel
whose every loop vectorises approaches) and ``"scalar"``, the multiply-adds and divisions at their
scalar costs but ``exp`` and ``log`` at their vectorised ones (kernels take them in loops of their
own, which vectorise), the stricter of the two readings of a scalar bound: with scalar ``exp`` and
``log`` as well (``op_costs(scalar=True)``) the bound is looser still.  Issue 40's goal for the
chain SP-MP is at most twice the scalar bound.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from structpred.outputs._fastmath import fexp, flog

N = 2048       # elements per measuring loop (16 KiB: L1)
REPEAT = 2000  # loops per measurement


def _dependent_fma(x, y, repeat):
    s = 0.0
    for _ in range(repeat):
        for i in range(x.shape[0]):
            s += x[i] * y[i]
    return s


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


def _flog_loop(x, out, repeat):
    for _ in range(repeat):
        for i in range(x.shape[0]):
            out[i] = flog(x[i])
    return out[0]


@njit(cache=True)
def _div_op(v):
    return 1.0 / v


def _unary(op, x, out, repeat):
    for _ in range(repeat):
        for i in range(x.shape[0]):
            out[i] = op(x[i])
    return out[0]


def _loops(scalar: bool) -> dict:
    """The measuring loops, compiled (``scalar``: with the vectorisers off, not cached)."""
    from numba import config

    saved = config.LOOP_VECTORIZE, config.SLP_VECTORIZE
    if scalar:
        config.LOOP_VECTORIZE, config.SLP_VECTORIZE = 0, 0
    try:
        loops = {"fma_dep": njit(cache=not scalar)(_dependent_fma), "fma": njit(cache=not scalar)(_independent_fma),
                 "unary": njit(_unary), "flog": njit(cache=not scalar, error_model="numpy")(_flog_loop)}
        x, out = np.ones(4), np.empty(4)
        loops["fma_dep"](x, x, 1)       # compile here, with the vectorisers as chosen
        loops["fma"](x, out, 1)
        loops["flog"](x, out, 1)
        for op in (_exp_op, _fexp_op, _log_op, _div_op):
            loops["unary"](op, x, out, 1)
    finally:
        config.LOOP_VECTORIZE, config.SLP_VECTORIZE = saved
    return loops


def _per_op(f, *args) -> float:
    f(*args[:-1], 1)  # compile
    best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        f(*args)
        best = min(best, time.perf_counter() - t0)
    return best / (N * args[-1])


def op_costs(scalar: bool = False) -> dict[str, float]:
    """Seconds per operation on this core: ``fma_dep`` (a reduction), ``fma`` (independent,
    vectorisable), ``exp`` and ``log`` (each the cheaper of the C library's and the kernels'
    inlined :func:`~structpred.outputs._fastmath.fexp`, :func:`~structpred.outputs._fastmath.flog`),
    ``div``; ``scalar``: each from its loop compiled without vectorisation."""
    rng = np.random.default_rng(0)
    x, y, out = rng.random(N) + 0.5, rng.random(N), np.empty(N)
    k = _loops(scalar)
    un = k["unary"]
    return {"fma_dep": _per_op(k["fma_dep"], x, y, REPEAT), "fma": _per_op(k["fma"], x, y.copy(), REPEAT),
            "exp": min(_per_op(un, _exp_op, x - 1.0, out, REPEAT), _per_op(un, _fexp_op, x - 1.0, out, REPEAT)),
            "log": min(_per_op(un, _log_op, x, out, REPEAT), _per_op(k["flog"], x, out, REPEAT)),
            "div": _per_op(un, _div_op, x, out, REPEAT)}


def bound_costs() -> dict[str, dict[str, float]]:
    """``{"scalar": ..., "vectorised": ..., "all scalar": ...}``: the cost sets of the module docstring
    (``"all scalar"``: ``op_costs(scalar=True)``, exps and logs scalar too)."""
    vec, sca = op_costs(), op_costs(scalar=True)
    return {"scalar": {**sca, "exp": vec["exp"], "log": vec["log"]}, "vectorised": vec, "all scalar": sca}


def bound(counts: dict[str, float], costs: dict[str, float]) -> float:
    """Seconds the counted operations take at this core's measured costs."""
    return sum(n * costs[op] for op, n in counts.items())


def describe(costs: dict[str, float]) -> str:
    return ", ".join(f"{op} {1e9 * c:.2f} ns" for op, c in costs.items())


def _widest(asm: str) -> str:
    """The widest register of the packed double arithmetic in ``asm``: ``zmm`` (8 doubles a
    vector), ``ymm`` (4), ``xmm`` (2), or ``scalar`` (no packed double arithmetic)."""
    import re

    packed = re.findall(r"^\s*v?(?:add|sub|mul|div|fmadd\w*|max|min|rndscale|round|cvt\w*)pd\b.*$", asm, re.M)
    for reg in ("zmm", "ymm", "xmm"):
        if any(f"%{reg}" in line for line in packed):
            return reg
    return "scalar"


def vector_width() -> dict[str, str]:
    """How the measuring loops of ``fexp`` and ``flog`` vectorise in this process (numba's target,
    ``structpred._numba_target``): the widest register of their packed double arithmetic, read from
    the assembly of fresh uncached compilations (numba cannot show the assembly of cached code)."""
    from numba import njit

    x, out = np.ones(4), np.empty(4)
    unary = njit(_unary)
    unary(_fexp_op, x, out, 1)
    flog_loop = njit(error_model="numpy")(_flog_loop)
    flog_loop(x, out, 1)
    return {"fexp": _widest("\n".join(unary.inspect_asm().values())),
            "flog": _widest("\n".join(flog_loop.inspect_asm().values()))}
