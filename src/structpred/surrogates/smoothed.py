"""Smoothed structured hinge losses (Casimir §4): the max of the hinge replaced by a smooth max.

The hinge is ``S(v, y) = max_y' s(y') - <v, phi(y)>`` with ``s(y') = L(y, y') + <v, phi(y')>``.
Its smoothing with a strongly convex ``omega`` on the simplex and ``mu > 0`` is
``S_mu(v, y) = max_{u in simplex} sum_y' u(y') s(y') - mu omega(u) - <v, phi(y)>``, with gradient
``sum_y' u*(y') phi(y') - phi(y)`` at the maximiser ``u*``.  ``mu`` is a plain attribute that a
step rule may change every epoch; ``mu -> 0`` gives the hinge back.
"""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError, check_positive
from structpred.outputs.base import AffineLoss, Marginals, TopK
from structpred.outputs.batch import is_ragged, rowdot, rowsub
from structpred.surrogates.base import Surrogate
from structpred.surrogates.hinge import Hinge


def simplex_projection(z: np.ndarray) -> np.ndarray:
    """Euclidean projection of ``z`` onto the probability simplex (sort-based, exact)."""
    z = np.asarray(z, dtype=np.float64)
    s = np.sort(z)[::-1]
    c = np.cumsum(s) - 1.0
    k = np.arange(1, z.size + 1)
    rho = np.nonzero(s - c / k > 0)[0][-1]
    return np.maximum(z - c[rho] / (rho + 1), 0.0)


class _SmoothedHinge(Surrogate):
    """Shared parts: ``mu`` and the hinge it smooths (``target``: what solvers report)."""

    def __init__(self, space, mu: float = 1.0):
        super().__init__(space)
        self.mu = check_positive(mu, "mu")

    @property
    def target(self) -> Hinge:
        """The non-smooth hinge this surrogate smooths (Casimir reports its objective)."""
        return Hinge(self.space)


class TopKSmoothedHinge(_SmoothedHinge):
    """l2-smoothed hinge over the top-K outputs (Casimir §4.2, "top-K strategy"):
    ``S_mu(v, y) = max_{u in simplex_K} u^T s_K - (mu / 2) ||u||^2 - <v, phi(y)>``, where ``s_K``
    are the K largest loss-augmented scores; ``u* = proj_simplex(s_K / mu)``.

    Exact (the l2-smoothed hinge over all outputs) when ``K`` is at least the number of outputs
    with positive weight, in particular when ``K`` is the number of outputs.
    """

    requires = (TopK,)

    def __init__(self, space, mu: float = 1.0, K: int = 5):
        super().__init__(space, mu)
        if int(K) != K or K < 1:
            raise StructpredError(f"K must be a positive integer, got {K!r}")
        self.K = int(K)

    def __repr__(self) -> str:
        return f"TopKSmoothedHinge({self.space!r}, mu={self.mu:g}, K={self.K})"

    def _one(self, v, y):
        """Value and gradient of one sample (a space's compiled ``smoothed_top_k`` when it has one)."""
        fast = getattr(self.space, "smoothed_top_k", None)
        if fast is not None:
            return fast(v, y, self.K, check_positive(self.mu, "mu"))
        return self._one_from_oracles(v, y)

    def _one_from_oracles(self, v, y):
        """Value and gradient from the public oracles: ``top_k``, ``embed``, ``mean_embedding``."""
        Y, s = self.space.top_k(v, y, self.K)
        u = simplex_projection(s / check_positive(self.mu, "mu"))
        phi_y = self.space.embed(y)
        keep = u > 0
        grad = self.space.mean_embedding(Y[keep], u[keep]) - phi_y
        value = float(u @ s - 0.5 * self.mu * (u @ u) - v @ phi_y)
        return value, grad

    def value_grad(self, v, y):
        v, y = self.batch(v, y)
        pairs = [self._one(vi, yi) for vi, yi in zip(v, y)]
        grads = [g for _, g in pairs]
        return np.array([val for val, _ in pairs]), grads if is_ragged(v) else np.array(grads)

    def sample_grad(self, i, v, y):
        return self._one(v, y)[1]

    def pass_oracle(self):
        return ("smoothed_top_k", (self.K, check_positive(self.mu, "mu")))


class EntropySmoothedHinge(_SmoothedHinge):
    """Entropy-smoothed hinge (Casimir §4.1): ``S_mu(v, y) = mu log sum_y' exp(s(y') / mu) -
    <v, phi(y)>``, the log-partition of the loss-augmented scores at temperature ``mu``; gradient
    ``E_p phi - phi(y)`` under ``p(y') ∝ exp(s(y') / mu)`` (sum-product on ``(v + A^T phi(y)) / mu``)."""

    requires = (Marginals, AffineLoss)

    def __repr__(self) -> str:
        return f"EntropySmoothedHinge({self.space!r}, mu={self.mu:g})"

    def _tempered(self, v, y):
        mu = check_positive(self.mu, "mu")
        ls = self.space.loss_scores(y)
        if is_ragged(v):
            return [(a + b) / mu for a, b in zip(v, ls)], mu
        v = np.asarray(v, dtype=np.float64)
        return (v + np.reshape(ls, v.shape)) / mu, mu

    def value_grad(self, v, y):
        v, y = self.batch(v, y)
        sp = self.space
        t, mu = self._tempered(v, y)
        phi_y = sp.embed(y)
        value = mu * np.atleast_1d(sp.log_partition(t)) + sp.loss_offset - rowdot(v, phi_y)
        return value, rowsub(sp.marginals(t), phi_y)

    def sample_grad(self, i, v, y):
        t, _ = self._tempered(v, y)
        return self.space.marginals(t) - self.space.embed(y)
