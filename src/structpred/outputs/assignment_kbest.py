"""The ``K`` best assignments of a square score matrix: Murty's partition algorithm.

``max_{y in S_M} sum_j S[j, y_j]``, then the 2nd, ..., ``K``-th best permutation (Murty 1968,
"An algorithm for ranking all the assignments in order of increasing cost", Oper. Res. 16(3)).
Each node of the search is the set of permutations with some pairs ``(j, y_j)`` forced and some
forbidden; its best member is one linear assignment (the Hungarian algorithm, scipy) on ``S``
with the forbidden entries at ``-inf``.  Popping the best node and splitting it on its best
permutation ``y`` (rows ``j_1, ..., j_r`` not forced, in order) gives ``r`` disjoint children,
the ``i``-th forcing ``(j_1, y_{j_1}), ..., (j_{i-1}, y_{j_{i-1}})`` and forbidding ``(j_i,
y_{j_i})``: together with ``{y}`` they partition the node, so the ``k``-th popped permutation is
the ``k``-th best overall (``K M`` assignments of size at most ``M``).
"""

from __future__ import annotations

import heapq

import numpy as np
from scipy.optimize import linear_sum_assignment


def _best(S: np.ndarray, forced: dict, forbidden: frozenset):
    """The best permutation with the ``forced`` pairs ``{row: col}`` and none of ``forbidden``:
    ``(score, y)``, or ``None`` when there is none."""
    M = S.shape[0]
    rows = [j for j in range(M) if j not in forced]
    taken = set(forced.values())
    cols = [r for r in range(M) if r not in taken]
    y = np.empty(M, dtype=np.int64)
    for j, r in forced.items():
        y[j] = r
    if rows:
        sub = S[np.ix_(rows, cols)].copy()
        for a, j in enumerate(rows):
            for b, r in enumerate(cols):
                if (j, r) in forbidden:
                    sub[a, b] = -np.inf
        try:
            ri, ci = linear_sum_assignment(sub, maximize=True)
        except ValueError:      # every completion uses a forbidden pair
            return None
        if not np.all(np.isfinite(sub[ri, ci])):
            return None
        for a, b in zip(ri, ci):
            y[rows[a]] = cols[b]
    return float(S[np.arange(M), y].sum()), y


def k_best_assignments(S, K: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``min(K, M!)`` permutations of largest ``sum_j S[j, y_j]`` in decreasing order:
    ``(Y (K', M) int64 with Y[k, j] = column of row j, scores (K',))``; among equal scores, the
    order in which Murty's search finds them."""
    S = np.asarray(S, dtype=np.float64)
    M = S.shape[0]
    heap, count = [], 0
    first = _best(S, {}, frozenset())
    heap.append((-first[0], count, first[1], {}, frozenset()))
    Y, scores = [], []
    while heap and len(Y) < K:
        neg, _, y, forced, forbidden = heapq.heappop(heap)
        Y.append(y)
        scores.append(-neg)
        free = [j for j in range(M) if j not in forced]
        child_forced = dict(forced)
        for j in free[:-1]:         # the last free row is fixed by the others
            found = _best(S, child_forced, forbidden | {(j, int(y[j]))})
            if found is not None:
                count += 1
                heapq.heappush(heap, (-found[0], count, found[1], dict(child_forced),
                                      forbidden | {(j, int(y[j]))}))
            child_forced[j] = int(y[j])
    return np.array(Y, dtype=np.int64).reshape(len(Y), M), np.array(scores)
