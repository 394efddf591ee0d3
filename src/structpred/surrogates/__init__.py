"""Surrogate losses built from output-space oracles: objects with value, gradient and state
(:class:`structpred.surrogates.base.Surrogate`)."""

from structpred.surrogates.base import Surrogate
from structpred.surrogates.crf import LogLoss
from structpred.surrogates.hinge import Hinge
from structpred.surrogates.maxmin import MaxMinMargin
from structpred.surrogates.smoothed import EntropySmoothedHinge, TopKSmoothedHinge

__all__ = ["EntropySmoothedHinge", "Hinge", "LogLoss", "MaxMinMargin", "Surrogate", "TopKSmoothedHinge"]
