"""Dual block solvers (generic drivers; per-space numba pass kernels, see ``registry``)."""

from structpred.solvers._common import SolverResult
from structpred.solvers.adagrad import adagrad
from structpred.solvers.bcfw import bcfw, m3n_objectives
from structpred.solvers.gbcfw import gbcfw, m4n_objectives
from structpred.solvers.sdca import crf_objectives, sdca

__all__ = ["SolverResult", "adagrad", "bcfw", "crf_objectives", "gbcfw", "m3n_objectives", "m4n_objectives", "sdca"]
