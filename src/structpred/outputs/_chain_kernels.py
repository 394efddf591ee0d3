"""Numba kernels of the chain space: Viterbi, top-K Viterbi, log-domain sum-product, SP-MP.

A chain of length ``T`` over ``R`` labels has unary scores ``U (T, R)`` and pairwise
scores ``P (T-1, R, R)`` (``P[t, a, b]`` scores ``y_t = a, y_{t+1} = b``); the score of a
sequence is ``sum_t U[t, y_t] + sum_t P[t, y_t, y_{t+1}]``.  Ties are broken towards the
smallest label, so every kernel is deterministic.  Every ``exp`` is
:func:`structpred.outputs._fastmath.fexp` (inlined; within 1 ulp of the C library's).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit, types
from numba.extending import overload

from structpred.outputs._fastmath import fexp, flog
from structpred.outputs._subnormals import flushing, restore


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
def _merge_top(sc, t, P, b, K, out_s, out_l, out_r, head, cand):
    """The ``K`` largest of ``sc[t, a, r] + P[t, a, b]`` (``b < 0``: no ``P`` term; each
    ``sc[t, a]`` sorted decreasing) by a K-way merge, ties to the smaller ``a`` then ``r`` (the
    order of a stable sort of the flattened candidates); fills scores, rows and ranks
    (``head``, ``cand``: work arrays of length R, the next rank of each row and its candidate)."""
    R = sc.shape[1]
    for a in range(R):
        head[a] = 0
        c = sc[t, a, 0]
        if b >= 0:
            c += P[t, a, b]
        cand[a] = c
    for k in range(K):
        best = -1
        val = -np.inf
        for a in range(R):
            if head[a] < K and (best < 0 or cand[a] > val):
                best = a
                val = cand[a]
        out_s[k] = val
        out_l[k] = best
        out_r[k] = head[best]
        r = head[best] + 1
        head[best] = r
        if r < K:
            c = sc[t, best, r]
            if b >= 0:
                c += P[t, best, b]
            cand[best] = c


@njit(cache=True)
def top_k_viterbi(U, P, K, Y, S):
    """The ``K`` highest-scoring sequences in decreasing score (list Viterbi).

    Fills ``Y (K, T)`` and ``S (K,)``; returns how many exist (``min(K, R^T)``).  Each
    (position, label) keeps its ``K`` best prefixes as (score, previous label, rank), merged
    from the predecessors' sorted lists.
    """
    T, R = U.shape
    NEG = -np.inf
    sc = np.full((T, R, K), NEG)
    bl = np.zeros((T, R, K), dtype=np.int64)
    br = np.zeros((T, R, K), dtype=np.int64)
    for b in range(R):
        sc[0, b, 0] = U[0, b]
    head = np.empty(R, dtype=np.int64)
    cand = np.empty(R)
    for t in range(1, T):
        for b in range(R):
            _merge_top(sc, t - 1, P, b, K, sc[t, b], bl[t, b], br[t, b], head, cand)
            for r in range(K):
                sc[t, b, r] += U[t, b]
    top_s = np.empty(K)
    top_l = np.empty(K, dtype=np.int64)
    top_r = np.empty(K, dtype=np.int64)
    _merge_top(sc, T - 1, P, -1, K, top_s, top_l, top_r, head, cand)
    found = 0
    for r in range(K):
        if top_s[r] == NEG:
            break
        S[r] = top_s[r]
        b = top_l[r]
        rk = top_r[r]
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


@njit(cache=True, inline="always")
def _row_max(x):
    """``max(x)`` (``len(x) >= 1``) over four interleaved partial maxima: the same value as one
    running max (max is exact and order-free), without its chain of dependent compares."""
    n = x.shape[0]
    m0 = m1 = m2 = m3 = x[0]
    i = 0
    while i + 4 <= n:
        a, b, c, d = x[i], x[i + 1], x[i + 2], x[i + 3]
        m0 = a if a > m0 else m0
        m1 = b if b > m1 else m1
        m2 = c if c > m2 else m2
        m3 = d if d > m3 else m3
        i += 4
    while i < n:
        a = x[i]
        m0 = a if a > m0 else m0
        i += 1
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    return m2 if m2 > m0 else m0


@njit(cache=True)
def _lse(x, n):
    """``log sum_j exp(x[j])`` over the first ``n`` entries; terms ``_CUT`` nats below the max are
    skipped, and so are the ``exp`` of the max (1) and the ``log`` of a sum equal to 1 (0): in
    peaked (warm-started) SP-MP states almost every sum has a single term that counts."""
    m = x[0]
    for j in range(1, n):
        m = max(m, x[j])
    if m == -np.inf:
        return m
    s = 0.0
    lo = m - _CUT
    for j in range(n):
        if x[j] > lo:
            s += 1.0 if x[j] == m else fexp(x[j] - m)
    if s == 1.0:
        return m + 0.0
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
            node[t, a] = fexp(z) if z > -_CUT else 0.0
    if with_edges:
        for t in range(T - 1):
            for a in range(R):
                base = alpha[t, a] - logz
                for b in range(R):
                    z = base + P[t, a, b] + U[t + 1, b] + beta[t + 1, b]
                    edge[t, a, b] = fexp(z) if z > -_CUT else 0.0
    return logz


@njit(cache=True, inline="always")
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


@njit(cache=True, inline="always")
def _log_softmax_rows(z, out):
    """Row-wise ``z -= logsumexp(z)`` and ``out = exp(z)`` (one exp per entry)."""
    T, R = z.shape
    for t in range(T):
        m = _row_max(z[t])
        for j in range(R):      # the exps in a loop of their own vectorise; the sum keeps its order
            out[t, j] = fexp(z[t, j] - m)
        s = 0.0
        for j in range(R):
            s += out[t, j]
        inv = 1.0 / s
        shift = m + np.log(s)
        for j in range(R):
            out[t, j] *= inv
            z[t, j] -= shift


@njit(cache=True, inline="always")
def mirror_mu(thU, U, Lw, kind, nu, eta, g, out):
    """The max player's mirror step on the unary natural parameters (M4N eq. 36):
    ``out[t] = thU[t] + eta (U[t] + Lw[t]^T nu[t])`` (``g``: work array; ``out`` may be ``thU``)."""
    T, R = thU.shape
    _loss_times(Lw, kind, nu, g, True)
    for t in range(T):
        for j in range(R):
            out[t, j] = thU[t, j] + eta * (U[t, j] + g[t, j])


@njit(cache=True, inline="always")
def mirror_nu(lnu, Lw, kind, node, eta, g, out_log, out):
    """The min player's mirror step (M4N eq. 35): ``out_log[t] = log softmax(lnu[t] - eta Lw[t]
    node[t])`` and ``out = exp(out_log)`` (``g``: work array; ``out_log`` may be ``lnu``)."""
    T, R = lnu.shape
    _loss_times(Lw, kind, node, g, False)
    for t in range(T):
        for j in range(R):
            out_log[t, j] = lnu[t, j] - eta * g[t, j]
    _log_softmax_rows(out_log, out)


#: a scaled sum below this is recomputed exactly in the log domain (every product kept
#: is then far above the subnormal range, so rounding stays relative)
_TINY = 1e-200
#: the columns of the scaled pairwise potentials are renormalised once their max drops
#: below ``1 / _RESCALE``
_RESCALE = 1e8
#: pairwise marginals are formed as products of scaled factors while their common scale is below
#: this (else entry by entry in the log domain): the factors are at most 1 and the scale at most
#: 1e260, so an entry above 1e-48 (far below the ``e^-_CUT`` that counts) has every factor and
#: partial product in the normal range, and keeps its relative rounding
_EDGE_SCALE = 1e260


@njit(cache=True)
def _init_potentials(thP, P, eta, E, cm, G, gm):
    """Scaled pairwise potentials of :func:`spmp`: ``E[t, a, b] = exp(thP[t, a, b] - cm[t, b])``
    (column max 1) and the per-iteration factor ``G = exp(eta P - gm)`` (column max 1)."""
    T1, R, _ = thP.shape
    for t in range(T1):         # row by row, so that the loops over b vectorise
        for b in range(R):
            cm[t, b] = thP[t, 0, b]
            gm[t, b] = eta * P[t, 0, b]
        for a in range(1, R):
            for b in range(R):
                cm[t, b] = max(cm[t, b], thP[t, a, b])
                gm[t, b] = max(gm[t, b], eta * P[t, a, b])
        for a in range(R):
            for b in range(R):
                E[t, a, b] = fexp(thP[t, a, b] - cm[t, b])
                G[t, a, b] = fexp(eta * P[t, a, b] - gm[t, b])


@njit(cache=True, inline="always")
def _step_potentials(E, cm, G, gm, thP, P, c):
    """One pairwise mirror step, ``thP + c P`` -> ``thP + (c + eta) P``, on the scaled
    potentials; a column whose max drops below ``_TINY`` is recomputed exactly."""
    T1, R, _ = E.shape
    mcol = np.empty(R)
    for t in range(T1):
        mcol[:] = 0.0
        for a in range(R):
            for b in range(R):
                e = E[t, a, b] * G[t, a, b]
                E[t, a, b] = e
                mcol[b] = max(mcol[b], e)
        for b in range(R):
            cm[t, b] += gm[t, b]
            m = mcol[b]
            if m >= 1.0 / _RESCALE:
                continue
            if m > _TINY:
                inv = 1.0 / m
                for a in range(R):
                    E[t, a, b] *= inv
                cm[t, b] += np.log(m)
                continue
            m = -np.inf
            for a in range(R):
                m = max(m, thP[t, a, b] + c * P[t, a, b])
            for a in range(R):
                E[t, a, b] = fexp(thP[t, a, b] + c * P[t, a, b] - m)
            cm[t, b] = m


@njit(cache=True, inline="always")
def _rows_times(x, M, out):
    """``out[b] = sum_a x[a] M[a, b]``, four rows at a time (a quarter of the loads and stores of
    ``out``; the loop over ``b`` vectorises)."""
    n, R = M.shape
    for b in range(R):
        out[b] = 0.0
    a = 0
    while a + 4 <= n:
        x0, x1, x2, x3 = x[a], x[a + 1], x[a + 2], x[a + 3]
        for b in range(R):
            out[b] += x0 * M[a, b] + x1 * M[a + 1, b] + x2 * M[a + 2, b] + x3 * M[a + 3, b]
        a += 4
    while a < n:
        xa = x[a]
        for b in range(R):
            out[b] += xa * M[a, b]
        a += 1


@njit(cache=True, inline="always")
def _cols_times(M, x, out):
    """``out[a] = sum_b M[a, b] x[b]``: four columns at a time, each row's four terms from one
    cache line."""
    n, R = M.shape
    for a in range(n):
        out[a] = 0.0
    b = 0
    while b + 4 <= R:
        x0, x1, x2, x3 = x[b], x[b + 1], x[b + 2], x[b + 3]
        for a in range(n):
            out[a] += M[a, b] * x0 + M[a, b + 1] * x1 + M[a, b + 2] * x2 + M[a, b + 3] * x3
        b += 4
    while b < R:
        xb = x[b]
        for a in range(n):
            out[a] += M[a, b] * xb
        b += 1



@njit(cache=True, error_model="numpy")   # flog's division: no zero check, so its loops vectorise
def _scaled_project(thU, E, cm, thP, P, c, node, edge_acc, with_edges, la, lb, ex, fw, sc, work,
                    order, thPT, PT, flush):
    """Marginals of the chain with natural parameters ``(thU, thP + c P)``: unary marginals to
    ``node`` and, if ``with_edges``, pairwise marginals *added* to ``edge_acc``.

    Log-domain messages ``la`` (forward) and ``lb`` (backward), each step a product of
    exp-scaled messages with the scaled potentials ``E`` (:func:`_init_potentials`), so a
    step costs multiplications and ``O(R)`` exp / log; an entry whose scaled sum falls
    below ``_TINY`` (its terms lost in ``E``) is recomputed exactly from ``thP + c P``: the
    step's two largest terms per entry first (:func:`_top_two`, one pass for all entries),
    which is the answer where only the largest counts (warm states: almost everywhere), then
    :func:`_lse_of_two` where two count, else the sorted :func:`_pruned_lse`; each gives the
    bits of the pruned sum.  A step that needed that rescue in the last projection
    (``sc[t, 3]`` forward, ``sc[t, 4]`` backward, nonzero; zero-initialised by the caller) ranks
    first: where one term counts, its value is the log-sum-exp (to the ``e^-_CUT`` terms it
    drops, as the rescue), and only the other entries take the scaled sum, one row or column
    each; the step keeps ranking first while at most half its entries need a sum.  Warm-started
    states, whose pairwise parameters span thousands of nats, rescue about a third of their
    entries and so skip most products, exps and logs.
    ``ex[t] = exp(la[t] - sc[t, 0])`` and ``fw[t] = exp(cm[t] + thU[t+1] + lb[t+1] -
    sc[t, 1])`` are kept for the pairwise marginals ``ex[t, a] E[t, a, b] fw[t, b] exp(sc[t,
    0] + sc[t, 1] - log Z)``; ``sc[t, 2] = max_b cm[t, b]`` bounds edge ``t``'s parameters
    (:func:`_add_log_edges` where that scale overflows).
    ``thPT``, ``PT``: contiguous transposes of ``thP``, ``P`` (per edge), so that the backward
    pass's :func:`_top_two` reads rows, as the forward pass does, and a forward rescue reads its
    column as a row.  The logs of a step's scaled sums are taken all at once by
    :func:`~structpred.outputs._fastmath.flog` (a vectorised loop; an entry below ``_TINY`` is
    rescued instead and ignores its log).
    With ``flush`` the messages' scaled sums and the unary marginals run with subnormals flushed
    to zero (:mod:`~structpred.outputs._subnormals`): a sum that is kept is above ``_TINY``,
    where a term below 2^-1022 cannot move its bits, and a smaller one is rescued as before; a
    unary marginal is above ``e^-_CUT`` or 0.  The scaled messages ``ex``, ``fw`` and the
    potentials ``E``, from which the pairwise marginals are made, keep IEEE subnormals.  (The
    sums' branch also compares log-domain values, never subnormal unless the scores themselves
    are.)
    """
    T, R = thU.shape
    acc, wl, tmp, m1, m2, lg = work[0], work[1], work[2], work[3], work[4], work[5]
    for j in range(R):
        la[0, j] = thU[0, j]
    for t in range(1, T):
        m = _row_max(la[t - 1])
        sc[t - 1, 0] = m
        for a in range(R):
            d = la[t - 1, a] - m
            ex[t - 1, a] = fexp(d)
        sorted_ = False
        ranked = sc[t - 1, 3] > 0.0     # the last projection rescued here: the largest terms first
        saved = flushing(flush)
        if ranked:
            _top_two(la[t - 1], thP[t - 1], P[t - 1], c, m1, m2)
            n_multi = 0
            for b in range(R):          # entries where one term counts need no sum
                if m2[b] > m1[b] - _CUT:
                    s = 0.0
                    for a in range(R):
                        s += ex[t - 1, a] * E[t - 1, a, b]
                    acc[b] = s
                    lg[b] = np.log(s) if s > _TINY else 0.0
                    n_multi += 1
                else:
                    acc[b] = 0.0
            sc[t - 1, 3] = 1.0 if 2 * n_multi <= R else 0.0
        else:
            _rows_times(ex[t - 1], E[t - 1], acc)
            for b in range(R):      # every log at once (vectorised; an entry below _TINY discards its own)
                lg[b] = flog(acc[b])
        restore(saved, flush)
        for b in range(R):
            s = acc[b]
            if s > _TINY:
                la[t, b] = m + lg[b] + cm[t - 1, b] + thU[t, b]
                continue
            if not ranked:
                _top_two(la[t - 1], thP[t - 1], P[t - 1], c, m1, m2)
                ranked = True
                sc[t - 1, 3] = 1.0
            if not m2[b] > m1[b] - _CUT:    # one term counts: the log-sum-exp is its value
                la[t, b] = thU[t, b] + (m1[b] + 0.0)
                continue
            v = _lse_of_two(la[t - 1], thPT[t - 1, b], PT[t - 1, b], c, m1[b], m2[b])   # column b, contiguous
            if v == v:                      # two terms count
                la[t, b] = thU[t, b] + v
                continue
            if not sorted_:
                _argsort_desc(la[t - 1], order)
                sorted_ = True
            la[t, b] = thU[t, b] + _pruned_lse(la[t - 1], thPT[t - 1, b], PT[t - 1, b], c,
                                               cm[t - 1, b], order, tmp)
    logz = _lse(la[T - 1], R)
    for j in range(R):
        lb[T - 1, j] = 0.0
    for t in range(T - 2, -1, -1):
        for b in range(R):
            wl[b] = cm[t, b] + thU[t + 1, b] + lb[t + 1, b]
        m = _row_max(wl)
        sc[t, 1] = m
        for b in range(R):
            fw[t, b] = fexp(wl[b] - m)
        rowmax = cm[t, 0]
        for b in range(R):
            rowmax = max(rowmax, cm[t, b])
        sc[t, 2] = rowmax       # bounds every pairwise parameter of edge t
        sorted_ = False
        ranked = sc[t, 4] > 0.0
        saved = flushing(flush)
        if ranked:
            for b in range(R):
                wl[b] = thU[t + 1, b] + lb[t + 1, b]
            _top_two(wl, thPT[t], PT[t], c, m1, m2)
            n_multi = 0
            for a in range(R):
                if m2[a] > m1[a] - _CUT:
                    s = 0.0
                    for b in range(R):
                        s += E[t, a, b] * fw[t, b]
                    acc[a] = s
                    lg[a] = np.log(s) if s > _TINY else 0.0
                    n_multi += 1
                else:
                    acc[a] = 0.0
            sc[t, 4] = 1.0 if 2 * n_multi <= R else 0.0
        else:
            _cols_times(E[t], fw[t], acc)
            for a in range(R):
                lg[a] = flog(acc[a])
        restore(saved, flush)
        for a in range(R):
            s = acc[a]
            if s > _TINY:
                lb[t, a] = m + lg[a]
                continue
            if not ranked:
                for b in range(R):
                    wl[b] = thU[t + 1, b] + lb[t + 1, b]
                _top_two(wl, thPT[t], PT[t], c, m1, m2)   # rows of the transposes: over b for every a
                ranked = True
                sc[t, 4] = 1.0
            if not m2[a] > m1[a] - _CUT:
                lb[t, a] = m1[a] + 0.0
                continue
            v = _lse_of_two(wl, thP[t, a], P[t, a], c, m1[a], m2[a])
            if v == v:
                lb[t, a] = v
                continue
            if not sorted_:
                _argsort_desc(wl, order)
                sorted_ = True
            lb[t, a] = _pruned_lse(wl, thP[t, a], P[t, a], c, rowmax, order, tmp)
    saved = flushing(flush)     # entries below e^-_CUT are 0 (the vectorised loop computes every exp)
    for t in range(T):
        for j in range(R):
            d = la[t, j] + lb[t, j] - logz
            node[t, j] = fexp(d) if d > -_CUT else 0.0
    restore(saved, flush)
    if not with_edges:
        return
    for t in range(T - 1):
        k = sc[t, 0] + sc[t, 1] - logz
        if k < np.log(_EDGE_SCALE):
            k = fexp(k)
            for a in range(R):
                f = ex[t, a] * k
                if f != 0.0:
                    for b in range(R):
                        edge_acc[t, a, b] += f * E[t, a, b] * fw[t, b]
            continue
        for b in range(R):
            wl[b] = thU[t + 1, b] + lb[t + 1, b]
        _add_log_edges(la[t], wl, thP[t], P[t], c, logz, sc[t, 2], edge_acc[t])


@njit(cache=True)
def scaled_marginals(U, P, node, edge):
    """:func:`sum_product`'s marginals (unary ``node``, pairwise ``edge``; entries below
    ``e^-_CUT`` are 0, as there) by :func:`_scaled_project`: the column-scaled potentials
    ``exp(P - max)`` once, then products instead of an exp per term (OCR's CRF: 11 against 57 us
    a word); the same marginals to round-off."""
    T, R = U.shape
    Tm = max(T - 1, 1)
    E = np.empty((Tm, R, R))
    cm = np.empty((Tm, R))
    PT = np.empty((Tm, R, R))
    for t in range(T - 1):
        for b in range(R):
            m = P[t, 0, b]
            for a in range(1, R):
                m = max(m, P[t, a, b])
            cm[t, b] = m
            for a in range(R):
                E[t, a, b] = fexp(P[t, a, b] - m)
                PT[t, b, a] = P[t, a, b]
    edge[:] = 0.0
    # the slope is P itself at c = 0 (finite scores: P + 0 P = P), so the rescues read P
    _scaled_project(U, E, cm, P, P, 0.0, node, edge, True, np.empty((T, R)), np.empty((T, R)), np.empty((Tm, R)),
                    np.empty((Tm, R)), np.zeros((Tm, 5)), np.empty((6, R)), np.empty(R, dtype=np.int64), PT, PT, False)
    cut = np.exp(-_CUT)
    for t in range(T - 1):
        for a in range(R):
            for b in range(R):
                if not edge[t, a, b] > cut:
                    edge[t, a, b] = 0.0


@njit(cache=True, inline="always")
def _add_log_edges(xa, wl, pot, slope, c, logz, bound, out):
    """``out[a, b] += exp(xa[a] + pot[a, b] + c slope[a, b] + wl[b] - logz)`` (an edge's pairwise
    marginals in the log domain) where that exponent exceeds ``-_CUT``; a row ``a`` or an entry
    whose bound ``xa[a] + bound + wl[b] - logz`` (``bound >= max pot + c slope``) is below
    ``-_CUT`` is skipped before its exponent is formed."""
    R = wl.shape[0]
    wmax = _row_max(wl)
    for a in range(xa.shape[0]):
        base = xa[a] - logz
        if base + bound + wmax < -_CUT:
            continue
        for b in range(R):
            if base + bound + wl[b] < -_CUT:
                continue
            d = base + pot[a, b] + c * slope[a, b] + wl[b]
            if d > -_CUT:
                out[a, b] += fexp(d)


@njit(cache=True)
def _argsort_desc(x, order):
    """``order`` = the indices of ``x`` by decreasing value (insertion sort, stable)."""
    n = x.shape[0]
    for i in range(n):
        j = i
        while j > 0 and x[order[j - 1]] < x[i]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i


@njit(cache=True, inline="always")
def _top_two(base, pot, slope, c, m1, m2):
    """``m1[b] >= m2[b]``: the two largest of ``base[a] + pot[a, b] + c slope[a, b]`` over ``a``
    (a tie gives ``m2[b] == m1[b]``), the terms of :func:`_pruned_lse` for every column ``b`` at
    once (rows: pass ``pot.T``, ``slope.T``); where ``m2[b] <= m1[b] - _CUT`` that log-sum-exp is
    exactly ``m1[b] + 0.0``.  Rows are taken four at a time (the running pair stays in registers
    between them); the two largest do not depend on the order of the terms."""
    n, R = pot.shape
    for b in range(R):
        m1[b] = -np.inf
        m2[b] = -np.inf
    a = 0
    while a + 4 <= n:           # four rows at a time: a quarter of the loads and stores of m1, m2
        b0, b1, b2, b3 = base[a], base[a + 1], base[a + 2], base[a + 3]
        for b in range(R):      # compares and selects only: the loop vectorises
            o1 = m1[b]
            o2 = m2[b]
            x = b0 + pot[a, b] + c * slope[a, b]
            lo = x if x < o1 else o1
            o1 = o1 if x < o1 else x
            o2 = lo if lo > o2 else o2
            x = b1 + pot[a + 1, b] + c * slope[a + 1, b]
            lo = x if x < o1 else o1
            o1 = o1 if x < o1 else x
            o2 = lo if lo > o2 else o2
            x = b2 + pot[a + 2, b] + c * slope[a + 2, b]
            lo = x if x < o1 else o1
            o1 = o1 if x < o1 else x
            o2 = lo if lo > o2 else o2
            x = b3 + pot[a + 3, b] + c * slope[a + 3, b]
            lo = x if x < o1 else o1
            m1[b] = o1 if x < o1 else x
            m2[b] = lo if lo > o2 else o2
        a += 4
    while a < n:
        ba = base[a]
        for b in range(R):
            x = ba + pot[a, b] + c * slope[a, b]
            o1 = m1[b]
            o2 = m2[b]
            lo = x if x < o1 else o1
            m1[b] = o1 if x < o1 else x
            m2[b] = lo if lo > o2 else o2
        a += 1


@njit(cache=True, inline="always")
def _lse_of_two(base, pot, slope, c, m1, m2):
    """:func:`_pruned_lse` of ``base[i] + pot[i] + c slope[i]`` when exactly two of its terms, the
    two largest ``m1 >= m2`` (:func:`_top_two`), are within ``_CUT`` of the largest: the same
    bits, as a sum of two terms does not depend on their order; NaN when more terms count."""
    lo = m1 - _CUT
    n = 0
    for i in range(base.shape[0]):
        if base[i] + pot[i] + c * slope[i] > lo:
            n += 1
    if n > 2:
        return np.nan
    s = 1.0 + (1.0 if m2 == m1 else fexp(m2 - m1))
    if s == 1.0:
        return m1 + 0.0
    return m1 + np.log(s)


@njit(cache=True)
def _pruned_lse(base, pot, slope, c, bound, order, tmp):
    """``log sum_i exp(base[i] + pot[i] + c slope[i])`` over the ``i`` in ``order`` (``base``
    descending) until ``base[i] + bound`` (``bound >= max_i pot[i] + c slope[i]``) is
    ``_CUT`` nats below the largest term: the rest cannot count."""
    mx = -np.inf
    n = 0
    for k in range(order.shape[0]):
        i = order[k]
        if base[i] + bound < mx - _CUT:
            break
        x = base[i] + pot[i] + c * slope[i]
        tmp[k] = x
        mx = max(mx, x)
        n = k + 1
    return _lse(tmp, n)


def project(graph, thU, E, cm, thP, P, c, node, edge_acc, with_edges):
    """The marginals of the graph's model with natural parameters ``(thU, thP + c P)`` (unary to
    ``node``, pairwise *added* to ``edge_acc`` if ``with_edges``): the one step of
    :func:`spmp_iterations` that depends on the graph, implemented (numba overload) for each
    graph bundle (:class:`ChainGraph`; the tree's in :mod:`structpred.outputs._tree_kernels`)."""
    raise NotImplementedError("project is a compiled kernel: call it from numba code")


#: a chain's buffers for :func:`project` (log forward and backward messages, scaled messages,
#: scales, work)
ChainGraph = namedtuple("ChainGraph", ["la", "lb", "ex", "fw", "sc", "work", "order", "thPT", "PT", "flush"])


@overload(project)
def _project_chain(graph, thU, E, cm, thP, P, c, node, edge_acc, with_edges):
    if isinstance(graph, types.BaseNamedTuple) and graph.instance_class is ChainGraph:
        def impl(graph, thU, E, cm, thP, P, c, node, edge_acc, with_edges):
            g = graph
            _scaled_project(thU, E, cm, thP, P, c, node, edge_acc, with_edges, g.la, g.lb, g.ex, g.fw, g.sc, g.work,
                            g.order, g.thPT, g.PT, g.flush)
        return impl


@njit(cache=True, error_model="numpy")   # flog's loops vectorise
def _mix_state(graph, thU, E, cm, thP, P, c, lnu, eps, node_coef, node):
    """The warm state ``(thU, thP + c P, lnu)`` mixed in place with the uniform distribution in
    the mean parameters (``NodeLoss.mix_warm_state``): marginals ``m`` of ``(thU, thP + c P)`` by
    :func:`project` on the scaled potentials ``E``, ``cm``, then ``(1 - eps) m + eps / R`` (``eps /
    R^2`` on the edges) mapped back to the canonical parameters, ``log m_e`` on the edges and
    ``(1 - deg_t) log m_t`` on the nodes (:func:`flog`: the mixed entries are at least ``eps /
    R^2``); ``lnu <- logaddexp(lnu + log(1 - eps), log(eps / R))``."""
    T, R = thU.shape
    edge = np.zeros((max(T - 1, 1), R, R))
    project(graph, thU, E, cm, thP, P, c, node, edge, True)
    for t in range(T):
        for j in range(R):
            thU[t, j] = flog(node[t, j] * (1.0 - eps) + eps / R) * node_coef[t]
    for t in range(T - 1):
        for a in range(R):
            for b in range(R):
                thP[t, a, b] = flog(edge[t, a, b] * (1.0 - eps) + eps / (R * R))
    la = np.log1p(-eps)
    lb = np.log(eps / R)
    for t in range(T):
        for j in range(R):
            x = lnu[t, j] + la
            if x == lb:
                lnu[t, j] = x + np.log(2.0)
            elif x > lb:
                lnu[t, j] = x + np.log1p(np.exp(lb - x))
            else:
                lnu[t, j] = lb + np.log1p(np.exp(x - lb))


@njit(cache=True)
def spmp_iterations(graph, U, P, Lw, kind, eta, n_iter, thU, thP, lnu, mu_node, mu_edge, nu_bar, mix, node_coef):
    """SP-MP (M4N Algorithm 2, App. G.2) for ``max_mu min_nu sum_t nu_t^T Lw_t mu_t + <v, mu>`` on
    the marginal polytope of ``graph`` (a chain, a tree: its :func:`project`).

    ``mu`` (max player) lives on the marginal polytope with the tree entropy: a mirror step adds
    ``eta * gradient`` to its natural parameters ``(thU, thP)`` and maps back by sum-product.
    ``nu`` (min player) lives on a product of simplices with the Shannon entropy: a mirror step
    is a softmax of ``lnu - eta * gradient``.  ``Lw[t] = w_t * loss_matrix`` (row = the nu / true
    label; ``kind`` as in :func:`_loss_times`).  The pairwise gradient ``eta * P`` is the same at
    every step, so after ``k`` iterations the pairwise parameters are ``thP + k eta P``: they are
    kept as scaled potentials (:func:`_step_potentials`, no exp per entry) and written to ``thP``
    at the end.  The state arrays ``thU (T, R)``, ``thP (T-1, R, R)``, ``lnu (T, R)`` hold the
    last iterates and are updated in place (warm start); the averages of the half-step iterates
    are written to ``mu_node``, ``mu_edge``, ``nu_bar``.  With ``mix > 0`` the state is then mixed
    with the uniform distribution (``mix_warm_state``, ``node_coef[t] = 1 - deg_t``), the last
    iterate's marginals taken from the scaled potentials at hand.
    """
    T, R = U.shape
    Tm = max(T - 1, 1)
    E = np.empty((Tm, R, R))
    G = np.empty((Tm, R, R))
    cm = np.empty((Tm, R))
    gm = np.empty((Tm, R))
    _init_potentials(thP, P, eta, E[: T - 1], cm, G[: T - 1], gm)
    mu_node[:] = 0.0
    mu_edge[:] = 0.0
    nu_bar[:] = 0.0
    cur = np.empty((T, R))          # unary marginals of the current mu iterate
    project(graph, thU, E, cm, thP, P, 0.0, cur, mu_edge, n_iter == 0)
    nu = np.empty((T, R))
    _log_softmax_rows(lnu, nu)
    if n_iter == 0:
        mu_node[:] = cur
        nu_bar[:] = nu
        if mix > 0.0:
            _mix_state(graph, thU, E, cm, thP, P, 0.0, lnu, mix, node_coef, cur)
        return
    hU = np.empty((T, R))
    hnode = np.empty((T, R))
    hnu = np.empty((T, R))
    hlnu = np.empty((T, R))
    g = np.empty((T, R))
    for k in range(1, n_iter + 1):
        # the pairwise natural parameters after this iteration (same for half and full step)
        _step_potentials(E[: T - 1], cm, G[: T - 1], gm, thP, P, k * eta)
        # half step from the current pair
        mirror_mu(thU, U, Lw, kind, nu, eta, g, hU)
        project(graph, hU, E, cm, thP, P, k * eta, hnode, mu_edge, True)
        mirror_nu(lnu, Lw, kind, cur, eta, g, hlnu, hnu)
        # full step from the current pair with the half-step gradients
        mirror_mu(thU, U, Lw, kind, hnu, eta, g, thU)
        mirror_nu(lnu, Lw, kind, hnode, eta, g, lnu, nu)
        project(graph, thU, E, cm, thP, P, k * eta, cur, mu_edge, False)
        mu_node += hnode
        nu_bar += hnu
    c = n_iter * eta
    if mix > 0.0:
        _mix_state(graph, thU, E, cm, thP, P, c, lnu, mix, node_coef, cur)
    else:
        for t in range(T - 1):
            for a in range(R):
                for b in range(R):
                    thP[t, a, b] += c * P[t, a, b]
    inv = 1.0 / n_iter
    mu_node *= inv
    mu_edge *= inv
    nu_bar *= inv


@njit(cache=True)
def spmp(U, P, Lw, kind, eta, n_iter, thU, thP, lnu, mu_node, mu_edge, nu_bar, mix=0.0, flush=True):
    """:func:`spmp_iterations` on the chain (``mix``: the warm state's mix, see there); ``flush``:
    the projections' scaled sums flush subnormals (:func:`_scaled_project`; the same bits, and on
    Intel cores no microcode assist per underflowing product)."""
    T, R = U.shape
    Tm = max(T - 1, 1)
    thPT = np.empty((Tm, R, R))     # the pairwise parameters as the backward pass reads them; thP
    PT = np.empty((Tm, R, R))       # only changes at the end of spmp_iterations
    for t in range(T - 1):
        for a in range(R):
            for b in range(R):
                thPT[t, b, a] = thP[t, a, b]
                PT[t, b, a] = P[t, a, b]
    graph = ChainGraph(np.empty((T, R)), np.empty((T, R)), np.empty((Tm, R)), np.empty((Tm, R)), np.zeros((Tm, 5)),
                       np.empty((6, R)), np.empty(R, dtype=np.int64), thPT, PT, flush)
    coef = np.full(T, -1.0)
    coef[0] = coef[T - 1] = 0.0 if T > 1 else 1.0
    spmp_iterations(graph, U, P, Lw, kind, eta, n_iter, thU, thP, lnu, mu_node, mu_edge, nu_bar, mix, coef)


@njit(cache=True)
def weighted_embedding(Y, w, R, out):
    """``out = sum_k w_k phi(Y[k])`` for sequences ``Y (K, T)`` in the chain layout."""
    K, T = Y.shape
    out[:] = 0.0
    for k in range(K):
        for t in range(T):
            out[t * R + Y[k, t]] += w[k]
            if t + 1 < T:
                out[T * R + t * R * R + Y[k, t] * R + Y[k, t + 1]] += w[k]


@njit(cache=True)
def top_k_weights(Ua, P, K, mu, Y, S, u):
    """The l2 smoothing's top-K part (Casimir §4.2): the ``K`` best sequences ``Y`` of the
    loss-augmented unaries ``Ua`` with scores ``S`` (decreasing) and ``u[k] = S[k] / mu - theta``,
    ``proj_simplex(S / mu) = max(u, 0)``; returns how many were found."""
    found = top_k_viterbi(Ua, P, K, Y, S)
    # projection of the sorted S / mu onto the simplex
    csum = 0.0
    theta = 0.0
    for k in range(found):
        csum += S[k] / mu
        t = (csum - 1.0) / (k + 1)
        if S[k] / mu - t > 0:
            theta = t
    for k in range(found):
        u[k] = S[k] / mu - theta
    return found


@njit(cache=True)
def weighted_embedding_minus(Y, u, found, y, R, grad):
    """``grad = sum_k u_k phi(Y_k) - phi(y)`` over the ``k < found`` with ``u_k > 0`` (the
    gradient of the smoothed hinge; ``u = [1]``: the hinge's ``phi(y*) - phi(y)``)."""
    T = y.shape[0]
    grad[:] = 0.0
    for k in range(found):
        uk = u[k]
        if uk <= 0:
            continue
        for t in range(T):
            grad[t * R + Y[k, t]] += uk
            if t + 1 < T:
                grad[T * R + t * R * R + Y[k, t] * R + Y[k, t + 1]] += uk
    for t in range(T):
        grad[t * R + y[t]] -= 1.0
        if t + 1 < T:
            grad[T * R + t * R * R + y[t] * R + y[t + 1]] -= 1.0


@njit(cache=True)
def smoothed_value(U, P, y, S, u, found, mu):
    """``u.S - mu/2 ||u||^2 - <phi(y), v>`` over the ``k < found`` with ``u_k > 0``."""
    T = U.shape[0]
    value = 0.0
    sq = 0.0
    for k in range(found):
        uk = u[k]
        if uk <= 0:
            continue
        value += uk * S[k]
        sq += uk * uk
    value -= 0.5 * mu * sq
    for t in range(T):
        value -= U[t, y[t]]
        if t + 1 < T:
            value -= P[t, y[t], y[t + 1]]
    return value


@njit(cache=True)
def smoothed_top_k(U, P, y, A, K, mu, grad, Y, S):
    """Top-K l2-smoothed hinge of one chain (Casimir §4.2) in one compiled call.

    ``A (T, R)``: the loss scores ``w_t C[y_t, :]`` added to the unaries; the K best
    loss-augmented sequences ``Y`` with scores ``S`` (decreasing), ``u = proj_simplex(S / mu)``;
    writes ``grad = sum_k u_k phi(Y_k) - phi(y)`` and returns
    ``u.S - mu/2 ||u||^2 - <phi(y), v>``.
    """
    u = np.empty(K)
    found = top_k_weights(U + A, P, K, mu, Y, S, u)
    weighted_embedding_minus(Y, u, found, y, U.shape[1], grad)
    return smoothed_value(U, P, y, S, u, found, mu)
