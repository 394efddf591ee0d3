"""Generalized BCFW for M4N (M4N Algorithm 1) with the SP-MP max-min oracle (Algorithm 2): a step rule."""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError
from structpred.outputs.base import MinLossLines, require
from structpred.solvers.driver import GapSampling, SolverResult, StepRule, run
from structpred.solvers.problem import check_problem
from structpred.surrogates import MaxMinMargin


#: the step sizes of :class:`GBCFW`
STEPS = ("fixed", "line_search")


class GBCFW(GapSampling, StepRule):
    """Minimise ``(1/n) sum_i S_maxmin(v_i, y_i) + lam/2 ||W||^2`` (M4N eq. 3, 10).

    Each step calls the surrogate's SP-MP oracle on the next sample (warm started from its
    state, see :class:`MaxMinMargin`) and moves the dual block with step ``2n / (t + 2n)``
    (``step="fixed"``, the paper's) or with the step that maximises the dual on the segment
    (``step="line_search"``: :func:`structpred.solvers.line_search.envelope_step`, for spaces
    with min-loss lines; the dual then never decreases).  ``sampling``, ``gap_refresh``:
    :class:`GapSampling` on each block's Frank-Wolfe gap at its last visit, ``(value(s_i) -
    h(mu_i) - <v_i, mu_i>) / n`` with ``h`` the dual's min-loss term (a lower bound of the true
    block gap where the oracle is inexact).  With ``averaging`` the weights are the weighted
    average ``rho_t = 2 / (t + 2)`` of the iterates (the M4N authors' runs, ``gbcfw.py``'s
    ``do_averaging``): the primal objectives are the average's, the dual stays the current blocks',
    so ``gap`` still bounds the average's primal suboptimality.

    Objectives: ``primal`` (with the SP-MP upper bound of each max-min value, ``n_iter_eval``
    iterations from copies of the warm states), ``primal_lower`` (the lower bound), ``dual``
    ``(1/n) sum_i min_y' phi(y')^T A mu_i + a - lam/2 ||W||^2`` (exact, M4N (D)),
    ``gap = primal - dual`` (a certified upper bound on the duality gap) and ``oracle_gap``,
    the mean SP-MP gap of the pass's oracle calls (M4N Table 2's "average oracle error").
    """

    name = "GBCFW"

    def __init__(self, surrogate: MaxMinMargin, step: str = "fixed", sampling: str = "permutation",
                 gap_refresh: int = 2, averaging: bool = False):
        if not isinstance(surrogate, MaxMinMargin):
            raise StructpredError(f"GBCFW minimises the max-min margin surrogate (MaxMinMargin), got {surrogate!r}")
        if step not in STEPS:
            raise StructpredError(f"step must be one of {STEPS}, got {step!r}")
        self.set_sampling(sampling, gap_refresh)
        super().__init__(surrogate)
        self.step = step
        self.averaging = bool(averaging)

    def init(self, problem) -> None:
        super().init(problem)
        if self.step == "line_search":
            require(problem.space, MinLossLines, "GBCFW's line search")
        self.kernels = problem.pass_kernels(self.surrogate)
        self.mu = problem.init_dual()
        self.surrogate.init_state(problem.n)
        self.W_avg = np.zeros(problem.fmap.weight_shape) if self.averaging else None
        self.t = 0
        self.init_gaps(problem.n)

    def epoch(self, order) -> None:
        self.t = self.kernels.gbcfw_pass(self.W, self.mu, order, self.t, self.surrogate, self.step == "line_search",
                                         self.gaps, self.W_avg)
        self.oracle_calls += len(order)
        self.passes += 1

    def weights(self) -> np.ndarray:
        return self.W_avg if self.averaging else self.W

    def objectives(self) -> dict:
        return maxmin_objectives(self.problem, self.surrogate, self.weights(), self.mu, self.W)

    def result(self, history) -> SolverResult:
        sur = self.surrogate
        return SolverResult(self.weights(), self.mu, history,
                            {"LMU": sur.LMU, "LNU": sur.LNU, "oracle_gaps": sur.gaps, "steps": self.t})


def maxmin_objectives(problem, surrogate: MaxMinMargin, W, mu, W_mu=None) -> dict:
    """The max-min surrogate's objectives at weights ``W`` and dual blocks ``mu`` (whose weights
    ``W(mu)`` are ``W_mu``, default ``W``: they differ for an averaged iterate ``W``): the
    primal's upper and lower bounds at ``W``, the dual at ``mu``, their difference (a certified
    bound on ``W``'s primal suboptimality: any dual value is a lower bound) and the mean oracle
    gap of the last pass (see :class:`GBCFW`)."""
    lower, upper, _ = surrogate.bounds(problem.fmap.scores(W), problem.y)
    reg = problem.regulariser(W)
    up, lo = float(np.mean(upper)) + reg, float(np.mean(lower)) + reg
    dual = (float(np.mean(problem.space.min_loss(mu))) + float(problem.space.loss_offset)
            - problem.regulariser(W if W_mu is None else W_mu))
    return {"primal": up, "primal_lower": lo, "dual": dual, "gap": up - dual, "oracle_gap": float(surrogate.gaps.mean())}


def gbcfw(surrogate: MaxMinMargin, X, y, lam, n_passes=50, random_state=None, X_val=None, y_val=None,
          tol=None, time_budget=None, verbose=False, eval_every=1, step="fixed", sampling="permutation") -> SolverResult:
    """:class:`GBCFW` on ``(X, y)`` through the driver; the oracle's settings (iterations, warm
    start and its mix, evaluation iterations) are the surrogate's."""
    rule = GBCFW(surrogate, step=step, sampling=sampling)
    problem = check_problem(surrogate.space, X, y, lam)
    return run(rule, problem, n_passes=n_passes, random_state=random_state, eval_every=eval_every,
               tol=tol, time_budget=time_budget, X_val=X_val, y_val=y_val, verbose=verbose)
