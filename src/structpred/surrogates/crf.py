"""CRF log-loss (conditional log-likelihood)."""

from __future__ import annotations

import numpy as np


def crf_loss(space, v, y):
    """``S(v, y) = log Z(v) - <v, phi(y)>``; gradient ``E_{p_v} phi - phi(y)``."""
    v = np.atleast_2d(np.asarray(v, dtype=np.float64))
    y = np.atleast_1d(space.check_labels(y))
    phi_y = space.embed(y)
    val = space.log_partition(v) - np.einsum("ij,ij->i", v, phi_y)
    return np.atleast_1d(val), np.atleast_2d(space.marginals(v)) - phi_y
