"""Numba kernels of the tree space: max-product, log-domain sum-product, SP-MP, exact feasibility.

A tree of ``T`` nodes is its ``parents`` array (``parents[0] = -1``, ``parents[t] < t``: nodes
in topological order).  Unary scores ``U (T, R)``; pairwise scores ``P (T-1, R, R)``, one block
per edge, the edge of child ``t`` at ``P[t - 1]``, indexed ``[parent label, child label]`` (AGM
eq. 5's ``Q_{pt(i); i}``; a chain, ``parents = [-1, 0, ..., T-2]``, has Chain's layout).  The
score of a labelling is ``sum_t U[t, y_t] + sum_{t>0} P[t-1, y_{parents[t]}, y_t]``.

Messages go up (children before parents: ``t = T-1 .. 1``) and down (``t = 1 .. T-1``); no
child lists are needed.  On a chain the upward pass is Chain's backward recursion and the
downward pass its forward one.  The log-sum-exp, the scaled pairwise potentials and the pruned
exact fallbacks are those of :mod:`structpred.outputs._chain_kernels`.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit, types
from numba.extending import overload

from structpred.outputs._fastmath import fexp
from structpred.outputs._subnormals import flushing, restore
from structpred.outputs._chain_kernels import (
    _CUT,
    _EDGE_SCALE,
    _TINY,
    _add_log_edges,
    _argsort_desc,
    _lse,
    _pruned_lse,
    project,
    spmp_iterations,
)


@njit(cache=True)
def chain_parents(T):
    """``[-1, 0, 1, ..., T-2]``: a chain of ``T`` nodes as a tree."""
    return np.arange(-1, T - 1).astype(np.int64)


@njit(cache=True)
def max_product(parents, U, P, out):
    """``out = argmax_y score(y)`` (upward max messages with back-pointers, then the labels top
    down); returns the max score.  Ties go to the smallest label."""
    T, R = U.shape
    up = U.copy()                       # max over each subtree, given the node's label
    back = np.empty((T, R), dtype=np.int64)
    for t in range(T - 1, 0, -1):
        p = parents[t]
        for a in range(R):
            best = up[t, 0] + P[t - 1, a, 0]
            arg = 0
            for b in range(1, R):
                s = up[t, b] + P[t - 1, a, b]
                if s > best:
                    best = s
                    arg = b
            up[p, a] += best
            back[t, a] = arg
    arg = 0
    for a in range(1, R):
        if up[0, a] > up[0, arg]:
            arg = a
    out[0] = arg
    for t in range(1, T):
        out[t] = back[t, out[parents[t]]]
    return up[0, arg]


@njit(cache=True)
def _upward(parents, U, P, inside, mup):
    """Log-domain upward pass: ``mup[t, a] = log sum_b exp(P[t-1, a, b] + inside[t, b])`` (the
    message from ``t`` to its parent) and ``inside[t] = U[t] + sum_{children c} mup[c]``;
    returns ``log Z``."""
    T, R = U.shape
    tmp = np.empty(R)
    inside[:] = U
    for t in range(T - 1, 0, -1):
        p = parents[t]
        for a in range(R):
            for b in range(R):
                tmp[b] = P[t - 1, a, b] + inside[t, b]
            m = _lse(tmp, R)
            mup[t, a] = m
            inside[p, a] += m
    return _lse(inside[0], R)


@njit(cache=True)
def log_partition(parents, U, P):
    """``log sum_y exp score(y)`` (upward pass only)."""
    T, R = U.shape
    return _upward(parents, U, P, np.empty((T, R)), np.empty((T, R)))


@njit(cache=True)
def sum_product(parents, U, P, node, edge, with_edges):
    """Unary marginals ``node (T, R)`` and, if ``with_edges``, pairwise marginals ``edge (T-1, R,
    R)`` of ``p(y) ∝ exp score(y)``; returns ``log Z``.

    Downward message into ``t``: ``down[t, b] = log sum_a exp(x[a] + P[t-1, a, b])`` with the
    parent's belief without ``t``'s message, ``x = inside[p] + down[p] - mup[t]``.
    """
    T, R = U.shape
    inside = np.empty((T, R))
    mup = np.empty((T, R))
    down = np.zeros((T, R))
    x = np.empty(R)
    tmp = np.empty(R)
    logz = _upward(parents, U, P, inside, mup)
    for j in range(R):
        z = inside[0, j] - logz
        node[0, j] = fexp(z) if z > -_CUT else 0.0
    for t in range(1, T):
        p = parents[t]
        for a in range(R):
            x[a] = inside[p, a] + down[p, a] - mup[t, a]
        for b in range(R):
            for a in range(R):
                tmp[a] = x[a] + P[t - 1, a, b]
            down[t, b] = _lse(tmp, R)
            z = inside[t, b] + down[t, b] - logz
            node[t, b] = fexp(z) if z > -_CUT else 0.0
        if with_edges:
            for a in range(R):
                base = x[a] - logz
                for b in range(R):
                    z = base + P[t - 1, a, b] + inside[t, b]
                    edge[t - 1, a, b] = fexp(z) if z > -_CUT else 0.0
    return logz


@njit(cache=True)
def _scaled_project(parents, thU, E, cm, thP, P, c, node, edge_acc, with_edges, ins, mup, dn, xl, ex, fw, sc,
                    work, order, flush):
    """Marginals of the tree with natural parameters ``(thU, thP + c P)``: unary marginals to
    ``node`` and, if ``with_edges``, pairwise marginals *added* to ``edge_acc``.

    The tree version of the chain's scaled projection: each message is a product of exp-scaled
    messages with the scaled potentials ``E`` (column ``b`` scaled by ``exp cm[e, b]``), so it
    costs multiplications and ``O(R)`` exp / log; an entry whose scaled sum falls below
    ``_TINY`` is recomputed exactly (pruned) from ``thP + c P``.  Up: ``ins[t] = thU[t] +
    sum_children mup``, ``fw[e] = exp(cm[e] + ins[t] - sc[e, 1])``, ``mup[t, a] = sc[e, 1] +
    log sum_b E[e, a, b] fw[e, b]``.  Down: ``xl[e] = ins[p] + dn[p] - mup[t]`` (the parent
    without ``t``), ``ex[e] = exp(xl[e] - sc[e, 0])``, ``dn[t, b] = sc[e, 0] + cm[e, b] + log
    sum_a ex[e, a] E[e, a, b]``.  Pairwise marginals: ``ex[e, a] E[e, a, b] fw[e, b] exp(sc[e,
    0] + sc[e, 1] - log Z)``; ``sc[e, 2] = max_b cm[e, b]`` bounds edge ``e``'s parameters.
    ``flush``: the messages' scaled sums flush subnormals, as the chain's
    (:func:`~structpred.outputs._chain_kernels._scaled_project`: the same bits).
    """
    T, R = thU.shape
    acc, wl, tmp = work[0], work[1], work[2]
    for t in range(T):
        for j in range(R):
            ins[t, j] = thU[t, j]
    for t in range(T - 1, 0, -1):
        e = t - 1
        p = parents[t]
        m = -np.inf
        rowmax = cm[e, 0]
        for b in range(R):
            m = max(m, cm[e, b] + ins[t, b])
            rowmax = max(rowmax, cm[e, b])
        sc[e, 1] = m
        sc[e, 2] = rowmax
        for b in range(R):
            d = cm[e, b] + ins[t, b] - m
            fw[e, b] = fexp(d)
        sorted_ = False
        saved = flushing(flush)
        for a in range(R):
            s = 0.0
            for b in range(R):
                s += E[e, a, b] * fw[e, b]
            if s > _TINY:
                msg = m + np.log(s)
            else:
                if not sorted_:
                    for b in range(R):
                        wl[b] = ins[t, b]
                    _argsort_desc(wl, order)
                    sorted_ = True
                msg = _pruned_lse(wl, thP[e, a], P[e, a], c, rowmax, order, tmp)
            mup[t, a] = msg
            ins[p, a] += msg
        restore(saved, flush)
    logz = _lse(ins[0], R)
    for j in range(R):
        dn[0, j] = 0.0
    for t in range(1, T):
        e = t - 1
        p = parents[t]
        m = -np.inf
        for a in range(R):
            xl[e, a] = ins[p, a] + dn[p, a] - mup[t, a]
            m = max(m, xl[e, a])
        sc[e, 0] = m
        for b in range(R):
            acc[b] = 0.0
        for a in range(R):
            ex[e, a] = fexp(xl[e, a] - m)
        saved = flushing(flush)
        for a in range(R):
            f = ex[e, a]
            if f != 0.0:
                for b in range(R):
                    acc[b] += f * E[e, a, b]
        restore(saved, flush)
        sorted_ = False
        for b in range(R):
            s = acc[b]
            if s > _TINY:
                dn[t, b] = m + np.log(s) + cm[e, b]
            else:
                if not sorted_:
                    _argsort_desc(xl[e], order)
                    sorted_ = True
                dn[t, b] = _pruned_lse(xl[e], thP[e, :, b], P[e, :, b], c, cm[e, b], order, tmp)
    saved = flushing(flush)     # entries below e^-_CUT are 0 (the vectorised loop computes every exp)
    for t in range(T):
        for j in range(R):
            d = ins[t, j] + dn[t, j] - logz
            node[t, j] = fexp(d) if d > -_CUT else 0.0
    restore(saved, flush)
    if not with_edges:
        return
    for e in range(T - 1):
        t = e + 1
        k = sc[e, 0] + sc[e, 1] - logz
        if k < np.log(_EDGE_SCALE):
            k = fexp(k)
            for a in range(R):
                f = ex[e, a] * k
                if f != 0.0:
                    for b in range(R):
                        edge_acc[e, a, b] += f * E[e, a, b] * fw[e, b]
            continue
        _add_log_edges(xl[e], ins[t], thP[e], P[e], c, logz, sc[e, 2], edge_acc[e])


#: a tree's structure and buffers for :func:`~structpred.outputs._chain_kernels.project`
TreeGraph = namedtuple("TreeGraph", ["parents", "ins", "mup", "dn", "xl", "ex", "fw", "sc", "work", "order", "flush"])


@overload(project)
def _project_tree(graph, thU, E, cm, thP, P, c, node, edge_acc, with_edges):
    if isinstance(graph, types.BaseNamedTuple) and graph.instance_class is TreeGraph:
        def impl(graph, thU, E, cm, thP, P, c, node, edge_acc, with_edges):
            g = graph
            _scaled_project(g.parents, thU, E, cm, thP, P, c, node, edge_acc, with_edges, g.ins, g.mup, g.dn, g.xl,
                            g.ex, g.fw, g.sc, g.work, g.order, g.flush)
        return impl


@njit(cache=True)
def spmp(parents, U, P, Lw, kind, eta, n_iter, thU, thP, lnu, mu_node, mu_edge, nu_bar, flush=True):
    """SP-MP (M4N Algorithm 2, App. G.2 on a tree): :func:`~structpred.outputs._chain_kernels.spmp_iterations`
    with the tree's marginal polytope (its scaled projection: sum-product on the tree); ``flush`` as
    the chain's."""
    T, R = U.shape
    Tm = max(T - 1, 1)
    graph = TreeGraph(parents, np.empty((T, R)), np.empty((T, R)), np.empty((T, R)), np.empty((Tm, R)),
                      np.empty((Tm, R)), np.empty((Tm, R)), np.empty((Tm, 3)), np.empty((3, R)),
                      np.empty(R, dtype=np.int64), flush)
    spmp_iterations(graph, U, P, Lw, kind, eta, n_iter, thU, thP, lnu, mu_node, mu_edge, nu_bar, 0.0, np.empty(0))


@njit(cache=True)
def make_feasible(parents, node, edge, nu):
    """In place: an exact point of the marginal polytope and of the product of simplices.

    The averaged SP-MP iterates leave the polytope by round-off (unary rows summing to
    ``1 + 3e-10``, edges inconsistent with their unaries), which scores of size 500 turn into
    bounds off by ``1e-6``.  ``mu`` becomes the marginals of the tree-structured Markov
    distribution with root ``node[0] / sum`` and transitions ``edge[e][a, :] / sum_b edge[e][a,
    b]`` from each parent label ``a`` (exactly consistent, and equal to ``mu`` when ``mu`` is
    consistent); ``nu``'s rows are normalised.
    """
    T, R = node.shape
    for t in range(T):
        s = 0.0
        for j in range(R):
            s += nu[t, j]
        for j in range(R):
            nu[t, j] /= s
    s = 0.0
    for j in range(R):
        s += node[0, j]
    for j in range(R):
        node[0, j] /= s
    for t in range(1, T):
        e = t - 1
        p = parents[t]
        for b in range(R):
            node[t, b] = 0.0
        for a in range(R):
            row = 0.0
            for b in range(R):
                row += edge[e, a, b]
            for b in range(R):
                edge[e, a, b] = node[p, a] * (edge[e, a, b] / row if row > 0 else 1.0 / R)
                node[t, b] += edge[e, a, b]
