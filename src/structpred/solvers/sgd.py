"""Stochastic subgradient descent on the primal with a decaying step and weighted averaging
(Casimir §7's SGD baseline): a step rule."""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError, check_positive
from structpred.solvers import _dense
from structpred.solvers.driver import SolverResult, StepRule, run
from structpred.solvers.problem import check_problem
from structpred.surrogates import Surrogate


def reported(surrogate):
    """The surrogate whose objective a primal method reports: the non-smooth hinge for a
    smoothed one (``surrogate.target``), else the surrogate itself."""
    return getattr(surrogate, "target", surrogate)


class SGD(StepRule):
    """Minimise ``F(W) = (1/n) sum_i S(v_i, y_i) + lam/2 ||W||^2`` by
    ``W <- W - eta_t (Psi_i dS/dv_i + lam W)``, ``eta_t = eta0 / (1 + t / t0)`` (``t`` counts
    steps from 0); reports the weighted average ``W_bar_T = 2 / (T (T + 1)) sum_t t W_t``
    (``averaging=False``: the last iterate).  Objective: ``primal`` of the (non-smooth) target.
    A pass runs in the space's compiled loops when they have the surrogate's oracle
    (``Problem.primal_kernels``), else one :meth:`step` per sample.
    """

    name = "SGD"

    def __init__(self, surrogate: Surrogate, eta0: float = 0.02, t0: float = 150000.0,
                 averaging: bool = True, sampling: str = "uniform"):
        if not isinstance(surrogate, Surrogate):
            raise StructpredError(f"SGD needs a surrogate (structpred.surrogates), got {surrogate!r}")
        super().__init__(surrogate)
        self.eta0 = check_positive(eta0, "eta0")
        self.t0 = check_positive(t0, "t0")
        self.averaging = bool(averaging)
        if sampling not in ("uniform", "permutation"):
            raise StructpredError(f"sampling must be 'uniform' or 'permutation', got {sampling!r}")
        self.sampling = sampling

    def init(self, problem) -> None:
        super().init(problem)
        self.W_avg = np.zeros_like(self.W)
        self.t = 0
        self.surrogate.init_state(problem.n)
        self.kernels = problem.primal_kernels(self.surrogate)

    def epoch(self, order) -> None:
        if self.kernels is None:
            super().epoch(order)
            return
        self.t = self.kernels.sgd_pass(self.W, self.W_avg, order, self.t, self.eta0, self.t0,
                                       self.surrogate.pass_oracle())
        self.oracle_calls += len(order)

    def step(self, i: int) -> None:
        pb = self.problem
        g = self.surrogate.sample_grad(i, pb.fmap.score(i, self.W), pb.y[i])
        eta = self.eta0 / (1.0 + self.t / self.t0)
        _dense.scale(self.W, 1.0 - eta * pb.lam)
        pb.fmap.add(i, self.W, -eta * np.asarray(g))
        _dense.mix(self.W_avg, self.t / (self.t + 2.0), self.W, 2.0 / (self.t + 2.0))
        self.t += 1
        self.oracle_calls += 1

    def weights(self) -> np.ndarray:
        return self.W_avg if self.averaging else self.W

    def objectives(self) -> dict:
        return {"primal": self.problem.primal(reported(self.surrogate), self.weights())}


def sgd(surrogate: Surrogate, X, y, lam, n_passes=100, eta0=0.02, t0=150000.0, averaging=True,
        random_state=None, X_val=None, y_val=None, eval_every=1, time_budget=None,
        verbose=False) -> SolverResult:
    """:class:`SGD` on ``(X, y)`` through the driver."""
    rule = SGD(surrogate, eta0, t0, averaging)
    problem = check_problem(surrogate.space, X, y, lam)
    return run(rule, problem, n_passes=n_passes, random_state=random_state, eval_every=eval_every,
               time_budget=time_budget, X_val=X_val, y_val=y_val, verbose=verbose)
