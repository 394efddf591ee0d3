"""Exact line search of GBCFW on the M4N dual: a concave piecewise-quadratic function on [0, 1].

Along the segment ``mu_i + g d`` (``d = s_i - mu_i``, ``s_i`` the max-min oracle's answer) the
M4N dual (M4N (D)) is, up to a constant and the factor ``1/n``,

    phi(g) = sum_b min_{l in block b} (p_l + g q_l) + g g0 - g^2 curv / 2,

with ``(p, q)`` the space's min-loss lines (:class:`structpred.outputs.MinLossLines`),
``g0 = <v_i, d>`` and ``curv = ||Psi_i d||^2 / (lam n)``.  ``phi`` is concave, so its maximiser
over ``[0, 1]`` is where its right derivative turns non-positive; :func:`envelope_step` walks the
lower envelopes from ``g = 0`` breakpoint by breakpoint and stops on the first piece whose
quadratic peaks before its end (a finite walk: each breakpoint lowers one block's slope).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def envelope_step(p, q, starts, g0, curv):
    """``argmax_{0 <= g <= 1} sum_b min_{starts[b] <= l < starts[b+1]} (p_l + g q_l) + g g0 - g^2 curv / 2``
    (``curv >= 0``); ``0`` when the right derivative at ``0`` is not positive."""
    nb = starts.shape[0] - 1
    act = np.empty(nb, dtype=np.int64)
    slope = g0
    for b in range(nb):           # each block's line at 0+: least value, ties by least slope
        a = starts[b]
        for l in range(starts[b] + 1, starts[b + 1]):
            if p[l] < p[a] or (p[l] == p[a] and q[l] < q[a]):
                a = l
        act[b] = a
        slope += q[a]
    g = 0.0
    while True:
        # right derivative at g on the current pieces: slope - g curv
        if slope - g * curv <= 0.0:
            return g
        peak = slope / curv if curv > 0.0 else np.inf
        end = min(peak, 1.0)
        # the next breakpoint: the first line of a lesser slope to cross its block's active line
        nxt = np.inf
        nb_at = -1
        nl = -1
        for b in range(nb):
            a = act[b]
            for l in range(starts[b], starts[b + 1]):
                if q[l] < q[a]:
                    x = (p[l] - p[a]) / (q[a] - q[l])
                    if x < nxt or (x == nxt and q[l] < q[nl]):
                        nxt = x
                        nb_at = b
                        nl = l
        if nxt >= end:
            return end
        g = max(g, nxt)           # a crossing rounded below g is taken at g
        slope += q[nl] - q[act[nb_at]]
        act[nb_at] = nl
