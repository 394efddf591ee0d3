"""AdaGrad stochastic subgradient on the primal (AGM's optimiser, Fathony et al. 2018 §3.3): a step rule."""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError
from structpred.solvers import _dense
from structpred.solvers.driver import SolverResult, StepRule, run
from structpred.solvers.problem import check_problem
from structpred.surrogates import Surrogate


class AdaGrad(StepRule):
    """Minimise ``(1/n) sum_i S(v_i, y_i) + lam/2 ||W||^2`` for any surrogate ``S``.

    Step ``W <- W - step * g / sqrt(sum of past g^2)`` (per coordinate, Duchi et al. 2011)
    with ``g = Psi_i dS/dv_i + lam W`` of one sample (the surrogate's ``sample_grad``,
    which keeps its per-sample state, e.g. the max-min oracle's warm starts).
    Objective: ``primal`` (the surrogate's value, the certified upper bound for max-min).
    ``coef_init``: every weight's starting value (the AGM reference starts at -0.5); ``lam``
    may be 0.  The dense part of a step (``lam W`` touches every weight) runs on numba's threads
    (``numba.set_num_threads``) from :data:`~structpred.solvers._dense.THREADS_FROM` weights on,
    with the same bits.
    """

    name = "AdaGrad"
    zero_lam = True

    def __init__(self, surrogate: Surrogate, step: float = 0.1, coef_init: float = 0.0):
        if not isinstance(surrogate, Surrogate):
            raise StructpredError(f"AdaGrad needs a surrogate (structpred.surrogates), got {surrogate!r}")
        super().__init__(surrogate)
        if not float(step) > 0:
            raise StructpredError(f"step must be positive, got {step}")
        self.step_size = float(step)
        self.coef_init = float(coef_init)
        if not np.isfinite(self.coef_init):
            raise StructpredError(f"coef_init must be a finite number, got {coef_init}")

    #: ``G``, the step's gradient buffer, is scratch (``start_epoch`` sets it to ``lam W``); ``update``
    #: the dense update's kernel
    unsaved = StepRule.unsaved + ("G", "update")

    def init(self, problem) -> None:
        super().init(problem)
        self.W[...] = self.coef_init
        self.S = np.zeros(problem.fmap.weight_shape)
        self.G = np.empty(problem.fmap.weight_shape)
        self.update = _dense.adagrad_update_for(self.W.size)   # threaded at hashed sizes
        self.surrogate.init_state(problem.n)

    def start_epoch(self, epoch: int) -> None:
        _dense.scaled(self.G, self.W, self.problem.lam)   # G = lam W; each step leaves it so for the next

    def step(self, i: int) -> None:
        # the dense work (lam W touches every coordinate) is one compiled pass a step, which also
        # writes the next step's lam W: numpy's eight temporaries took 2.7x the time of the two
        # passes this replaced, and those 1.3-1.7x this one's, at 2^20 weights; the same bits
        pb = self.problem
        pb.fmap.add(i, self.G, self.surrogate.sample_grad(i, pb.fmap.score(i, self.W), pb.y[i]))
        self.update(self.W, self.S, self.G, self.step_size, pb.lam)
        self.oracle_calls += 1

    def objectives(self) -> dict:
        return {"primal": self.problem.primal(self.surrogate, self.W)}

    def result(self, history) -> SolverResult:
        return SolverResult(self.W, None, history, {key: getattr(self.surrogate, key, None)
                                                    for key in ("LMU", "LNU", "multipliers")})


def adagrad(surrogate: Surrogate, X, y, lam, n_passes=50, step=0.1, random_state=None, X_val=None, y_val=None,
            eval_every=1, time_budget=None, verbose=False, coef_init=0.0) -> SolverResult:
    """:class:`AdaGrad` on ``(X, y)`` through the driver."""
    rule = AdaGrad(surrogate, step, coef_init)
    problem = check_problem(surrogate.space, X, y, lam, zero_lam=True)
    return run(rule, problem, n_passes=n_passes, random_state=random_state,
               eval_every=eval_every, time_budget=time_budget, X_val=X_val, y_val=y_val, verbose=verbose)
