"""Solvers: step rules on one pass driver (:mod:`structpred.solvers.driver`).

Each ``<method>(surrogate, X, y, lam, ...)`` function builds the problem and runs its rule.
"""

from structpred.solvers.adagrad import AdaGrad, adagrad
from structpred.solvers.bcfw import BCFW, bcfw
from structpred.solvers.driver import SolverResult, StepRule, run
from structpred.solvers.gbcfw import GBCFW, gbcfw
from structpred.solvers.problem import Problem, check_problem, primal_objective
from structpred.solvers.sdca import SDCA, sdca

__all__ = ["BCFW", "GBCFW", "SDCA", "AdaGrad", "Problem", "SolverResult", "StepRule", "adagrad", "bcfw",
           "check_problem", "gbcfw", "primal_objective", "run", "sdca"]
