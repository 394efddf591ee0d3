"""Solvers: step rules on one pass driver (:mod:`structpred.solvers.driver`).

Each ``<method>(surrogate, X, y, lam, ...)`` function builds the problem and runs its rule.
"""

from structpred.solvers.adagrad import AdaGrad, adagrad
from structpred.solvers.bcfw import BCFW, bcfw
from structpred.solvers.driver import SolverResult, StepRule, run
from structpred.solvers.dual_qp import DualQP, dual_qp
from structpred.solvers.gbcfw import GBCFW, gbcfw
from structpred.solvers.problem import Problem, check_problem, primal_objective
from structpred.solvers.sdca import SDCA, sdca
from structpred.solvers.sgd import SGD, sgd
from structpred.solvers.svrg import SVRG, CasimirSVRG, casimir_svrg, svrg

__all__ = ["BCFW", "GBCFW", "SDCA", "SGD", "SVRG", "AdaGrad", "CasimirSVRG", "DualQP", "Problem", "SolverResult",
           "StepRule", "adagrad", "bcfw", "casimir_svrg", "check_problem", "dual_qp", "gbcfw", "primal_objective",
           "run", "sdca", "sgd", "svrg"]
