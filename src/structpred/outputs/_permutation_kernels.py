"""Numba kernels of the permutation space (Birkhoff polytope, M4N Example 2.2, App. G.3).

Matrices are ``(M, M)`` views of the flattened embedding ``phi(y) = vec(P_y)`` (row-major,
``P[j, y[j]] = 1``).  The entropic (KL) projection onto the doubly stochastic matrices is
computed by Sinkhorn iterations (Cuturi 2013) on dual potentials ``f`` (rows) and ``g``
(columns): ``P = exp(Z + f 1^T + 1 g^T)``, in the scaled domain with absorption
(:func:`sinkhorn_scaled`, multiplies instead of exps), falling back to the log domain
(:func:`sinkhorn_log`) where the scaled kernel underflows.  The potentials are kept between
calls as a warm start.

The Hungarian steps (decode, loss-augmented decode, the exact duality gap) run in scipy,
outside these kernels.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from structpred.outputs._fastmath import log_add_exp, log_sum_exp


@njit(cache=True)
def sinkhorn_log(Z, f, g, max_iter, tol, out):
    """KL projection of ``exp(Z)`` onto the doubly stochastic matrices (log domain).

    Alternates ``f_i = -logsumexp_j (Z_ij + g_j)`` and ``g_j = -logsumexp_i (Z_ij + f_i)``
    starting from the given ``g`` (``f``, ``g`` are read as the warm start and
    overwritten).  After a column update the columns sum to one exactly; the iteration
    stops when the column sums measured before that update were within ``tol`` of one
    (max-norm), i.e. the rows sum to one within about ``tol``, or after ``max_iter``
    iterations.  ``out`` receives the log of the projection ``Z + f_i + g_j``.
    Returns ``(iterations, error)``.
    """
    M = Z.shape[0]
    err = np.inf
    it = 0
    while it < max_iter:
        # rows
        for i in range(M):
            f[i] = -log_sum_exp(Z[i], g)
        # columns (and the marginal error before the update)
        err = 0.0
        for j in range(M):
            lse = log_sum_exp(Z[:, j], f)
            e = abs(np.exp(lse + g[j]) - 1.0)
            if e > err:
                err = e
            g[j] = -lse
        it += 1
        if err <= tol:
            break
    for i in range(M):
        for j in range(M):
            out[i, j] = Z[i, j] + f[i] + g[j]
    return it, err


#: a scaling vector entry outside [1 / _ABSORB, _ABSORB] is absorbed into the log potentials
#: (and the kernel recomputed), so the kept kernel entries stay far above the subnormal range
_ABSORB = 1e50
#: a column sum of the scaled kernel below this has lost its entries to underflow: the
#: projection goes on in the log domain
_LOST = 1e-200


@njit(cache=True)
def _scaled_kernel(Z, f, g, K):
    """``f_i = -max_j (Z_ij + g_j)`` and ``K = exp(Z + f 1^T + 1 g^T)``: every row's largest entry is
    1, so nothing overflows and every row sum is in ``[1, M]``."""
    M = Z.shape[0]
    for i in range(M):
        m = -np.inf
        for j in range(M):
            m = max(m, Z[i, j] + g[j])
        f[i] = -m
        for j in range(M):
            K[i, j] = np.exp(Z[i, j] + g[j] - m)


@njit(cache=True)
def sinkhorn_scaled(Z, f, g, max_iter, tol, out, K, u, v, cs):
    """:func:`sinkhorn_log`'s projection and stopping rule in the scaled domain: the same
    alternation on ``P = diag(u) K diag(v)`` with ``K = exp(Z + f 1^T + 1 g^T)`` computed once
    (:func:`_scaled_kernel`), so a sweep costs ``2 M^2`` multiply-adds and ``2 M`` divisions
    instead of ``2 M^2`` exps.  A column scaling entry leaving ``[1e-50, 1e50]`` is absorbed into
    ``g`` and the kernel recomputed; a column whose scaled sum falls below ``1e-200``
    (its entries lost to underflow) hands the rest of the iterations to :func:`sinkhorn_log`
    from the potentials the sweep started from, i.e. on the log domain's own path.  ``K (M, M)``,
    ``u``, ``v``, ``cs`` ``(M,)`` are work arrays.
    Returns ``(iterations, error)`` as :func:`sinkhorn_log`."""
    M = Z.shape[0]
    _scaled_kernel(Z, f, g, K)
    for i in range(M):
        u[i] = 1.0
        v[i] = 1.0
    err = np.inf
    it = 0
    while it < max_iter:
        for i in range(M):          # rows: u = 1 / (K v)
            s = 0.0
            for j in range(M):
                s += K[i, j] * v[j]
            u[i] = 1.0 / s
        lost = False
        for j in range(M):          # columns: K^T u (the sums before the update are cs v)
            s = 0.0
            for i in range(M):
                s += K[i, j] * u[i]
            cs[j] = s
            lost = lost or not s > _LOST
        if lost:                    # from this sweep's start (g and v), the log domain does the rest
            for j in range(M):
                g[j] += np.log(v[j])
            rest, err = sinkhorn_log(Z, f, g, max_iter - it, tol, out)
            return it + rest, err
        err = 0.0
        for j in range(M):
            err = max(err, abs(cs[j] * v[j] - 1.0))
            v[j] = 1.0 / cs[j]
        it += 1
        if err <= tol:
            break
        big = False
        for j in range(M):
            big = big or v[j] > _ABSORB or v[j] < 1.0 / _ABSORB
        if big:                     # absorb v into g and recompute the kernel (u follows from v: its
            for j in range(M):      # entries stay in [1e-50, M] while v's do)
                g[j] += np.log(v[j])
                v[j] = 1.0
            _scaled_kernel(Z, f, g, K)
    for i in range(M):
        f[i] += np.log(u[i])
    for j in range(M):
        g[j] += np.log(v[j])
    for i in range(M):
        for j in range(M):
            out[i, j] = Z[i, j] + f[i] + g[j]
    return it, err


@njit(cache=True)
def round_birkhoff(F):
    """Round a positive matrix onto the Birkhoff polytope in place (Altschuler, Weed and
    Rigollet 2017, Algorithm 2): shrink rows with sum > 1, then columns with sum > 1,
    then add the rank-one correction ``err_r err_c^T / ||err_r||_1``.  The result is
    exactly doubly stochastic (up to round-off) and moves ``F`` by at most
    ``2 (||F 1 - 1||_1 + ||F^T 1 - 1||_1)`` in l1."""
    M = F.shape[0]
    for i in range(M):
        s = 0.0
        for j in range(M):
            s += F[i, j]
        if s > 1.0:
            for j in range(M):
                F[i, j] /= s
    for j in range(M):
        s = 0.0
        for i in range(M):
            s += F[i, j]
        if s > 1.0:
            for i in range(M):
                F[i, j] /= s
    er = np.empty(M)
    ec = np.empty(M)
    tot = 0.0
    for i in range(M):
        s = 0.0
        for j in range(M):
            s += F[i, j]
        er[i] = max(1.0 - s, 0.0)
        tot += er[i]
    for j in range(M):
        s = 0.0
        for i in range(M):
            s += F[i, j]
        ec[j] = max(1.0 - s, 0.0)
    if tot > 0.0:
        for i in range(M):
            for j in range(M):
                F[i, j] += er[i] * ec[j] / tot


@njit(cache=True)
def _exp_into(L, out):
    M = L.shape[0]
    for i in range(M):
        for j in range(M):
            out[i, j] = np.exp(L[i, j])


@njit(cache=True)
def spmp(V, eta, n_iter, max_sink, tol, lP, lQ, potP, potQ, P_bar, Q_bar, work, vec):
    """SP-MP (M4N Algorithm 2) for ``max_P min_Q -<Q, P>/M + <V, P>`` on Birkhoff^2.

    Mirror map: entropy of the marginals ``H(P) = -sum P_ij log P_ij`` (M4N eq. 38) for
    both players, so every step is a KL projection ``P <- Proj(P_c * exp(eta g))``
    computed by :func:`sinkhorn_scaled`.  Gradients: ``V - Q/M`` for the max player ``P``
    (ascent), ``-P/M`` for the min player ``Q`` (descent).

    ``lP``/``lQ`` (M, M): log of the current (full-step) iterates, read as the start and
    overwritten with the last iterates.  ``potP``/``potQ`` (4, M): Sinkhorn potentials
    ``(f, g)`` of the half-step and of the full-step projection of each player, read as
    warm start and overwritten.  ``P_bar``/``Q_bar`` receive the average of the half-step
    (extrapolated) points, which Theorem G.1 certifies, rounded exactly onto the Birkhoff
    polytope (:func:`round_birkhoff`).  ``work`` is a ``(7, M, M)`` and ``vec`` a ``(3, M)``
    scratch array.  The projections run in the scaled domain (:func:`sinkhorn_scaled`).
    Returns the total number of Sinkhorn iterations.
    """
    M = V.shape[0]
    invM = 1.0 / M
    P = work[0]
    Q = work[1]
    Z = work[2]
    Ph = work[3]
    Qh = work[4]
    L = work[5]
    K, u, v, cs = work[6], vec[0], vec[1], vec[2]
    _exp_into(lP, P)
    _exp_into(lQ, Q)
    for i in range(M):
        for j in range(M):
            P_bar[i, j] = 0.0
            Q_bar[i, j] = 0.0
    sweeps = 0
    for it in range(n_iter):
        # extrapolation (half) step from the prox centre (lP, lQ), gradients at (P, Q)
        for i in range(M):
            for j in range(M):
                Z[i, j] = lP[i, j] + eta * (V[i, j] - invM * Q[i, j])
        s, _ = sinkhorn_scaled(Z, potP[0], potP[1], max_sink, tol, L, K, u, v, cs)
        sweeps += s
        _exp_into(L, Ph)
        for i in range(M):
            for j in range(M):
                Z[i, j] = lQ[i, j] + eta * invM * P[i, j]
        s, _ = sinkhorn_scaled(Z, potQ[0], potQ[1], max_sink, tol, L, K, u, v, cs)
        sweeps += s
        _exp_into(L, Qh)
        for i in range(M):
            for j in range(M):
                P_bar[i, j] += Ph[i, j]
                Q_bar[i, j] += Qh[i, j]
        # full step from the same prox centre, gradients at the half-step point
        for i in range(M):
            for j in range(M):
                Z[i, j] = lP[i, j] + eta * (V[i, j] - invM * Qh[i, j])
        s, _ = sinkhorn_scaled(Z, potP[2], potP[3], max_sink, tol, lP, K, u, v, cs)
        sweeps += s
        for i in range(M):
            for j in range(M):
                Z[i, j] = lQ[i, j] + eta * invM * Ph[i, j]
        s, _ = sinkhorn_scaled(Z, potQ[2], potQ[3], max_sink, tol, lQ, K, u, v, cs)
        sweeps += s
        _exp_into(lP, P)
        _exp_into(lQ, Q)
    if n_iter == 0:
        for i in range(M):
            for j in range(M):
                P_bar[i, j] = P[i, j]
                Q_bar[i, j] = Q[i, j]
    else:
        inv = 1.0 / n_iter
        for i in range(M):
            for j in range(M):
                P_bar[i, j] *= inv
                Q_bar[i, j] *= inv
    round_birkhoff(P_bar)
    round_birkhoff(Q_bar)
    return sweeps


@njit(cache=True)
def spmp_batch(V, eta, n_iter, max_sink, tol, LP, LQ, POTP, POTQ, PB, QB):
    """Row-wise :func:`spmp` on ``(n, M, M)`` arrays with per-row projection tolerances
    ``tol (n,)``; returns Sinkhorn sweeps per row."""
    n, M = V.shape[0], V.shape[1]
    work = np.empty((7, M, M))
    vec = np.empty((3, M))
    sweeps = np.empty(n, dtype=np.int64)
    for r in range(n):
        sweeps[r] = spmp(V[r], eta, n_iter, max_sink, tol[r], LP[r], LQ[r], POTP[r], POTQ[r],
                         PB[r], QB[r], work, vec)
    return sweeps


@njit(cache=True)
def mix_uniform(lZ, eps):
    """``lZ <- log((1 - eps) exp(lZ) + eps / M)`` entrywise: stays doubly stochastic and
    bounds the KL divergence from the warm start to any permutation by ``M log(M / eps)``."""
    M = lZ.shape[0]
    a = np.log1p(-eps)
    b = np.log(eps / M)
    for i in range(M):
        for j in range(M):
            lZ[i, j] = log_add_exp(lZ[i, j] + a, b)
