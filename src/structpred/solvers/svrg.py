"""SVRG and Casimir-SVRG on the primal (Casimir Algorithms 2-4): step rules.

Both minimise ``F(W) = (1/n) sum_i f_i(W) + lam/2 ||W||^2`` with ``f_i = S(Psi_i^T W, y_i)`` for
a (smoothed) surrogate.  One pass is one SVRG epoch: the full gradient at the epoch's anchor
``Z`` (not counted as oracle calls, as the paper), then ``n`` steps
``W <- W - eta (grad f_i(W) - grad f_i(Z) + grad f(Z) + lam W [+ kappa (W - prox_centre)])``
(in place: a dense affine update and the oracles' sparse scatter),
two oracle calls each; the epoch's result is the average of its inner iterates.  The full
gradient and the pass run in the space's compiled loops when they have the surrogate's oracle
(``Problem.primal_kernels``: these keep the oracle's answers at ``Z`` from the full gradient),
else through the surrogate, one :meth:`SVRG.step` per sample.
"""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError, check_choice, check_positive
from structpred.solvers import _dense
from structpred.solvers.driver import SolverResult, StepRule, run
from structpred.solvers.problem import check_problem
from structpred.solvers.sgd import reported
from structpred.surrogates import Surrogate

WARM_STARTS = ("prox-centre", "extrapolation", "prev-iterate")
MU_SCHEDULES = ("const", "expo")


def _set_mu(surrogate, mu) -> None:
    if mu is not None:
        if not hasattr(surrogate, "mu"):
            raise StructpredError(f"a smoothing schedule needs a smoothed surrogate, got {surrogate!r}")
        surrogate.mu = mu


class SVRG(StepRule):
    """SVRG (Johnson & Zhang 2013) with a constant step ``lr`` and, for a smoothed surrogate,
    a constant ``mu`` (``None``: leave the surrogate's).  Objective: ``primal`` of the target."""

    name = "SVRG"

    def __init__(self, surrogate: Surrogate, lr: float = 0.02, mu: float | None = None,
                 sampling: str = "uniform"):
        if not isinstance(surrogate, Surrogate):
            raise StructpredError(f"{self.name} needs a surrogate (structpred.surrogates), got {surrogate!r}")
        super().__init__(surrogate)
        self.lr = check_positive(lr, "lr")
        self.mu0 = None if mu is None else check_positive(mu, "mu")
        if sampling not in ("uniform", "permutation"):
            raise StructpredError(f"sampling must be 'uniform' or 'permutation', got {sampling!r}")
        self.sampling = sampling

    # --- the parts Casimir-SVRG changes ---------------------------------------------------
    kappa = 0.0

    def epoch_mu(self, epoch: int):
        return self.mu0

    def drift(self) -> np.ndarray:
        """The constant part of the epoch's steps: the full gradient (minus ``kappa`` times the
        prox centre for Casimir-SVRG)."""
        return self.full

    def step_size(self) -> float:
        return self.lr

    # --- SVRG ---------------------------------------------------------------------------
    def init(self, problem) -> None:
        super().init(problem)
        self.surrogate.init_state(problem.n)
        self.kernels = problem.primal_kernels(self.surrogate)

    def data_gradient(self, W) -> np.ndarray:
        """``(1/n) sum_i Psi_i grad S(v_i, y_i)`` at ``W`` (no regulariser); compiled, the
        oracle's answers at ``W`` are kept for the pass (``self.answers``)."""
        pb = self.problem
        if self.kernels is not None:
            G, self.answers = self.kernels.anchor(W, self.surrogate.pass_oracle())
            return G / pb.n
        _, grads = self.surrogate.value_grad(pb.fmap.scores(W), pb.y)
        G = np.zeros_like(W)
        for i in range(pb.n):
            pb.fmap.add(i, G, grads[i])
        return G / pb.n

    def start_epoch(self, epoch: int) -> None:
        _set_mu(self.surrogate, self.epoch_mu(epoch - 1))
        self.Z = self.W.copy()
        self.full = self.data_gradient(self.Z)
        self.inner_sum = np.zeros_like(self.W)
        self.eta = self.step_size()
        self.D = self.drift()

    def epoch(self, order) -> None:
        if self.kernels is None:
            super().epoch(order)
            return
        rho = 1.0 - self.eta * (self.problem.lam + self.kappa)
        self.kernels.svrg_pass(self.W, self.D, self.inner_sum, rho, -self.eta, order, self.surrogate.pass_oracle(),
                               self.answers)
        self.oracle_calls += 2 * len(order)

    def step(self, i: int) -> None:
        # W <- W - eta (D + (lam + kappa) W + Psi_i (g_i(W) - g_i(Z))), in place
        pb, sur = self.problem, self.surrogate
        delta = (np.asarray(sur.sample_grad(i, pb.fmap.score(i, self.W), pb.y[i]))
                 - np.asarray(sur.sample_grad(i, pb.fmap.score(i, self.Z), pb.y[i])))
        _dense.mix(self.W, 1.0 - self.eta * (pb.lam + self.kappa), self.D, -self.eta)
        pb.fmap.add(i, self.W, -self.eta * delta)
        _dense.mix(self.inner_sum, 1.0, self.W, 1.0)
        self.oracle_calls += 2

    def end_epoch(self, epoch: int) -> None:
        self.W = self.inner_sum / self.problem.n

    def objectives(self) -> dict:
        return {"primal": self.problem.primal(reported(self.surrogate), self.W)}


class CasimirSVRG(SVRG):
    """Casimir-SVRG (Casimir Algorithm 4 with SVRG as the inner solver): epoch ``k`` runs one
    SVRG pass on ``F(W) + kappa/2 ||W - Z_{k-1}||^2`` (smoothing ``mu_k``), then
    ``alpha_k > 0`` solves ``(kappa + lam) alpha_k^2 = (1 - alpha_k)(kappa + lam) alpha_{k-1}^2 + lam alpha_k``,
    ``beta_k = alpha_{k-1} (1 - alpha_{k-1}) / (alpha_{k-1}^2 + alpha_k)`` and the prox centre
    moves to ``Z_k = W_k + beta_k (W_k - W_{k-1})``; ``alpha_0 = sqrt(q)``, ``q = lam / (lam + kappa)``.

    Two settings, as the reference code: ``L`` given ("const"): ``kappa = L / (n + 1) - lam``
    (or ``L / (n + 1)`` when that is not positive) and step ``1 / (L + lam + kappa)``; ``L=None``
    ("adapt"): ``kappa = kappa_factor * lam`` and step ``lr``.  Smoothing ``mu_k = mu0`` ("const")
    or ``mu0 (1 - sqrt(q) / 2)^(k / 2)`` ("expo").  The next epoch starts at the prox centre
    ``Z_k``, by ``extrapolation`` ``W_k + kappa / (kappa + lam) (Z_k - Z_{k-1})``, or at the
    previous iterate ``W_k``.
    """

    name = "Casimir-SVRG"

    def __init__(self, surrogate: Surrogate, mu0: float = 1.0, L: float | None = None,
                 lr: float = 0.02, kappa_factor: float = 1.0, mu_schedule: str = "const",
                 warm_start: str = "prev-iterate", sampling: str = "uniform"):
        super().__init__(surrogate, lr=lr, mu=mu0, sampling=sampling)
        self.L = None if L is None else check_positive(L, "L")
        self.kappa_factor = check_positive(kappa_factor, "kappa_factor")
        self.mu_schedule = check_choice(mu_schedule, MU_SCHEDULES, "mu_schedule")
        self.warm_start = check_choice(warm_start, WARM_STARTS, "warm_start")

    def init(self, problem) -> None:
        super().init(problem)
        lam, n = problem.lam, problem.n
        if self.L is not None:
            kappa = self.L / (n + 1) - lam
            self.kappa = kappa if kappa > 0 else self.L / (n + 1)
        else:
            self.kappa = self.kappa_factor * lam
        self.q = lam / (lam + self.kappa)
        self.alpha = np.sqrt(self.q)
        self.prox_centre = self.W.copy()
        self.prev_centre = self.W.copy()
        self.W_prev = self.W.copy()

    def epoch_mu(self, epoch: int):
        if self.mu_schedule == "expo":
            return self.mu0 * (1.0 - np.sqrt(self.q) / 2.0) ** (epoch / 2.0)
        return self.mu0

    def step_size(self) -> float:
        if self.L is not None:
            return 1.0 / (self.L + self.problem.lam + self.kappa)
        return self.lr

    def drift(self):
        return self.full - self.kappa * self.prox_centre

    def end_epoch(self, epoch: int) -> None:
        super().end_epoch(epoch)  # W_k: the average of the inner iterates
        lam, r = self.problem.lam, self.kappa + self.problem.lam
        a = self.alpha
        # r alpha^2 + (r a^2 - lam) alpha - r a^2 = 0, its positive root
        b = r * a * a - lam
        alpha = (-b + np.sqrt(b * b + 4.0 * r * r * a * a)) / (2.0 * r)
        beta = a * (1.0 - a) * r / (r * a * a + r * alpha)
        self.alpha = alpha
        self.prev_centre = self.prox_centre
        self.prox_centre = self.W + beta * (self.W - self.W_prev)
        self.W_prev = self.W.copy()
        self.reported_W = self.W.copy()
        if self.warm_start == "prox-centre":
            self.W = self.prox_centre.copy()
        elif self.warm_start == "extrapolation":
            self.W = self.W + self.kappa / (self.kappa + lam) * (self.prox_centre - self.prev_centre)

    def weights(self) -> np.ndarray:
        return self.reported_W

    def objectives(self) -> dict:
        return {"primal": self.problem.primal(reported(self.surrogate), self.reported_W)}


def svrg(surrogate: Surrogate, X, y, lam, n_passes=50, lr=0.02, mu=None, random_state=None,
         X_val=None, y_val=None, eval_every=1, time_budget=None, verbose=False) -> SolverResult:
    """:class:`SVRG` on ``(X, y)`` through the driver."""
    rule = SVRG(surrogate, lr=lr, mu=mu)
    problem = check_problem(surrogate.space, X, y, lam)
    return run(rule, problem, n_passes=n_passes, random_state=random_state, eval_every=eval_every,
               time_budget=time_budget, X_val=X_val, y_val=y_val, verbose=verbose)


def casimir_svrg(surrogate: Surrogate, X, y, lam, n_passes=50, mu0=1.0, L=None, lr=0.02,
                 kappa_factor=1.0, mu_schedule="const", warm_start="prev-iterate", random_state=None,
                 X_val=None, y_val=None, eval_every=1, time_budget=None, verbose=False) -> SolverResult:
    """:class:`CasimirSVRG` on ``(X, y)`` through the driver."""
    rule = CasimirSVRG(surrogate, mu0=mu0, L=L, lr=lr, kappa_factor=kappa_factor,
                       mu_schedule=mu_schedule, warm_start=warm_start)
    problem = check_problem(surrogate.space, X, y, lam)
    return run(rule, problem, n_passes=n_passes, random_state=random_state, eval_every=eval_every,
               time_budget=time_budget, X_val=X_val, y_val=y_val, verbose=verbose)
