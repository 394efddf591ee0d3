"""SDCA for the CRF / multinomial logistic loss (Shalev-Shwartz & Zhang 2013): a step rule."""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError
from structpred.solvers.driver import SolverResult, StepRule, run
from structpred.solvers.problem import check_problem
from structpred.surrogates import LogLoss


class SDCA(StepRule):
    """Minimise ``(1/n) sum_i [log Z(v_i) - v_i . phi(y_i)] + lam/2 ||W||^2``.

    Dual ``(1/n) sum_i H(mu_i) - lam/2 ||W(mu)||^2`` with ``W(mu) = (1/(lam n)) sum_i
    Psi_i (phi(y_i) - mu_i)``; each block is maximised exactly on the simplex (a space's compiled
    kernels) or along the segment towards the current marginals (Le Priol et al. 2018, the
    generic loop).  Objectives: primal, dual, exact gap.
    """

    name = "SDCA"

    def __init__(self, surrogate: LogLoss):
        if not isinstance(surrogate, LogLoss):
            raise StructpredError(f"SDCA minimises the CRF log-loss (LogLoss), got {surrogate!r}")
        super().__init__(surrogate)

    def init(self, problem) -> None:
        super().init(problem)
        self.kernels = problem.pass_kernels()
        self.mu = problem.init_dual()

    def epoch(self, order) -> None:
        self.kernels.sdca_pass(self.W, self.mu, order)
        self.oracle_calls += len(order)

    def objectives(self) -> dict:
        pb = self.problem
        primal = pb.primal(self.surrogate, self.W)
        dual = float(np.mean(pb.space.entropy(self.mu))) - pb.regulariser(self.W)
        return {"primal": primal, "dual": dual, "gap": primal - dual}

    def result(self, history) -> SolverResult:
        return SolverResult(self.W, self.mu, history, {})


def sdca(surrogate: LogLoss, X, y, lam, n_passes=50, random_state=None, X_val=None, y_val=None,
         tol=None, time_budget=None, verbose=False, eval_every=1) -> SolverResult:
    """:class:`SDCA` on ``(X, y)`` through the driver."""
    rule = SDCA(surrogate)
    problem = check_problem(surrogate.space, X, y, lam)
    return run(rule, problem, n_passes=n_passes, random_state=random_state, eval_every=eval_every,
               tol=tol, time_budget=time_budget, X_val=X_val, y_val=y_val, verbose=verbose)
