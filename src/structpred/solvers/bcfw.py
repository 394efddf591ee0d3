"""Block-coordinate Frank-Wolfe for M3N (Lacoste-Julien et al. 2013, Alg. 4), with the pairwise
steps and gap sampling of Osokin et al. (2016, "Minding the gaps"): a step rule."""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError, check_positive_int
from structpred.outputs.base import AffineLoss, require
from structpred.solvers.driver import GapSampling, SolverResult, StepRule, run
from structpred.solvers.problem import check_problem
from structpred.surrogates import Hinge

#: the step kinds of :class:`BCFW`
STEPS = ("frank-wolfe", "pairwise")
#: the step sizes of its Frank-Wolfe steps
STEP_SIZES = ("line_search", "fixed")


class BCFW(GapSampling, StepRule):
    """Minimise ``(1/n) sum_i max_y' [L(y_i,y') + <v_i, phi(y') - phi(y_i)>] + lam/2 ||W||^2``.

    Dual blocks ``mu_i`` in the marginal polytope, ``W = (1/(lam n)) sum_i Psi_i (phi(y_i) -
    mu_i)`` kept incrementally, exact line search (``step="line_search"``) or the fixed step
    ``2n / (t + 2n)`` of step ``t`` (``step="fixed"``, Alg. 3; the M4N authors' runs).  Objectives: the primal, the dual
    ``(1/n) sum_i [phi(y_i)^T A mu_i + a] - lam/2 ||W||^2`` and their difference, the exact
    duality gap.  With ``averaging`` the weights and objectives are those of the weighted
    average ``rho_t = 2 / (t + 2)``.

    ``steps="pairwise"``: each visit moves mass from the block's away corner to its
    Frank-Wolfe corner, up to ``block_steps`` times on the cached answers (the space's
    ``bcfw_pairwise_pass``).  ``sampling``, ``gap_refresh``: :class:`GapSampling` on the
    blocks' gaps at their last visit.
    """

    name = "BCFW"

    def __init__(self, surrogate: Hinge, averaging: bool = False, *, steps: str = "frank-wolfe",
                 sampling: str = "permutation", block_steps: int = 1, gap_refresh: int = 2,
                 step: str = "line_search"):
        if not isinstance(surrogate, Hinge):
            raise StructpredError(f"BCFW minimises the structured hinge (Hinge), got {surrogate!r}")
        if steps not in STEPS:
            raise StructpredError(f"steps must be one of {STEPS}, got {steps!r}")
        self.set_sampling(sampling, gap_refresh)
        block_steps = check_positive_int(block_steps, "block_steps")
        if block_steps > 1 and steps != "pairwise":
            raise StructpredError("block_steps > 1 needs steps='pairwise' (a Frank-Wolfe visit takes one step)")
        if step not in STEP_SIZES:
            raise StructpredError(f"step must be one of {STEP_SIZES}, got {step!r}")
        if step == "fixed" and steps == "pairwise":
            raise StructpredError("step='fixed' needs steps='frank-wolfe' (a pairwise step is its segment's maximiser)")
        super().__init__(surrogate)
        self.step = step
        self.averaging = bool(averaging)
        self.steps = steps
        self.block_steps = block_steps

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
        self.init_gaps(problem.n)

    def epoch(self, order) -> None:
        args = (self.W, self.mu, order, self.t, self.averaging, self.W_avg, self.ell, self.ell_avg, self.gaps)
        if self.steps == "pairwise":
            self.t = self.kernels.bcfw_pairwise_pass(*args, self.block_steps)
        else:
            self.t = self.kernels.bcfw_pass(*args, self.step == "fixed")
        self.oracle_calls += len(order)
        self.passes += 1

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
         tol=None, time_budget=None, verbose=False, eval_every=1, rtol=None, **options) -> SolverResult:
    """:class:`BCFW` on ``(X, y)`` through the driver (:func:`structpred.solvers.driver.run`);
    ``options``: the rule's ``steps``, ``sampling``, ``block_steps``, ``gap_refresh``."""
    rule = BCFW(surrogate, averaging, **options)
    problem = check_problem(surrogate.space, X, y, lam)
    return run(rule, problem, n_passes=n_passes, random_state=random_state, eval_every=eval_every, tol=tol,
               rtol=rtol, time_budget=time_budget, X_val=X_val, y_val=y_val, verbose=verbose)
