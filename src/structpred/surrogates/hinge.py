"""Structured hinge loss (M3N / SSVM, M4N eq. 9 / 12)."""

from __future__ import annotations

import numpy as np

from structpred.outputs.base import rowdot, rowsub
from structpred.surrogates.crf import _batch


def hinge_loss(space, v, y):
    """``S(v, y) = max_y' L(y, y') + <v, phi(y') - phi(y)>``; gradient ``phi(y*) - phi(y)``."""
    v, y = _batch(space, v, y)
    ys = space.loss_augmented(v, y)
    grad = rowsub(space.embed(ys), space.embed(y))
    val = np.atleast_1d(space.loss(y, ys)) + rowdot(v, grad)
    return val, grad
