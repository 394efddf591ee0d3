"""scikit-learn style estimators for linear structured models on given features."""

from structpred.estimators.linear import AGM, CRF, M3N, M4N
from structpred.estimators.qs import QS, QSCV
from structpred.estimators.smooth import SmoothSSVM

__all__ = ["AGM", "CRF", "M3N", "M4N", "QS", "QSCV", "SmoothSSVM"]
