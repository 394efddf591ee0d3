"""Feature maps: input transformers (scikit-learn style) and joint feature maps."""

from structpred.features.nystrom import NystromGaussian
from structpred.features.sequences import Sequences

__all__ = ["NystromGaussian", "Sequences"]
