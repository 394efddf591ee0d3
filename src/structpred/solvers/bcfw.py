"""Block-coordinate Frank-Wolfe for M3N (Lacoste-Julien et al. 2013, Alg. 4): a step rule."""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError
from structpred.outputs.base import AffineLoss, require
from structpred.solvers.driver import SolverResult, StepRule, run
from structpred.solvers.problem import check_problem
from structpred.surrogates import Hinge


class BCFW(StepRule):
    """Minimise ``(1/n) sum_i max_y' [L(y_i,y') + <v_i, phi(y') - phi(y_i)>] + lam/2 ||W||^2``.

    Dual blocks ``mu_i`` in the marginal polytope, ``W = (1/(lam n)) sum_i Psi_i (phi(y_i) -
    mu_i)`` kept incrementally, exact line search.  Objectives: the primal, the dual
    ``(1/n) sum_i [phi(y_i)^T A mu_i + a] - lam/2 ||W||^2`` and their difference, the exact
    duality gap.  With ``averaging`` the weights and objectives are those of the weighted
    average ``rho_t = 2 / (t + 2)``.
    """

    name = "BCFW"

    def __init__(self, surrogate: Hinge, averaging: bool = False):
        if not isinstance(surrogate, Hinge):
            raise StructpredError(f"BCFW minimises the structured hinge (Hinge), got {surrogate!r}")
        super().__init__(surrogate)
        self.averaging = bool(averaging)

    def init(self, problem) -> None:
        super().init(problem)
        require(problem.space, AffineLoss, "BCFW")
        self.kernels = problem.pass_kernels()
        self.W_avg = np.zeros(problem.fmap.weight_shape) if self.averaging else np.zeros((1, 1))
        self.mu = problem.init_dual()
        # ell = (1/n) sum_i L(y_i, mu_i) (affine loss incl. its constant); mu_i = phi(y_i) here
        self.ell = np.array([float(np.mean(problem.space.loss(problem.y, problem.y)))])
        self.ell_avg = self.ell.copy()
        self.t = 0

    def epoch(self, order) -> None:
        self.t = self.kernels.bcfw_pass(self.W, self.mu, self.problem.lam, order, self.t, self.averaging,
                                        self.W_avg, self.ell, self.ell_avg)
        self.oracle_calls += len(order)

    def weights(self):
        return self.W_avg if self.averaging else self.W

    def objectives(self) -> dict:
        pb = self.problem
        W, ell = (self.W_avg, self.ell_avg[0]) if self.averaging else (self.W, self.ell[0])
        primal, dual = pb.primal(self.surrogate, W), float(ell) - pb.regulariser(W)
        return {"primal": primal, "dual": dual, "gap": primal - dual}

    def result(self, history) -> SolverResult:
        W = self.W_avg.copy() if self.averaging else self.W
        return SolverResult(W, self.mu, history, {"W_last": self.W, "steps": self.t})


def bcfw(surrogate: Hinge, X, y, lam, n_passes=50, averaging=False, random_state=None, X_val=None, y_val=None,
         tol=None, time_budget=None, verbose=False, eval_every=1) -> SolverResult:
    """:class:`BCFW` on ``(X, y)`` through the driver (:func:`structpred.solvers.driver.run`)."""
    rule = BCFW(surrogate, averaging)
    problem = check_problem(surrogate.space, X, y, lam)
    return run(rule, problem, n_passes=n_passes, random_state=random_state,
               eval_every=eval_every, tol=tol, time_budget=time_budget, X_val=X_val, y_val=y_val, verbose=verbose)
