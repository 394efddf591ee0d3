"""CRF log-loss (conditional log-likelihood)."""

from __future__ import annotations

import numpy as np

from structpred.outputs.base import AffineLoss, Marginals
from structpred.outputs.batch import rowdot, rowsub
from structpred.surrogates.base import Surrogate


class LogLoss(Surrogate):
    """``S(v, y) = log Z(v) - <v, phi(y)>``; gradient ``E_{p_v} phi - phi(y)``.  Predictions
    by Bayes decoding with the task loss: ``argmin_y' sum_y p_v(y) L(y, y')``."""

    requires = (Marginals, AffineLoss)

    def value_grad(self, v, y):
        v, y = self.batch(v, y)
        sp = self.space
        phi_y = sp.embed(y)
        return np.atleast_1d(sp.log_partition(v)) - rowdot(v, phi_y), rowsub(sp.marginals(v), phi_y)

    def sample_grad(self, i, v, y):
        return self.space.marginals(v) - self.space.embed(y)

    def predict(self, V):
        return self.space.bayes_decode(self.space.marginals(V))
