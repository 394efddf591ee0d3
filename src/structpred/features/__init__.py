"""Feature maps (scikit-learn transformers)."""

from structpred.features.nystrom import NystromGaussian

__all__ = ["NystromGaussian"]
