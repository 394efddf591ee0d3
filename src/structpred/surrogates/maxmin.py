"""Max-min surrogate of M4N (eq. 10) and of AGM (the adversarial game value)."""

from __future__ import annotations

import numpy as np

from structpred.outputs.base import rowdot, rowsub
from structpred.surrogates.crf import _batch


def maxmin_loss(space, v, y, n_iter: int = 1000, warm=None, bound: str = "lower"):
    """``S(v, y) = max_mu min_y' phi(y')^T A mu + a + v^T (mu - phi(y))`` (M4N eq. 10).

    The inner max-min is solved by SP-MP with ``n_iter`` iterations; ``bound`` selects
    the certified lower bound (value of the averaged ``mu``) or the upper bound; the
    two differ by the oracle gap.  Gradient (Danskin): ``mu* - phi(y)``.
    """
    v, y = _batch(space, v, y)
    res = space.max_min(v, warm=warm, n_iter=n_iter)
    phi_y = space.embed(y)
    base = res.value if bound == "lower" else res.upper
    val = np.atleast_1d(base) + space.loss_offset - rowdot(v, phi_y)
    mu = res.mu if isinstance(res.mu, list) else np.atleast_2d(res.mu)
    return val, rowsub(mu, phi_y)
