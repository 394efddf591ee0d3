"""In-place dense vector updates of the primal step rules (no temporaries: with hashed features the
weights have 65,535 entries and a step's oracle touches a few hundred of them)."""

from __future__ import annotations

import numpy as np
from numba import njit


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


@njit(cache=True)
def adagrad_update(W, S, G, step):
    """AdaGrad's coordinate update ``S <- S + G^2``, ``W <- W - step G / sqrt(S)`` (``sqrt(S)`` read
    as 1 where ``S = 0``, i.e. ``G = 0``), in one pass: the bits of the numpy expression.  A zero
    ``G[j]`` (a weight no sample has touched yet: most of a hashed map's on a small training set)
    leaves ``S[j]`` as it is and subtracts a signed zero from ``W[j]``, without the square root
    and the division."""
    W = W.ravel()
    S = S.ravel()
    G = G.ravel()
    for j in range(W.size):
        g = G[j]
        if g == 0.0:
            W[j] -= step * g
            continue
        s = S[j] + g * g
        S[j] = s
        W[j] -= step * g / np.sqrt(s if s > 0.0 else 1.0)
