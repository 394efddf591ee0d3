"""Numba kernels of the real-line spaces (robust regression, QS §6 and Example 1.3).

The Cauchy loss ``rho(r) = (c^2 / 2) log(1 + (r / c)^2)`` has
``rho'(r) = c^2 r / (c^2 + r^2)`` (``|rho'| <= c / 2``) and
``rho''(r) = c^2 (c^2 - r^2) / (c^2 + r^2)^2``: even, decreasing in ``|r|`` from 1 at 0 to
its minimum ``-1/8`` at ``|r| = sqrt(3) c``, then increasing to 0.  The decoder minimises
``F(t) = sum_i alpha_i rho(t - Y_i)`` globally on an interval by branch and bound on
intervals ``[a, b]``: each carries ``F`` and ``F'`` at its ends and a lower bound ``-M`` on
``F''`` over it (interval arithmetic, term by term, from the shape of ``rho''``), which
gives a lower bound on ``min F`` there (:func:`node_bound`).  Intervals on which ``F`` is
certified convex are solved by safeguarded Newton; the others are bisected.
"""

from __future__ import annotations

import numpy as np
from numba import njit

SQRT3 = np.sqrt(3.0)


@njit(cache=True)
def rho(r, c2):
    """``(c^2 / 2) log(1 + r^2 / c^2)``."""
    return 0.5 * c2 * np.log1p(r * r / c2)


@njit(cache=True)
def rho1(r, c2):
    """``rho'(r) = c^2 r / (c^2 + r^2)``."""
    return c2 * r / (c2 + r * r)


@njit(cache=True)
def rho2(r, c2):
    """``rho''(r) = c^2 (c^2 - r^2) / (c^2 + r^2)^2``."""
    q = c2 + r * r
    return c2 * (c2 - r * r) / (q * q)


@njit(cache=True)
def rho2_range(lo, hi, c2, xs):
    """``(min, max)`` of ``rho''`` over ``[lo, hi]`` (``xs = sqrt(3) c``, where the minimum
    ``-1/8`` is reached): ``rho''`` is a function of ``|r|`` that decreases on ``[0, xs]`` and
    increases after, so its max over a range of ``|r|`` is at an end of the range and its
    min is at ``xs`` if inside, else at an end."""
    if lo <= 0.0 <= hi:
        rlo = 0.0
        rhi = max(-lo, hi)
    elif lo > 0.0:
        rlo = lo
        rhi = hi
    else:
        rlo = -hi
        rhi = -lo
    h_lo = rho2(rlo, c2)
    h_hi = rho2(rhi, c2)
    mx = max(h_lo, h_hi)
    if rlo <= xs <= rhi:
        mn = -0.125
    else:
        mn = min(h_lo, h_hi)
    return mn, mx


@njit(cache=True)
def graded_points(Ys, c, ratio):
    """Search-grid points adapted to the scale ``c`` of the loss, from the sorted outputs ``Ys``.

    A ``c/2``-net of the outputs (walking up the sorted values, a point is kept when it is
    at least ``c/2`` above the last kept one; the largest is always kept), and in every gap
    wider than ``2c`` between consecutive net points ``u < v``, points at ``u + c ratio^k``
    and ``v - c ratio^k`` (``k = 0, 1, ...``) up to the middle of the gap: near the data
    intervals are about ``c`` long, and far from it their length grows like their distance
    to the data, where ``F`` is smooth on that scale (``|rho''(r)| <= c^2 / r^2`` for
    ``|r| >= sqrt(3) c``), so the curvature bounds stay tight everywhere.
    """
    pts = []
    n = Ys.shape[0]
    last = Ys[0]
    pts.append(last)
    net = [last]
    for i in range(1, n):
        if Ys[i] - last >= 0.5 * c or i == n - 1:
            if Ys[i] > last:
                last = Ys[i]
                net.append(last)
                pts.append(last)
    for j in range(len(net) - 1):
        u = net[j]
        v = net[j + 1]
        half = 0.5 * (u + v)
        if v - u <= 2.0 * c:
            continue
        step = c
        while u + step < half:
            pts.append(u + step)
            pts.append(v - step)
            step *= ratio
        pts.append(half)
    out = np.empty(len(pts))
    for k in range(len(pts)):
        out[k] = pts[k]
    return out


@njit(cache=True)
def grid_tables(grid, k0, Y, c, R0, R1, Cmin, Cmax):
    """Tables for the grid rows ``k = k0 .. k0 + len(R0) - 1``: per grid point ``p_k`` and
    training output ``Y_i``, ``R0 = rho(p_k - Y_i)`` and ``R1 = rho'(p_k - Y_i)``; per grid
    interval ``[p_k, p_{k+1}]`` (rows past the last interval are left as they are),
    ``Cmin`` / ``Cmax`` = min / max of ``rho''(t - Y_i)`` over it.  ``F``, ``F'`` and the
    curvature bound of every query on the grid are then matrix products with the weights."""
    c2 = c * c
    xs = SQRT3 * c
    m = grid.shape[0]
    n = Y.shape[0]
    for kk in range(R0.shape[0]):
        k = k0 + kk
        for i in range(n):
            r = grid[k] - Y[i]
            R0[kk, i] = rho(r, c2)
            R1[kk, i] = rho1(r, c2)
        if k + 1 < m:
            for i in range(n):
                mn, mx = rho2_range(grid[k] - Y[i], grid[k + 1] - Y[i], c2, xs)
                Cmin[kk, i] = mn
                Cmax[kk, i] = mx


@njit(cache=True)
def node_bound(a, b, fa, fb, da, db, mlow):
    """Lower bound on ``min_{[a, b]} F`` from ``F``, ``F'`` at the ends and ``F'' >= mlow``.

    With ``M = max(-mlow, 0)``, ``psi(t) = F(t) + (M / 2)(t - a)(t - b)`` is convex, equals
    ``F`` at ``a`` and ``b``, lies below ``F`` on ``[a, b]`` and above its tangents at ``a``
    (slope ``F'(a) - M h / 2``) and ``b`` (slope ``F'(b) + M h / 2``); the bound is the
    minimum over ``[a, b]`` of the larger tangent (exact for a convex ``F`` when the
    minimum is at an end)."""
    h = b - a
    M = -mlow if mlow < 0.0 else 0.0
    sa = da - 0.5 * M * h
    sb = db + 0.5 * M * h
    if sa >= 0.0:
        return fa
    if sb <= 0.0:
        return fb
    # tangents cross at t0: fa + sa (t0 - a) = fb + sb (t0 - b)
    t0 = (fb - fa + sa * a - sb * b) / (sa - sb)
    if t0 < a:
        t0 = a
    elif t0 > b:
        t0 = b
    lb = fa + sa * (t0 - a)
    return min(lb, fa, fb)


@njit(cache=True)
def eval_split(t, a, b, alpha, Y, c2, xs):
    """``F(t)``, ``F'(t)`` and the lower bounds on ``F''`` over ``[a, t]`` and ``[t, b]`` in one
    pass over the training outputs (zero weights skipped)."""
    f = 0.0
    d1 = 0.0
    ml = 0.0
    mr = 0.0
    for i in range(Y.shape[0]):
        w = alpha[i]
        if w == 0.0:
            continue
        r = t - Y[i]
        f += w * rho(r, c2)
        d1 += w * rho1(r, c2)
        mn1, mx1 = rho2_range(a - Y[i], r, c2, xs)
        mn2, mx2 = rho2_range(r, b - Y[i], c2, xs)
        if w > 0.0:
            ml += w * mn1
            mr += w * mn2
        else:
            ml += w * mx1
            mr += w * mx2
    return f, d1, ml, mr


@njit(cache=True)
def eval_f(t, alpha, Y, c2):
    f = 0.0
    for i in range(Y.shape[0]):
        w = alpha[i]
        if w != 0.0:
            f += w * rho(t - Y[i], c2)
    return f


@njit(cache=True)
def eval_d12(t, alpha, Y, c2):
    """``F'(t)`` and ``F''(t)`` (no logarithms)."""
    d1 = 0.0
    d2 = 0.0
    for i in range(Y.shape[0]):
        w = alpha[i]
        if w == 0.0:
            continue
        r = t - Y[i]
        q = c2 + r * r
        d1 += w * c2 * r / q
        d2 += w * c2 * (c2 - r * r) / (q * q)
    return d1, d2


@njit(cache=True)
def convex_min(lo, hi, dlo, dhi, alpha, Y, c2):
    """Minimiser of ``F`` on ``[lo, hi]`` where ``F`` is convex with ``F'(lo) < 0 < F'(hi)``:
    safeguarded Newton on ``F'`` (a bisection step whenever Newton leaves the bracket or
    ``F'' <= 0``), until the step is at round-off level."""
    # start at the secant root of F'
    t = lo - dlo * (hi - lo) / (dhi - dlo)
    if not (lo < t < hi):
        t = 0.5 * (lo + hi)
    for _ in range(200):
        d1, d2 = eval_d12(t, alpha, Y, c2)
        if d1 < 0.0:
            lo = t
        elif d1 > 0.0:
            hi = t
        else:
            return t
        if d2 > 0.0:
            tn = t - d1 / d2
        else:
            tn = 0.5 * (lo + hi)
        if not (lo < tn < hi):
            tn = 0.5 * (lo + hi)
        if abs(tn - t) <= 4e-16 * max(abs(t), abs(lo), abs(hi)) or not (lo < tn < hi):
            return tn if lo <= tn <= hi else t
        t = tn
    return t


@njit(cache=True)
def bnb_one(alpha, Y, grid, Fg, Dg, Ml, c, eps, max_nodes, NA, NB, NF, NG, ND, NE, NM, NL):
    """Global minimum of ``F(t) = sum_i alpha_i rho(t - Y_i)`` on ``[grid[0], grid[-1]]``.

    ``Fg``, ``Dg`` hold ``F`` and ``F'`` at the grid points, ``Ml`` the lower bounds on ``F''``
    over the grid intervals.  Best-first branch and bound: the upper bound is the best value
    seen (grid points, split points, Newton solutions); an interval is dropped once its
    lower bound (:func:`node_bound`) is within ``eps`` of it; the interval of least bound
    is solved by Newton if its curvature bound is ``>= 0`` (convex), else bisected.
    ``NA``..``NL`` are node arrays (capacity ``len(grid) - 1 + 2 max_nodes``): ends, ``F``
    and ``F'`` at them, curvature bound and lower bound.  Returns ``(t, F(t), refinements,
    closed)``; ``closed`` is False when ``max_nodes`` refinements did not close the gap
    (the answer is then the best point seen, within the remaining gap).
    """
    c2 = c * c
    xs = SQRT3 * c
    m = grid.shape[0]
    ub = Fg[0]
    tb = grid[0]
    for k in range(1, m):
        if Fg[k] < ub:
            ub = Fg[k]
            tb = grid[k]
    na = 0
    for k in range(m - 1):
        lb = node_bound(grid[k], grid[k + 1], Fg[k], Fg[k + 1], Dg[k], Dg[k + 1], Ml[k])
        if lb < ub - eps:
            NA[na] = grid[k]
            NB[na] = grid[k + 1]
            NF[na] = Fg[k]
            NG[na] = Fg[k + 1]
            ND[na] = Dg[k]
            NE[na] = Dg[k + 1]
            NM[na] = Ml[k]
            NL[na] = lb
            na += 1
    steps = 0
    closed = True
    while na > 0:
        # node of least lower bound; drop those that are already closed
        j = -1
        lbest = np.inf
        k = 0
        while k < na:
            if NL[k] >= ub - eps:
                na -= 1
                NA[k] = NA[na]
                NB[k] = NB[na]
                NF[k] = NF[na]
                NG[k] = NG[na]
                ND[k] = ND[na]
                NE[k] = NE[na]
                NM[k] = NM[na]
                NL[k] = NL[na]
                continue
            if NL[k] < lbest:
                lbest = NL[k]
                j = k
            k += 1
        if j < 0:
            break
        if steps >= max_nodes:
            closed = False
            break
        steps += 1
        a = NA[j]
        b = NB[j]
        fa = NF[j]
        fb = NG[j]
        da = ND[j]
        db = NE[j]
        ml = NM[j]
        na -= 1
        NA[j] = NA[na]
        NB[j] = NB[na]
        NF[j] = NF[na]
        NG[j] = NG[na]
        ND[j] = ND[na]
        NE[j] = NE[na]
        NM[j] = NM[na]
        NL[j] = NL[na]
        if ml >= 0.0:
            if da < 0.0 < db:
                t = convex_min(a, b, da, db, alpha, Y, c2)
                ft = eval_f(t, alpha, Y, c2)
                if ft < ub:
                    ub = ft
                    tb = t
            continue  # convex with the minimum at an end: the end is already counted
        t = 0.5 * (a + b)
        if not (a < t < b):
            continue  # interval at round-off width: its ends are counted
        ft, dt, ml1, ml2 = eval_split(t, a, b, alpha, Y, c2, xs)
        if ft < ub:
            ub = ft
            tb = t
        # the parent's bound also holds on the children: keep the larger
        if ml1 < ml:
            ml1 = ml
        if ml2 < ml:
            ml2 = ml
        lb1 = node_bound(a, t, fa, ft, da, dt, ml1)
        if lb1 < ub - eps:
            NA[na] = a
            NB[na] = t
            NF[na] = fa
            NG[na] = ft
            ND[na] = da
            NE[na] = dt
            NM[na] = ml1
            NL[na] = lb1
            na += 1
        lb2 = node_bound(t, b, ft, fb, dt, db, ml2)
        if lb2 < ub - eps:
            NA[na] = t
            NB[na] = b
            NF[na] = ft
            NG[na] = fb
            ND[na] = dt
            NE[na] = db
            NM[na] = ml2
            NL[na] = lb2
            na += 1
    return tb, ub, steps, closed


@njit(cache=True)
def cauchy_decode_batch(A, Y, grid, Fg, Dg, Ml, c, eps, max_nodes, out, fout, steps, closed):
    """:func:`bnb_one` for every row of the weights ``A`` (``eps[q]`` its gap tolerance)."""
    cap = grid.shape[0] - 1 + 2 * max_nodes + 2
    NA = np.empty(cap)
    NB = np.empty(cap)
    NF = np.empty(cap)
    NG = np.empty(cap)
    ND = np.empty(cap)
    NE = np.empty(cap)
    NM = np.empty(cap)
    NL = np.empty(cap)
    for q in range(A.shape[0]):
        t, f, s, ok = bnb_one(A[q], Y, grid, Fg[q], Dg[q], Ml[q], c, eps[q], max_nodes,
                              NA, NB, NF, NG, ND, NE, NM, NL)
        out[q] = t
        fout[q] = f
        steps[q] = s
        closed[q] = ok
