"""scikit-learn style estimators for linear structured models on given features."""

from structpred.estimators.linear import CRF, M3N, M4N

__all__ = ["CRF", "M3N", "M4N"]
