"""Output spaces: an embedding plus a few oracles (DESIGN.md, M4N §2.2)."""

from structpred.outputs.base import MaxMinResult, OutputSpace
from structpred.outputs.multiclass import Multiclass

__all__ = ["MaxMinResult", "Multiclass", "OutputSpace"]
