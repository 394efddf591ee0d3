"""Numba kernels of the multiclass space (simplex embeddings ``e_y in R^k``).

``kind`` selects a fast matrix-vector product for structured loss matrices:
0 = dense ``A``, 1 = zero-one ``A = 11^T - I`` (``Ax = sum(x) - x``, O(k)),
2 = absolute ``A_ij = |i - j|`` (prefix sums, O(k)).  Both structured kinds are
symmetric so ``A^T x = A x``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from structpred.outputs._game_kernels import ABSOLUTE, ZERO_ONE, node_game

KIND_DENSE = 0
KIND_ZERO_ONE = 1
KIND_ABSOLUTE = 2


@njit(cache=True, fastmath=False)
def matvec(A, kind, x, out):
    """``out = A @ x``."""
    k = x.shape[0]
    if kind == 1:
        s = 0.0
        for j in range(k):
            s += x[j]
        for j in range(k):
            out[j] = s - x[j]
    elif kind == 2:
        tot = 0.0
        stot = 0.0
        for j in range(k):
            tot += x[j]
            stot += j * x[j]
        c = 0.0
        sc = 0.0
        for i in range(k):
            c += x[i]
            sc += i * x[i]
            # sum_{j<=i} (i-j) x_j + sum_{j>i} (j-i) x_j
            out[i] = i * c - sc + (stot - sc) - i * (tot - c)
    else:
        for i in range(k):
            s = 0.0
            for j in range(k):
                s += A[i, j] * x[j]
            out[i] = s


@njit(cache=True)
def rmatvec(A, kind, x, out):
    """``out = A.T @ x``."""
    if kind != 0:
        matvec(A, kind, x, out)
        return
    k = x.shape[0]
    for j in range(k):
        out[j] = 0.0
    for i in range(k):
        xi = x[i]
        if xi != 0.0:
            for j in range(k):
                out[j] += A[i, j] * xi


@njit(cache=True)
def _log_normalise_exp(z, out):
    """In place ``z -= logsumexp(z)`` and ``out = exp(z)`` (one exp per entry)."""
    k = z.shape[0]
    m = z[0]
    for j in range(1, k):
        if z[j] > m:
            m = z[j]
    s = 0.0
    for j in range(k):
        e = np.exp(z[j] - m)
        out[j] = e
        s += e
    inv = 1.0 / s
    lse = m + np.log(s)
    for j in range(k):
        z[j] -= lse
        out[j] *= inv


@njit(cache=True)
def loss_augmented(v, y, A):
    """``argmax_y' A[y, y'] + v[y']`` (ties -> smallest index)."""
    k = v.shape[0]
    best = 0
    bv = A[y, 0] + v[0]
    for j in range(1, k):
        val = A[y, j] + v[j]
        if val > bv:
            bv = val
            best = j
    return best


@njit(cache=True)
def spmp(v, A, kind, eta, n_iter, lmu, lnu, mu_bar, nu_bar, work):
    """Saddle-point mirror prox (M4N Algorithm 2) on simplex x simplex.

    Solves ``max_mu min_nu F(nu, mu) = nu^T A mu + v^T mu`` with entropic (softmax)
    mirror steps for both players.  ``lmu``/``lnu`` hold the log of the current (full
    step) iterates, are used as the starting point and are overwritten with the last
    iterates (the warm-start state).  ``mu_bar``/``nu_bar`` receive the averages of the
    extrapolated (half-step) points, which Theorem G.1 certifies.  ``work`` is a
    ``(6, k)`` scratch array.  Returns ``(gap, lower, upper)`` of the averaged pair:
    ``upper = max_j (A^T nu_bar + v)_j``, ``lower = min_i (A mu_bar)_i + v.mu_bar``.
    """
    k = v.shape[0]
    mu = work[0]
    nu = work[1]
    lmu_h = work[2]
    lnu_h = work[3]
    g = work[4]
    tmp = work[5]
    for j in range(k):
        mu_bar[j] = 0.0
        nu_bar[j] = 0.0
    for j in range(k):
        mu[j] = np.exp(lmu[j])
        nu[j] = np.exp(lnu[j])
    for it in range(n_iter):
        # extrapolation (half) step from the prox centre (lmu, lnu), gradients at (mu, nu)
        rmatvec(A, kind, nu, g)                     # A^T nu
        matvec(A, kind, mu, tmp)                    # A mu
        for j in range(k):
            lmu_h[j] = lmu[j] + eta * (g[j] + v[j])  # ascent for mu
            lnu_h[j] = lnu[j] - eta * tmp[j]         # descent for nu
        _log_normalise_exp(lmu_h, mu)
        _log_normalise_exp(lnu_h, nu)
        for j in range(k):
            mu_bar[j] += mu[j]
            nu_bar[j] += nu[j]
        # full step from the same prox centre, gradients at the half-step point
        rmatvec(A, kind, nu, g)
        matvec(A, kind, mu, tmp)
        for j in range(k):
            lmu[j] = lmu[j] + eta * (g[j] + v[j])
            lnu[j] = lnu[j] - eta * tmp[j]
        _log_normalise_exp(lmu, mu)
        _log_normalise_exp(lnu, nu)
    inv = 1.0 / max(n_iter, 1)
    if n_iter == 0:
        for j in range(k):
            mu_bar[j] = mu[j]
            nu_bar[j] = nu[j]
        inv = 1.0
    for j in range(k):
        mu_bar[j] *= inv
        nu_bar[j] *= inv
    # exact duality gap of the averaged pair (both inner problems are linear)
    rmatvec(A, kind, nu_bar, g)
    upper = g[0] + v[0]
    for j in range(1, k):
        if g[j] + v[j] > upper:
            upper = g[j] + v[j]
    matvec(A, kind, mu_bar, tmp)
    lower = tmp[0]
    for j in range(1, k):
        if tmp[j] < lower:
            lower = tmp[j]
    for j in range(k):
        lower += v[j] * mu_bar[j]
    return upper - lower, lower, upper


@njit(cache=True)
def spmp_batch(V, A, kind, eta, n_iter, LMU, LNU, MU, NU, GAP, LOWER, UPPER):
    """Row-wise :func:`spmp`; ``LMU``/``LNU`` (n, k) are read and overwritten."""
    n, k = V.shape
    work = np.empty((6, k))
    for i in range(n):
        gap, lo, up = spmp(V[i], A, kind, eta, n_iter, LMU[i], LNU[i], MU[i], NU[i], work)
        GAP[i] = gap
        LOWER[i] = lo
        UPPER[i] = up


@njit(cache=True)
def min_loss(A, kind, mu, tmp):
    """``min_y' (A mu)_y'`` (the concave part of the M4N dual, M4N (D))."""
    matvec(A, kind, mu, tmp)
    m = tmp[0]
    for j in range(1, tmp.shape[0]):
        if tmp[j] < m:
            m = tmp[j]
    return m


@njit(cache=True)
def exact_game(v, A, kind, order, mu, nu, tmp):
    """``max_mu min_j (A mu)_j + v^T mu`` exactly for the zero-one and absolute losses: AGM's node
    game (:func:`structpred.outputs._game_kernels.node_game`, weight 1) writes a maximiser to
    ``mu``; ``nu`` gets the best response ``e_j``, ``j = argmin_j (A mu)_j``.  Returns ``(value
    of mu, closed-form value)``: a lower and an upper bound equal up to rounding."""
    upper = node_game(v, 1.0, ZERO_ONE if kind == KIND_ZERO_ONE else ABSOLUTE, order, mu)
    matvec(A, kind, mu, tmp)
    j = 0
    for i in range(1, tmp.shape[0]):
        if tmp[i] < tmp[j]:
            j = i
    nu[:] = 0.0
    nu[j] = 1.0
    lower = tmp[j]
    for i in range(v.shape[0]):
        lower += v[i] * mu[i]
    return lower, upper


@njit(cache=True)
def exact_game_batch(V, A, kind, MU, NU, LOWER, UPPER):
    """:func:`exact_game` on each row of ``V``."""
    k = V.shape[1]
    order = np.empty(k, dtype=np.int64)
    tmp = np.empty(k)
    for i in range(V.shape[0]):
        LOWER[i], UPPER[i] = exact_game(V[i], A, kind, order, MU[i], NU[i], tmp)
