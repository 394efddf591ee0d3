"""Structured hinge loss (M3N / SSVM, M4N eq. 9 / 12)."""

from __future__ import annotations

import numpy as np


def hinge_loss(space, v, y):
    """``S(v, y) = max_y' L(y, y') + <v, phi(y') - phi(y)>``; gradient ``phi(y*) - phi(y)``."""
    v = np.atleast_2d(np.asarray(v, dtype=np.float64))
    y = np.atleast_1d(space.check_labels(y))
    ys = space.loss_augmented(v, y)
    phi_s = space.embed(ys)
    phi_y = space.embed(y)
    val = space.loss(y, ys) + np.einsum("ij,ij->i", v, phi_s - phi_y)
    return val, phi_s - phi_y
