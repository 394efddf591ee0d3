"""Max-min surrogate of M4N (eq. 10)."""

from __future__ import annotations

import numpy as np


def maxmin_loss(space, v, y, n_iter: int = 1000, warm=None, bound: str = "lower"):
    """``S(v, y) = max_mu min_y' phi(y')^T A mu + a + v^T (mu - phi(y))`` (M4N eq. 10).

    The inner max-min is solved by SP-MP with ``n_iter`` iterations; ``bound`` selects
    the certified lower bound (value of the averaged ``mu``) or the upper bound; the
    two differ by the oracle gap.  Gradient (Danskin): ``mu* - phi(y)``.
    """
    v = np.atleast_2d(np.asarray(v, dtype=np.float64))
    y = np.atleast_1d(space.check_labels(y))
    res = space.max_min(v, warm=warm, n_iter=n_iter)
    phi_y = space.embed(y)
    base = res.value if bound == "lower" else res.upper
    val = np.atleast_1d(base) + space.loss_offset - np.einsum("ij,ij->i", v, np.atleast_2d(phi_y))
    return val, np.atleast_2d(res.mu) - phi_y
