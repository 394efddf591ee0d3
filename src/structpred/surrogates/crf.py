"""CRF log-loss (conditional log-likelihood)."""

from __future__ import annotations

import numpy as np

from structpred.outputs.base import rowdot, rowsub


def _batch(space, v, y):
    if isinstance(v, list):
        return v, space.check_labels(list(y))
    return np.atleast_2d(np.asarray(v, dtype=np.float64)), np.atleast_1d(space.check_labels(y))


def crf_loss(space, v, y):
    """``S(v, y) = log Z(v) - <v, phi(y)>``; gradient ``E_{p_v} phi - phi(y)``.

    ``v``: ``(n, k)`` scores (or a list of score vectors for chains); returns ``(values (n,),
    gradients)`` in the same layout."""
    v, y = _batch(space, v, y)
    phi_y = space.embed(y)
    val = np.atleast_1d(space.log_partition(v)) - rowdot(v, phi_y)
    return val, rowsub(space.marginals(v), phi_y)
