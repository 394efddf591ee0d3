"""Structured hinge loss (M3N / SSVM, M4N eq. 9 / 12)."""

from __future__ import annotations

import numpy as np

from structpred.outputs.base import LossAugmented
from structpred.outputs.batch import rowdot, rowsub
from structpred.surrogates.base import Surrogate


class Hinge(Surrogate):
    """``S(v, y) = max_y' L(y, y') + <v, phi(y') - phi(y)>``; gradient ``phi(y*) - phi(y)``."""

    requires = (LossAugmented,)

    def value_grad(self, v, y):
        v, y = self.batch(v, y)
        sp = self.space
        ys = sp.loss_augmented(v, y)
        grad = rowsub(sp.embed(ys), sp.embed(y))
        return np.atleast_1d(sp.loss(y, ys)) + rowdot(v, grad), grad

    def sample_grad(self, i, v, y):
        sp = self.space
        return sp.embed(sp.loss_augmented(v, y)) - sp.embed(y)

    def pass_oracle(self):
        return ("loss_augmented", ())
