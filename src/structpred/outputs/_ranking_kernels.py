"""Numba kernels of the pairwise ranking space (QS §6, eq. 22; Duchi, Mackey and Jordan 2010).

Conventions.  A rating vector ``r`` (length ``M``) has ``r[j] > 0`` for a rated item and
``r[j] = 0`` for an unrated one.  A ranking is given either as rank positions ``y``
(``y[j]`` = position of item ``j``, 0 = top, as :class:`structpred.outputs.Permutation`
stores them) or as an order (``order[p]`` = item at position ``p``).  Net weights ``D`` are
an antisymmetric ``(M, M)`` matrix, ``D[j, k] > 0`` meaning that ``j`` should come before
``k``; the cost of a ranking is ``sum_{j, k} D[j, k] 1[y_j > y_k]``, the net weight of the
pairs it puts backwards (the weighted linear ordering / feedback arc set problem).

:func:`fas_order` is the greedy heuristic of Eades, Lin and Smyth (1993) for weighted arcs
in ``O(M^2)``; it is exact whenever the positive arcs of ``D`` form an acyclic graph.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def pair_loss(r, y, normalize):
    """``(1/Z) sum_{j,k rated, r_j > r_k} (r_j - r_k) 1[y_j > y_k]`` for one rating vector ``r``
    and positions ``y``, ``Z = sum_{j,k rated, r_j > r_k} (r_j - r_k)`` (1 without ``normalize``;
    ``Z = 0`` gives 0) (QS eq. 22)."""
    M = r.shape[0]
    num = 0.0
    z = 0.0
    for j in range(M):
        rj = r[j]
        if rj <= 0.0:
            continue
        yj = y[j]
        for k in range(M):
            rk = r[k]
            if rk > 0.0 and rk < rj:
                d = rj - rk
                z += d
                if yj > y[k]:
                    num += d
    if not normalize:
        return num
    if z <= 0.0:
        return 0.0
    return num / z


@njit(cache=True)
def pair_loss_rows(R, Y, normalize, out):
    """Row-wise :func:`pair_loss` on ``(n, M)`` ratings and positions into ``out (n,)``."""
    for i in range(R.shape[0]):
        out[i] = pair_loss(R[i], Y[i], normalize)


@njit(cache=True)
def normalizers(R, out):
    """``Z(r) = sum_{j,k rated, r_j > r_k} (r_j - r_k)`` for each row of ``R`` in ``O(M log M)``:
    with the ``m`` rated values sorted, ``v_a`` is the larger of ``a`` pairs and the smaller of
    ``m - 1 - a``, so ``Z = sum_a (2a - m + 1) v_a``."""
    M = R.shape[1]
    buf = np.empty(M)
    for i in range(R.shape[0]):
        m = 0
        for j in range(M):
            if R[i, j] > 0.0:
                buf[m] = R[i, j]
                m += 1
        v = np.sort(buf[:m])
        z = 0.0
        for a in range(m):
            z += (2 * a - m + 1) * v[a]
        out[i] = z


@njit(cache=True)
def rated_lists(R):
    """Compressed rated entries of ``R (n, M)``: item indices (increasing within a row), their
    ratings and row offsets ``(idx, val, offs)``, so that work on unrated items is skipped."""
    n, M = R.shape
    offs = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        c = 0
        for j in range(M):
            if R[i, j] > 0.0:
                c += 1
        offs[i + 1] = offs[i] + c
    idx = np.empty(offs[n], dtype=np.int64)
    val = np.empty(offs[n])
    for i in range(n):
        p = offs[i]
        for j in range(M):
            if R[i, j] > 0.0:
                idx[p] = j
                val[p] = R[i, j]
                p += 1
    return idx, val, offs


@njit(cache=True)
def net_weights(idx, val, offs, w, D):
    """``D = C - C^T`` for ``C = sum_i w_i (r_ij - r_ik)_+ 1[j, k rated in i]`` into ``D (M, M)``:
    ``D[j, k] = sum_i w_i (r_ij - r_ik)`` over the training rows ``i`` rating both ``j`` and ``k``
    (``(x)_+ - (-x)_+ = x``).  Rows of ``w`` equal to 0 are skipped.  Only the upper triangle is
    accumulated and then mirrored, so ``D`` is exactly antisymmetric and items tied in every row
    that rates both get exactly 0.  Cost ``sum_i m_i^2 / 2`` for ``m_i`` rated items in row ``i``."""
    M = D.shape[0]
    for j in range(M):
        for k in range(M):
            D[j, k] = 0.0
    for i in range(w.shape[0]):
        wi = w[i]
        if wi == 0.0:
            continue
        a1 = offs[i + 1]
        for a in range(offs[i], a1):
            row = D[idx[a]]
            ra = val[a]
            for b in range(a + 1, a1):
                row[idx[b]] += wi * (ra - val[b])
    for j in range(M):
        for k in range(j + 1, M):
            D[k, j] = -D[j, k]


@njit(cache=True)
def fas_order(D):
    """Greedy order for the weighted feedback arc set / linear ordering problem on antisymmetric
    net weights ``D`` (Eades, Lin and Smyth 1993, with weighted arcs): ``min_y sum_{j,k} D[j, k]
    1[y_j > y_k]``.  Returns the items in order (first = top).

    At each step, among the remaining items: a sink (no ``k`` with ``D[u, k] > 0``) goes to the
    back, else a source (no ``k`` with ``D[k, u] > 0``) to the front, else the item of largest
    ``delta(u) = out-weight - in-weight = sum_k D[u, k]`` to the front.  ``delta`` and the counts
    of positive out- and in-arcs are updated incrementally, ``O(M)`` per step, ``O(M^2)`` in all.
    Ties: the highest-index sink (it goes to the back, so items indifferent to each other keep
    their index order), the lowest-index source, the lowest index of largest ``delta``.
    Exact when the positive arcs are acyclic (every step then removes a sink).  The diagonal
    is ignored; ``D[u, k] = -D[k, u]`` is assumed (the updates read row ``k`` only).
    """
    M = D.shape[0]
    alive = np.ones(M, dtype=np.bool_)
    delta = np.empty(M)
    outc = np.empty(M, dtype=np.int64)
    inc = np.empty(M, dtype=np.int64)
    for u in range(M):
        s = 0.0
        o = 0
        q = 0
        for k in range(M):
            if k != u:
                x = D[u, k]
                s += x
                if x > 0.0:
                    o += 1
                elif x < 0.0:
                    q += 1
        delta[u] = s
        outc[u] = o
        inc[u] = q
    order = np.empty(M, dtype=np.int64)
    lo = 0
    hi = M - 1
    for _ in range(M):
        sink = -1
        source = -1
        best = -1
        bestv = -np.inf
        for u in range(M):
            if alive[u]:
                if outc[u] == 0:
                    sink = u
                elif inc[u] == 0:
                    if source < 0:
                        source = u
                elif delta[u] > bestv:
                    bestv = delta[u]
                    best = u
        if sink >= 0:
            w = sink
            order[hi] = w
            hi -= 1
        else:
            w = source if source >= 0 else best
            order[lo] = w
            lo += 1
        alive[w] = False
        row = D[w]
        for u in range(M):
            if alive[u]:
                x = row[u]                 # D[w, u] = -D[u, w]
                delta[u] += x
                if x < 0.0:                # u -> w was a positive out-arc of u
                    outc[u] -= 1
                elif x > 0.0:              # w -> u was a positive in-arc of u
                    inc[u] -= 1
    return order


@njit(cache=True)
def order_to_positions(order):
    """Rank positions ``y`` of an order: ``y[order[p]] = p``."""
    y = np.empty(order.shape[0], dtype=np.int64)
    for p in range(order.shape[0]):
        y[order[p]] = p
    return y


@njit(cache=True)
def linear_order_value(C, y):
    """``sum_{j,k} C[j, k] 1[y_j > y_k]`` for positions ``y``: the loss-trick objective
    ``sum_i alpha_i L(R_i, y)`` for ``C = sum_i alpha_i c(R_i)``, or the backward net weight
    for ``D = C - C^T`` (``= 2 sum C 1[y_j > y_k] - sum_{j != k} C[j, k]``)."""
    M = C.shape[0]
    s = 0.0
    for j in range(M):
        yj = y[j]
        for k in range(M):
            if yj > y[k]:
                s += C[j, k]
    return s


@njit(cache=True)
def decode_rows(idx, val, offs, W, out):
    """QS decoding for each row ``q`` of the per-training-row weights ``W (n, n_train)``
    (``alpha_i / Z_i``): :func:`net_weights`, then :func:`fas_order`, positions into ``out[q]``."""
    M = out.shape[1]
    D = np.empty((M, M))
    for q in range(W.shape[0]):
        net_weights(idx, val, offs, W[q], D)
        order = fas_order(D)
        for p in range(M):
            out[q, order[p]] = p
