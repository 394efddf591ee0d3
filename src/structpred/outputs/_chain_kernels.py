"""Numba kernels of the chain space: Viterbi, top-K Viterbi, log-domain sum-product, SP-MP.

A chain of length ``T`` over ``R`` labels has unary scores ``U (T, R)`` and pairwise
scores ``P (T-1, R, R)`` (``P[t, a, b]`` scores ``y_t = a, y_{t+1} = b``); the score of a
sequence is ``sum_t U[t, y_t] + sum_t P[t, y_t, y_{t+1}]``.  Ties are broken towards the
smallest label, so every kernel is deterministic.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def viterbi(U, P, out):
    """``out = argmax_y score(y)``; returns the max score (max-product in the log domain)."""
    T, R = U.shape
    back = np.zeros((T, R), dtype=np.int64)
    delta = U[0].copy()
    new = np.empty(R)
    for t in range(1, T):
        for b in range(R):
            best = delta[0] + P[t - 1, 0, b]
            arg = 0
            for a in range(1, R):
                s = delta[a] + P[t - 1, a, b]
                if s > best:
                    best = s
                    arg = a
            new[b] = best + U[t, b]
            back[t, b] = arg
        delta[:] = new
    arg = 0
    for b in range(1, R):
        if delta[b] > delta[arg]:
            arg = b
    best = delta[arg]
    out[T - 1] = arg
    for t in range(T - 1, 0, -1):
        out[t - 1] = back[t, out[t]]
    return best


@njit(cache=True)
def top_k_viterbi(U, P, K, Y, S):
    """The ``K`` highest-scoring sequences in decreasing score (list Viterbi).

    Fills ``Y (K, T)`` and ``S (K,)``; returns how many exist (``min(K, R^T)``).  Each
    (position, label) keeps its ``K`` best prefixes as (score, previous label, rank).
    """
    T, R = U.shape
    NEG = -np.inf
    sc = np.full((T, R, K), NEG)
    bl = np.zeros((T, R, K), dtype=np.int64)
    br = np.zeros((T, R, K), dtype=np.int64)
    for b in range(R):
        sc[0, b, 0] = U[0, b]
    cand = np.empty(R * K)
    for t in range(1, T):
        for b in range(R):
            for a in range(R):
                for r in range(K):
                    cand[a * K + r] = sc[t - 1, a, r] + P[t - 1, a, b]
            order = np.argsort(-cand, kind="mergesort")
            for r in range(K):
                j = order[r]
                sc[t, b, r] = cand[j] + U[t, b]
                bl[t, b, r] = j // K
                br[t, b, r] = j % K
    last = np.empty(R * K)
    for b in range(R):
        for r in range(K):
            last[b * K + r] = sc[T - 1, b, r]
    order = np.argsort(-last, kind="mergesort")
    found = 0
    for r in range(K):
        j = order[r]
        if last[j] == NEG:
            break
        S[r] = last[j]
        b = j // K
        rk = j % K
        for t in range(T - 1, -1, -1):
            Y[r, t] = b
            if t > 0:
                b, rk = bl[t, b, rk], br[t, b, rk]
        found += 1
    return found


#: terms more than this many nats below the largest are dropped from a log-sum-exp
#: (``e^-40 < 5e-18``: below double precision relative to the largest term, which
#: contributes 1); in peaked distributions this skips most ``exp`` calls
_CUT = 40.0


@njit(cache=True)
def _lse(x, n):
    m = x[0]
    for j in range(1, n):
        m = max(m, x[j])
    if m == -np.inf:
        return m
    s = 0.0
    lo = m - _CUT
    for j in range(n):
        if x[j] > lo:
            s += np.exp(x[j] - m)
    return m + np.log(s)


@njit(cache=True)
def _forward(U, P, alpha):
    """Log-domain forward messages ``alpha[t, b]`` (prefixes ending in ``b``); returns ``log Z``."""
    T, R = U.shape
    tmp = np.empty(R)
    alpha[0] = U[0]
    for t in range(1, T):
        for b in range(R):
            for a in range(R):
                tmp[a] = alpha[t - 1, a] + P[t - 1, a, b]
            alpha[t, b] = _lse(tmp, R) + U[t, b]
    return _lse(alpha[T - 1], R)


@njit(cache=True)
def _backward(U, P, beta):
    """Log-domain backward messages ``beta[t, a]`` (suffixes after ``a``)."""
    T, R = U.shape
    tmp = np.empty(R)
    beta[T - 1] = 0.0
    for t in range(T - 2, -1, -1):
        for a in range(R):
            for b in range(R):
                tmp[b] = P[t, a, b] + U[t + 1, b] + beta[t + 1, b]
            beta[t, a] = _lse(tmp, R)


@njit(cache=True)
def log_partition(U, P):
    """``log sum_y exp score(y)`` (forward recursion only)."""
    return _forward(U, P, np.empty(U.shape))


@njit(cache=True)
def sum_product(U, P, node, edge, with_edges):
    """Unary marginals ``node (T, R)`` and, if ``with_edges``, pairwise marginals
    ``edge (T-1, R, R)`` of ``p(y) ∝ exp score(y)``; returns ``log Z``."""
    T, R = U.shape
    alpha = np.empty((T, R))
    beta = np.empty((T, R))
    logz = _forward(U, P, alpha)
    _backward(U, P, beta)
    for t in range(T):
        for a in range(R):
            z = alpha[t, a] + beta[t, a] - logz
            node[t, a] = np.exp(z) if z > -_CUT else 0.0
    if with_edges:
        for t in range(T - 1):
            for a in range(R):
                base = alpha[t, a] - logz
                for b in range(R):
                    z = base + P[t, a, b] + U[t + 1, b] + beta[t + 1, b]
                    edge[t, a, b] = np.exp(z) if z > -_CUT else 0.0
    return logz


@njit(cache=True)
def _loss_times(Lw, kind, x, out, transpose):
    """Row-wise weighted loss products ``out[t] = Lw[t] @ x[t]`` (or ``Lw[t].T @ x[t]``);
    ``kind == 1``: ``Lw[t] = c_t (11^T - I)`` (zero-one / Hamming), computed in O(R)."""
    T, R = x.shape
    for t in range(T):
        if kind == 1:
            c = Lw[t, 0, 1]
            s = 0.0
            for j in range(R):
                s += x[t, j]
            for i in range(R):
                out[t, i] = c * (s - x[t, i])
            continue
        for i in range(R):
            s = 0.0
            for j in range(R):
                s += (Lw[t, j, i] if transpose else Lw[t, i, j]) * x[t, j]
            out[t, i] = s


@njit(cache=True)
def _log_softmax_rows(z, out):
    T, R = z.shape
    for t in range(T):
        m = _lse(z[t], R)
        for j in range(R):
            z[t, j] -= m
            out[t, j] = np.exp(z[t, j])


#: smallest normaliser the linear-domain sum-product accepts: every product it forms is
#: then far above the subnormal range, so rounding stays relative (else: log domain)
_TINY = 1e-200


@njit(cache=True)
def _sum_product_scaled(thU, E, node, edge, with_edges, alpha, beta, u):
    """Sum-product in the linear domain with per-position normalisation: unary potentials
    ``exp(thU[t] - max)``, pairwise potentials ``E (T-1, R, R)`` (already exponentiated and
    scaled).  Costs multiplications only (no exp per edge entry).  Returns False if a
    message underflows to zero (the caller then falls back to the log domain)."""
    T, R = thU.shape
    for t in range(T):
        m = thU[t, 0]
        for j in range(1, R):
            m = max(m, thU[t, j])
        for j in range(R):
            u[t, j] = np.exp(thU[t, j] - m)
    z = 0.0
    for j in range(R):
        alpha[0, j] = u[0, j]
        z += u[0, j]
    for j in range(R):
        alpha[0, j] /= z
    for t in range(1, T):
        for b in range(R):
            alpha[t, b] = 0.0
        for a in range(R):
            al = alpha[t - 1, a]
            if al != 0.0:
                for b in range(R):
                    alpha[t, b] += al * E[t - 1, a, b]
        z = 0.0
        for b in range(R):
            alpha[t, b] *= u[t, b]
            z += alpha[t, b]
        if not (z > _TINY and z < np.inf):
            return False
        for b in range(R):
            alpha[t, b] /= z
    for j in range(R):
        beta[T - 1, j] = 1.0
    for t in range(T - 2, -1, -1):
        z = 0.0
        for a in range(R):
            s = 0.0
            for b in range(R):
                s += E[t, a, b] * u[t + 1, b] * beta[t + 1, b]
            beta[t, a] = s
            z += s
        if not (z > _TINY and z < np.inf):
            return False
        for a in range(R):
            beta[t, a] /= z
    for t in range(T):
        z = 0.0
        for j in range(R):
            node[t, j] = alpha[t, j] * beta[t, j]
            z += node[t, j]
        if not (z > _TINY):
            return False
        for j in range(R):
            node[t, j] /= z
    if with_edges:
        for t in range(T - 1):
            z = 0.0
            for a in range(R):
                al = alpha[t, a]
                for b in range(R):
                    e = al * E[t, a, b] * u[t + 1, b] * beta[t + 1, b]
                    edge[t, a, b] = e
                    z += e
            if not (z > _TINY):
                return False
            for a in range(R):
                for b in range(R):
                    edge[t, a, b] /= z
    return True


@njit(cache=True)
def _project(thU, thP, E, node, edge, with_edges, alpha, beta, u, linear):
    """Marginals of the natural parameters ``(thU, thP)``; ``E`` holds ``exp(thP)`` up to a
    per-edge scale.  Linear domain while ``linear[0]``; once a message underflows, log
    domain (and ``linear[0] = False``: the iterates only get more peaked)."""
    if linear[0]:
        if _sum_product_scaled(thU, E, node, edge, with_edges, alpha, beta, u):
            return
        linear[0] = False
    sum_product(thU, thP, node, edge, with_edges)


@njit(cache=True)
def spmp(U, P, Lw, kind, eta, n_iter, thU, thP, lnu, mu_node, mu_edge, nu_bar):
    """SP-MP (M4N Algorithm 2, App. G.2) for ``max_mu min_nu sum_t nu_t^T Lw_t mu_t + <v, mu>``.

    ``mu`` (max player) lives on the chain's marginal polytope with the tree entropy:
    a mirror step adds ``eta * gradient`` to its natural parameters ``(thU, thP)`` and
    maps back by sum-product.  ``nu`` (min player) lives on a product of simplices with
    the Shannon entropy: a mirror step is a softmax of ``lnu - eta * gradient``.
    ``Lw[t] = w_t * loss_matrix`` (row = the nu / true label; ``kind`` as in
    :func:`_loss_times`).  The pairwise gradient ``eta * P`` is the same at every step, so
    ``exp(thP)`` is kept (rescaled per edge) and updated by multiplication with
    ``exp(eta P)``: the projections need no exp per edge entry.  The state arrays
    ``thU (T, R)``, ``thP (T-1, R, R)``, ``lnu (T, R)`` hold the last iterates and are
    updated in place (warm start); the averages of the half-step iterates are written
    to ``mu_node``, ``mu_edge``, ``nu_bar``.
    """
    T, R = U.shape
    Tm = max(T - 1, 1)
    alpha = np.empty((T, R))
    beta = np.empty((T, R))
    u = np.empty((T, R))
    linear = np.ones(1, dtype=np.bool_)
    E = np.empty((Tm, R, R))
    G = np.empty((Tm, R, R))
    for t in range(T - 1):
        m = thP[t, 0, 0]
        for a in range(R):
            for b in range(R):
                m = max(m, thP[t, a, b])
        for a in range(R):
            for b in range(R):
                E[t, a, b] = np.exp(thP[t, a, b] - m)
                G[t, a, b] = np.exp(eta * P[t, a, b])
    cur = np.empty((T, R))          # unary marginals of the current mu iterate
    dummy = np.empty((1, R, R))
    _project(thU, thP, E, cur, dummy, False, alpha, beta, u, linear)
    nu = np.empty((T, R))
    _log_softmax_rows(lnu, nu)
    hU = np.empty((T, R))
    hP = np.empty((Tm, R, R))
    hnode = np.empty((T, R))
    hedge = np.empty((Tm, R, R))
    hnu = np.empty((T, R))
    hlnu = np.empty((T, R))
    g = np.empty((T, R))
    mu_node[:] = 0.0
    mu_edge[:] = 0.0
    nu_bar[:] = 0.0
    for _ in range(n_iter):
        # the pairwise natural parameters after this iteration (same for half and full step)
        for t in range(T - 1):
            m = 0.0
            for a in range(R):
                for b in range(R):
                    hP[t, a, b] = thP[t, a, b] + eta * P[t, a, b]
                    e = E[t, a, b] * G[t, a, b]
                    E[t, a, b] = e
                    m = max(m, e)
            if m > 0.0:
                inv = 1.0 / m
                for a in range(R):
                    for b in range(R):
                        E[t, a, b] *= inv
        # half step from the current pair
        _loss_times(Lw, kind, nu, g, True)
        for t in range(T):
            for j in range(R):
                hU[t, j] = thU[t, j] + eta * (U[t, j] + g[t, j])
        _project(hU, hP[: T - 1], E, hnode, hedge[: T - 1], True, alpha, beta, u, linear)
        _loss_times(Lw, kind, cur, g, False)
        for t in range(T):
            for j in range(R):
                hlnu[t, j] = lnu[t, j] - eta * g[t, j]
        _log_softmax_rows(hlnu, hnu)
        # full step from the current pair with the half-step gradients
        _loss_times(Lw, kind, hnu, g, True)
        for t in range(T):
            for j in range(R):
                thU[t, j] += eta * (U[t, j] + g[t, j])
        for t in range(T - 1):
            for a in range(R):
                for b in range(R):
                    thP[t, a, b] = hP[t, a, b]
        _loss_times(Lw, kind, hnode, g, False)
        for t in range(T):
            for j in range(R):
                lnu[t, j] -= eta * g[t, j]
        _log_softmax_rows(lnu, nu)
        _project(thU, thP, E, cur, dummy, False, alpha, beta, u, linear)
        mu_node += hnode
        mu_edge += hedge[: T - 1]
        nu_bar += hnu
    if n_iter > 0:
        inv = 1.0 / n_iter
        mu_node *= inv
        mu_edge *= inv
        nu_bar *= inv
    else:
        _project(thU, thP, E, mu_node, mu_edge, True, alpha, beta, u, linear)
        nu_bar[:] = nu
