"""Casimir's non-convex methods (§6, §7.2, Algorithm 5) on a smooth score map ``g`` (the box score
of :mod:`structpred.vision.score_net`): ``F(w) = (1/n) sum_i h(g_i(w), y_i) + lam/2 ||w||^2`` with
``h`` the structural hinge.

:class:`ProxLinear` (PL-Casimir-SVRG): pass ``k`` minimises the convex model
``F_eta(w; w_k) = (1/n) sum_i h(g_i(w_k) + J_i (w - w_k)) + lam/2 ||w||^2 + 1/(2 eta) ||w - w_k||^2``
inexactly, with ``inner_passes`` epochs of Casimir-SVRG-const on the top-K smoothed hinge
(``mu_k = mu`` (``smoothing="const"``) or ``mu / k`` (``"adapt"``), ``L_k = L0`` or ``k L0``), and
moves to its solution only if that lowers ``F`` (Algorithm 5, line 4); else ``w_{k+1} = w_k``.
With ``w = w_k + u`` the model is a linear structural SVM in ``u`` whose regulariser
``lam/2 ||w_k + u||^2 + 1/(2 eta) ||u||^2`` equals ``(lam + 1/eta)/2 ||u - u0||^2`` up to a
constant, ``u0 = -lam w_k / (lam + 1/eta)``; the solver's variable is ``z = u - u0``, started at
``-u0`` (``w = w_k``).

:class:`NonConvexSGD`: ``w <- w - eta_t (J_i(w)^T (e_j - e_{y_i}) + lam w)`` with ``j`` the
loss-augmented candidate and ``eta_t = eta0`` (``"const"``), ``eta0 / sqrt(1 + t/n)``
(``"sqrt"``) or ``eta0 / (1 + t/n)`` (``"linear"``), ``t`` counting steps; the last iterate.
"""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError, check_choice, check_positive, check_positive_int
from structpred.solvers.driver import StepRule, run
from structpred.solvers.problem import Problem
from structpred.solvers.svrg import WARM_STARTS, CasimirSVRG
from structpred.surrogates import TopKSmoothedHinge

SMOOTHING = ("const", "adapt")
SCHEDULES = ("const", "sqrt", "linear")


class ProxLinear(StepRule):
    """PL-Casimir-SVRG (see the module docstring): one pass = one prox-linear step."""

    name = "PL-Casimir-SVRG"
    sampling = "permutation"

    def __init__(self, surrogate, eta: float = 1.0, inner_passes: int = 5, mu: float = 10.0,
                 smoothing: str = "adapt", L0: float = 1.0, K: int = 10, warm_start: str = "prox-centre"):
        super().__init__(surrogate)
        self.eta = check_positive(eta, "eta")
        self.inner_passes = check_positive_int(inner_passes, "inner_passes")
        self.mu = check_positive(mu, "mu")
        self.L0 = check_positive(L0, "L0")
        self.K = check_positive_int(K, "K")
        self.smoothing = check_choice(smoothing, SMOOTHING, "smoothing")
        self.warm_start = check_choice(warm_start, WARM_STARTS, "warm_start")

    def init(self, problem) -> None:
        if not hasattr(problem.fmap, "linearise"):
            raise StructpredError(f"{self.name} needs a score map with a linearisation, got {type(problem.fmap).__name__}")
        super().init(problem)
        self.F = problem.primal(self.surrogate, self.W)
        self.accepted = 0

    def draw_order(self, rng, n):
        self.rng = rng   # the inner solver's sample orders come from the driver's generator
        return np.arange(n)

    def epoch(self, order) -> None:
        pb, k = self.problem, self.k
        lam_eta = pb.lam + 1.0 / self.eta
        u0 = -pb.lam * self.W / lam_eta
        inner_pb = Problem(pb.space, pb.fmap.linearise(self.W, u0), pb.y, lam_eta)
        scale = k if self.smoothing == "adapt" else 1
        mu_k = self.mu / scale
        inner = CasimirSVRG(TopKSmoothedHinge(pb.space, mu=mu_k, K=self.K), mu0=mu_k, L=self.L0 * scale,
                            mu_schedule="const", warm_start=self.warm_start)
        inner.start = -u0
        run(inner, inner_pb, n_passes=self.inner_passes, random_state=self.rng)
        self.oracle_calls += inner.oracle_calls
        W_new = self.W + u0 + inner.weights()
        F_new = pb.primal(self.surrogate, W_new)
        if F_new <= self.F:
            self.W, self.F = W_new, F_new
            self.accepted += 1

    def start_epoch(self, epoch: int) -> None:
        self.k = epoch

    def objectives(self) -> dict:
        return {"primal": self.F, "accepted": self.accepted}


class NonConvexSGD(StepRule):
    """Stochastic subgradient steps on the non-convex objective (see the module docstring)."""

    name = "SGD"
    sampling = "uniform"

    def __init__(self, surrogate, eta0: float = 0.01, schedule: str = "const"):
        super().__init__(surrogate)
        self.eta0 = check_positive(eta0, "eta0")
        self.schedule = check_choice(schedule, SCHEDULES, "schedule")

    def init(self, problem) -> None:
        if not hasattr(problem.fmap, "vjp"):
            raise StructpredError(f"{self.name} needs a score map with an adjoint (vjp), got {type(problem.fmap).__name__}")
        super().init(problem)
        self.t = 0

    def step_size(self) -> float:
        e = self.t / self.problem.n
        return {"const": self.eta0, "sqrt": self.eta0 / np.sqrt(1.0 + e), "linear": self.eta0 / (1.0 + e)}[self.schedule]

    def step(self, i: int) -> None:
        pb = self.problem
        g = self.surrogate.sample_grad(i, pb.fmap.score(i, self.W), pb.y[i])
        grad = pb.fmap.vjp(i, self.W, g) + pb.lam * self.W
        self.W = self.W - self.step_size() * grad
        self.t += 1
        self.oracle_calls += 1

    def objectives(self) -> dict:
        return {"primal": self.problem.primal(self.surrogate, self.W)}
