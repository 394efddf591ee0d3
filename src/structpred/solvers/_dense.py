"""In-place dense vector updates of the primal step rules (no temporaries: with hashed features the
weights have 65,535 entries and a step's oracle touches a few hundred of them)."""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange


@njit(cache=True)
def scale(W, rho):
    """``W <- rho W``."""
    W = W.ravel()
    for j in range(W.size):
        W[j] *= rho


@njit(cache=True)
def mix(S, a, W, b):
    """``S <- a S + b W``."""
    S = S.ravel()
    W = W.ravel()
    for j in range(S.size):
        S[j] = a * S[j] + b * W[j]


@njit(cache=True)
def scaled(G, W, rho):
    """``G <- rho W``."""
    G = G.ravel()
    W = W.ravel()
    for j in range(G.size):
        G[j] = rho * W[j]


@njit(cache=True, inline="always")
def _adagrad_at(W, S, G, j, step, lam):
    """Coordinate ``j`` of :func:`adagrad_update`."""
    g = G[j]
    s = S[j] + g * g
    S[j] = s
    w = W[j] - step * g / np.sqrt(s if s > 0.0 else 1.0)
    W[j] = w
    G[j] = lam * w


@njit(cache=True, error_model="numpy")   # no zero check on the division: the loop vectorises
def adagrad_update(W, S, G, step, lam):
    """AdaGrad's coordinate update ``S <- S + G^2``, ``W <- W - step G / sqrt(S)`` (``sqrt(S)`` read
    as 1 where ``S = 0``, i.e. ``G = 0``), then ``G <- lam W`` (the next step's regulariser
    gradient), in one pass: the bits of the numpy expressions.

    Branch-free, so its square roots and divisions vectorise: a zero ``G[j]`` adds ``+0`` to
    ``S[j]`` (never ``-0``: a sum of squares from zero), which leaves it as it is, and subtracts
    ``step G[j] / sqrt(.)``, a zero of ``step G[j]``'s sign, from ``W[j]``, as numpy's ``W - step *
    G`` would.  At 2^20 weights (hashed SRL features) with AGM's dense ``lam W`` in ``G`` this
    takes a quarter of the time of a loop that skipped zero ``G[j]`` (0.98 vs 4.46 ms with 30 %
    of ``G`` nonzero, about as fast with none; AMD EPYC Zen 4, 2026-11-29).  Writing the next
    ``lam W`` here, while ``W[j]`` is in a register, saves :func:`scaled`'s separate pass."""
    W = W.ravel()
    S = S.ravel()
    G = G.ravel()
    for j in range(W.size):
        _adagrad_at(W, S, G, j, step, lam)


@njit(cache=True, error_model="numpy", parallel=True)
def adagrad_update_threads(W, S, G, step, lam):
    """:func:`adagrad_update` with the coordinates split over numba's threads
    (``numba.set_num_threads``): each coordinate's operations are the same, so are the bits,
    whatever the number of threads.  Taken at hashed sizes (see :data:`THREADS_FROM`)."""
    W = W.ravel()
    S = S.ravel()
    G = G.ravel()
    for j in prange(W.size):
        _adagrad_at(W, S, G, j, step, lam)


#: weights from which :func:`adagrad_update_for` takes the threaded update when numba has more
#: than one thread.  ``bench/bench_adagrad.py`` on the Intel host (16 cores, 2026-11-29), 2 / 4
#: threads against one: 1.29 / 1.66x at 2^14 weights (30 us a step), 1.70 / 2.84x at 2^16, 2.09 /
#: 3.80x at 2^20; below 2^16 a step's dense pass is small beside its oracle, and stays on one thread
THREADS_FROM = 2 ** 16


def adagrad_update_for(size: int):
    """The AdaGrad update for ``size`` weights at numba's current number of threads."""
    return adagrad_update_threads if size >= THREADS_FROM and numba.get_num_threads() > 1 else adagrad_update
