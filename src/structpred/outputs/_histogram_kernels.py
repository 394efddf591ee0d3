"""Numba kernels of the histogram spaces (outputs in the simplex of ``R^d``, QS §6).

Only :class:`structpred.outputs.histogram.GaussianHistogram` has a hot loop: its loss-trick
decoder maximises ``g(y) = sum_i alpha_i k(y, Y_i)`` with ``k(y, y') = exp(-||y - y'||^2 /
(2 sigma^2))`` over the simplex by mean-shift (pre-image) fixed-point steps, with projected
gradient ascent steps (Euclidean projection onto the simplex, sort-based) where the
fixed-point step is not available.  The Hellinger decoder is in closed form (numpy).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: restarts that come this close (l1) to the answer of an earlier restart are stopped
MERGE_RADIUS = 1e-7


@njit(cache=True)
def project_simplex(v, out):
    """Euclidean projection of ``v`` onto ``{y >= 0, sum y = 1}`` (sort-based; Held, Wolfe and
    Crowder 1974, Duchi et al. 2008): ``out = max(v - theta, 0)`` with ``theta`` the
    threshold of the largest ``rho`` such that ``u_rho > (sum_{j<=rho} u_j - 1) / rho`` on
    the values ``u`` sorted in decreasing order."""
    d = v.shape[0]
    u = np.sort(v)
    css = 0.0
    theta = 0.0
    for r in range(d):
        x = u[d - 1 - r]
        css += x
        t = (css - 1.0) / (r + 1)
        if x - t > 0.0:
            theta = t
    for j in range(d):
        out[j] = max(v[j] - theta, 0.0)


@njit(cache=True)
def gauss_eval(y, Y, Ysq, alpha, inv2s2, m, w):
    """``g(y) = sum_i alpha_i k(y, Y_i)`` and ``m = sum_i w_i Y_i``, ``w_i = alpha_i k(y, Y_i)``
    (written into ``m`` and ``w``); returns ``(g, s)`` with ``s = sum_i |w_i|``.  ``g`` is also
    the mean-shift denominator ``sum_i w_i``.  Distances are ``||y||^2 + ||Y_i||^2 - 2 <y, Y_i>``
    (``Ysq`` holds ``||Y_i||^2``) so that both passes over ``Y`` are BLAS matrix-vector
    products; on histograms (norms <= 1) their absolute error is ~1e-16."""
    n = Y.shape[0]
    dots = np.dot(Y, y)
    yy = np.dot(y, y)
    g = 0.0
    s = 0.0
    for i in range(n):
        dist = yy + Ysq[i] - 2.0 * dots[i]
        if dist < 0.0:
            dist = 0.0
        wi = alpha[i] * np.exp(-dist * inv2s2)
        w[i] = wi
        g += wi
        s += abs(wi)
    m[:] = np.dot(w, Y)
    return g, s


@njit(cache=True)
def _l1(a, b):
    s = 0.0
    for j in range(a.shape[0]):
        s += abs(a[j] - b[j])
    return s


@njit(cache=True)
def _same_row(Y, i, k):
    for j in range(Y.shape[1]):
        if Y[i, j] != Y[k, j]:
            return False
    return True


@njit(cache=True)
def pick_starts(g0, Y, n_restarts, starts):
    """Indices of the ``n_restarts`` training outputs with the largest ``g0`` (ties to the
    lowest index), skipping exact duplicates of outputs already chosen; returns how many."""
    n = g0.shape[0]
    taken = np.zeros(n, dtype=np.bool_)
    r = 0
    while r < n_restarts:
        best = -np.inf
        bi = -1
        for i in range(n):
            if not taken[i] and (bi < 0 or g0[i] > best):
                best = g0[i]
                bi = i
        if bi < 0:
            break
        taken[bi] = True
        dup = False
        for q in range(r):
            if _same_row(Y, bi, starts[q]):
                dup = True
                break
        if not dup:
            starts[r] = bi
            r += 1
    return r


@njit(cache=True)
def gauss_ascent(alpha, Y, Ysq, y, sigma, max_iter, tol, done, n_done, work, w):
    """Local maximisation of ``g`` over the simplex from ``y`` (overwritten with the answer).

    Each iteration tries the mean-shift (pre-image) step ``c = m / g`` (Cortes, Mohri and
    Weston 2005), accepted when ``g > 0``, ``c >= 0`` (``c`` is then rescaled to sum to one
    exactly) and ``g(c) >= g(y)`` (always true for non-negative weights: mean shift is an
    ascent method there).  Otherwise (negative weights) it takes a projected gradient step
    ``y <- P(y + eta grad g)`` with ``grad g = (m - g y) / sigma^2``, ``eta`` starting at the
    mean-shift step ``sigma^2 / g`` (or ``sigma^2 / s``, ``s = sum_i |w_i|``, when ``g <= 0``)
    and halved until Armijo's condition holds.  Stops when a step moves ``y`` by at most
    ``tol`` (l1), when no ascent step is found, after ``max_iter`` iterations, or when ``y``
    comes within :data:`MERGE_RADIUS` of one of the ``n_done`` earlier answers ``done``.
    ``work`` is a ``(5, d)`` and ``w`` an ``(n,)`` scratch array; ``Ysq`` holds ``||Y_i||^2``.
    Returns ``(g(y), iterations)``.
    """
    d = y.shape[0]
    s2 = sigma * sigma
    inv2s2 = 0.5 / s2
    m = work[0]
    c = work[1]
    mc = work[2]
    z = work[3]
    tmp = work[4]
    g, s = gauss_eval(y, Y, Ysq, alpha, inv2s2, m, w)
    it = 0
    while it < max_iter:
        it += 1
        moved = False
        step = 0.0
        eta = 0.0
        if g > 0.0:
            cmin = np.inf
            tot = 0.0
            for j in range(d):
                c[j] = m[j] / g
                tot += c[j]
                if c[j] < cmin:
                    cmin = c[j]
            if cmin >= 0.0 and tot > 0.0:
                for j in range(d):
                    c[j] /= tot
                gc, sc = gauss_eval(c, Y, Ysq, alpha, inv2s2, mc, w)
                if gc >= g:
                    step = _l1(c, y)
                    for j in range(d):
                        y[j] = c[j]
                        m[j] = mc[j]
                    g = gc
                    s = sc
                    moved = True
                else:
                    eta = 0.5 * s2 / g  # the mean-shift step itself failed: start below it
            else:
                eta = s2 / g
        if not moved:
            if eta == 0.0:
                if s <= 0.0:
                    break  # no weight reaches y: g is flat (zero) here
                eta = s2 / s
            # gradient of g (in place in c) and Armijo backtracking on P(y + eta grad)
            for j in range(d):
                c[j] = (m[j] - g * y[j]) / s2
            for _ in range(60):
                for j in range(d):
                    tmp[j] = y[j] + eta * c[j]
                project_simplex(tmp, z)
                slope = 0.0
                for j in range(d):
                    slope += c[j] * (z[j] - y[j])
                if slope <= 0.0:
                    break  # projected gradient is zero: stationary
                gz, sz = gauss_eval(z, Y, Ysq, alpha, inv2s2, mc, w)
                if gz >= g + 1e-4 * slope:
                    step = _l1(z, y)
                    for j in range(d):
                        y[j] = z[j]
                        m[j] = mc[j]
                    g = gz
                    s = sz
                    moved = True
                    break
                eta *= 0.5
            if not moved:
                break
        if step <= tol:
            break
        merged = False
        for q in range(n_done):
            if _l1(y, done[q]) <= MERGE_RADIUS:
                merged = True
                break
        if merged:
            break
    return g, it


@njit(cache=True)
def gauss_decode_batch(A, Y, G0, sigma, n_restarts, max_iter, tol, out, iters):
    """Loss-trick decoding for the Gaussian loss, one row of ``A`` (weights) per query.

    ``G0[q, i] = g_q(Y_i)`` (the objective at the training outputs) picks the restarts
    (:func:`pick_starts`); each runs :func:`gauss_ascent` and the answer is the point of
    largest ``g`` (the first restart on ties).  ``out`` receives ``(n_q, d)`` answers,
    ``iters`` the total ascent iterations per query.
    """
    nq = A.shape[0]
    d = Y.shape[1]
    starts = np.empty(n_restarts, dtype=np.int64)
    done = np.empty((n_restarts, d))
    y = np.empty(d)
    work = np.empty((5, d))
    w = np.empty(Y.shape[0])
    Ysq = np.empty(Y.shape[0])
    for i in range(Y.shape[0]):
        Ysq[i] = np.dot(Y[i], Y[i])
    for q in range(nq):
        alpha = A[q]
        r = pick_starts(G0[q], Y, n_restarts, starts)
        best = -np.inf
        tot_it = 0
        for k in range(r):
            for j in range(d):
                y[j] = Y[starts[k], j]
            g, it = gauss_ascent(alpha, Y, Ysq, y, sigma, max_iter, tol, done, k, work, w)
            tot_it += it
            for j in range(d):
                done[k, j] = y[j]
            if g > best:
                best = g
                for j in range(d):
                    out[q, j] = y[j]
        iters[q] = tot_it
