"""Surrogate losses built from output-space oracles: value and gradient w.r.t. the score.

Each function takes an output space, scores ``v`` of shape ``(n, k)`` and outputs ``y``
and returns ``(values (n,), gradients (n, k))``.
"""

from structpred.surrogates.crf import crf_loss
from structpred.surrogates.hinge import hinge_loss
from structpred.surrogates.maxmin import maxmin_loss

__all__ = ["crf_loss", "hinge_loss", "maxmin_loss"]
