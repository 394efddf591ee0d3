"""In-place dense vector updates of the primal step rules (no temporaries: with hashed features the
weights have 65,535 entries and a step's oracle touches a few hundred of them)."""

from __future__ import annotations

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
