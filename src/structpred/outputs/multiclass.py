"""Multiclass output space: ``phi(y) = e_y in R^k``, ``L(y, y') = A[y, y']``.

Covers the multi-class (0-1 loss) and ordinal regression (absolute loss ``|y - y'|``
over ``k`` ordered bins) tasks of M4N Table 1.  The marginal polytope is the simplex.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.special import logsumexp, softmax

from structpred.errors import StructpredError
from structpred.features.joint import LinearJoint
from structpred.outputs import _multiclass_kernels as K
from structpred.outputs.base import (
    AffineLoss,
    ExactMaxMin,
    LossAugmented,
    MarginalPolytope,
    Marginals,
    MaxMin,
    MaxMinResult,
    MinLossLines,
    OutputSpace,
    TopK,
    as_int_labels,
)
from structpred.outputs._multiclass_oracles import MulticlassOracles


def _as_scores(v, k: int) -> tuple[np.ndarray, bool]:
    v = np.asarray(v, dtype=np.float64)
    single = v.ndim == 1
    v2 = np.atleast_2d(v)
    if v2.ndim != 2 or v2.shape[1] != k:
        raise StructpredError(f"scores must have shape (k,) or (n, k) with k={k}, got {v.shape}")
    if not np.all(np.isfinite(v2)):
        raise StructpredError("scores contain NaN or infinite values")
    return v2, single


class Multiclass(OutputSpace, LossAugmented, TopK, Marginals, MaxMin, ExactMaxMin, AffineLoss, MinLossLines,
                 MarginalPolytope):
    """Finite output set ``{0, ..., k-1}`` with an arbitrary loss matrix.

    Parameters
    ----------
    loss_matrix : (k, k) array, ``loss_matrix[y, y']`` = loss of predicting ``y'`` when
        the truth is ``y``.  Must be finite; the diagonal is usually zero.

    Notes
    -----
    ``max_min`` runs SP-MP (M4N Algorithm 2) with entropic mirror maps on both simplices.
    Step size (M4N Appendix G, Theorem G.1): with the l1 norm on both simplices the
    entropy is 1-strongly convex (Pinsker), ``R^2 = log k`` for each player,
    ``beta_11 = beta_22 = 0`` and ``beta_12 = beta_21 = max_ij |A_ij|`` (as
    ``||A x||_inf <= max|A_ij| ||x||_1``), so ``L = max|A_ij| log k``.  Theorem G.1 uses the
    distance-generating function normalised by ``R^2`` and ``eta = 1/(2L)``; in terms of
    the raw (unnormalised) entropy used by our softmax steps this is
    ``eta_raw = R^2 / (2L) = 1 / (2 max|A_ij|)``, the value the reference code uses
    (``eta = log(k) / (2 L)``), and the averaged pair has gap ``<= 4 L / K``.
    """

    name = "multiclass"

    def __init__(self, loss_matrix):
        A = np.asarray(loss_matrix, dtype=np.float64)
        if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] < 2:
            raise StructpredError(f"loss_matrix must be square (k, k) with k >= 2, got shape {A.shape}")
        if not np.all(np.isfinite(A)):
            raise StructpredError("loss_matrix contains NaN or infinite values")
        self.loss_matrix = np.ascontiguousarray(A)
        k = A.shape[0]
        idx = np.arange(k)
        if np.array_equal(A, 1.0 - np.eye(k)):
            self.kind = K.KIND_ZERO_ONE
        elif np.array_equal(A, np.abs(idx[:, None] - idx[None, :]).astype(float)):
            self.kind = K.KIND_ABSOLUTE
        else:
            self.kind = K.KIND_DENSE
            self.unsupported = {ExactMaxMin: "the exact game solves the zero-one and absolute (ordinal) losses only"}
        amax = float(np.max(np.abs(A)))
        self.lipschitz = amax * np.log(k)  # L of Theorem G.1 (l1 norms)
        self.eta = 1.0 / (2.0 * amax) if amax > 0 else 1.0

    # --- constructors --------------------------------------------------------------
    @classmethod
    def zero_one(cls, k: int) -> "Multiclass":
        """0-1 loss over ``k`` classes."""
        k = int(k)
        if k < 2:
            raise StructpredError(f"need at least 2 classes, got {k}")
        return cls(1.0 - np.eye(k))

    @classmethod
    def ordinal(cls, k: int) -> "Multiclass":
        """Absolute loss ``|y - y'|`` over ``k`` ordered bins."""
        k = int(k)
        if k < 2:
            raise StructpredError(f"need at least 2 bins, got {k}")
        idx = np.arange(k)
        return cls(np.abs(idx[:, None] - idx[None, :]).astype(np.float64))

    def __repr__(self) -> str:
        kinds = {0: "dense", 1: "zero_one", 2: "ordinal"}
        return f"Multiclass(k={self.k}, loss={kinds[self.kind]})"

    # --- basic ---------------------------------------------------------------------
    @property
    def k(self) -> int:
        return self.loss_matrix.shape[0]

    @property
    def embedding_dim(self) -> int:
        return self.k

    @property
    def n_labels(self) -> int:
        return self.k

    def check_labels(self, y) -> np.ndarray:
        y = as_int_labels(y, "labels in 0..k-1")
        if y.size and (y.min() < 0 or y.max() >= self.k):
            raise StructpredError(f"labels must lie in 0..{self.k - 1}, got range [{y.min()}, {y.max()}]")
        return y

    def compiled_oracles(self, fmap, y):
        """The compiled oracles of :mod:`structpred.outputs._multiclass_oracles` for the linear
        joint map ``v = W^T x``; ``None`` (generic loops) for any other map."""
        return MulticlassOracles(self, fmap, y) if isinstance(fmap, LinearJoint) else None

    def embed(self, y) -> np.ndarray:
        y = self.check_labels(y)
        return np.eye(self.k)[y]

    def loss(self, y, y2) -> np.ndarray:
        return self.loss_matrix[self.check_labels(y), self.check_labels(y2)]

    def linear_loss(self, y, mu) -> np.ndarray:
        """``phi(y_i)^T A mu_i`` row-wise (the linear part of the M3N dual)."""
        y = np.atleast_1d(self.check_labels(y))
        mu = np.atleast_2d(mu)
        return np.einsum("ij,ij->i", self.loss_matrix[y], mu)

    def loss_scores(self, y) -> np.ndarray:
        """``A^T phi(y_i) = C[y_i, :]`` row-wise."""
        return self.loss_matrix[np.atleast_1d(self.check_labels(y))].copy()

    def min_loss(self, mu) -> np.ndarray:
        """``min_y' phi(y')^T A mu_i`` row-wise (the concave part of the M4N dual)."""
        return np.min(np.atleast_2d(mu) @ self.loss_matrix.T, axis=1)

    def min_loss_lines(self, mu, d):
        """``min_y' (A (mu + g d))_y'``: one block of ``k`` lines, ``p = A mu``, ``q = A d``."""
        A = self.loss_matrix
        return A @ np.asarray(mu, dtype=np.float64), A @ np.asarray(d, dtype=np.float64), np.array([0, self.k])

    def marginal_polytope(self, m) -> tuple:
        """The simplex ``{m >= 0 : 1^T m = 1}`` in ``R^k``."""

        if np.shape(m) != (self.k,):
            raise StructpredError(f"a multiclass marginal vector has {self.k} entries, got shape {np.shape(m)}")
        return sparse.csr_matrix(np.ones((1, self.k))), np.ones(1)

    def into_polytope(self, m) -> np.ndarray:
        """``max(m, 0)`` renormalised to sum 1 (uniform if nothing is positive)."""
        m = np.maximum(np.asarray(m, dtype=np.float64), 0.0)
        total = m.sum()
        return m / total if total > 0.0 else np.full(m.shape, 1.0 / m.shape[-1])

    # --- oracles ----------------------------------------------------------------------
    def entropy(self, mu) -> np.ndarray:
        """Shannon entropy ``-sum_j mu_j log mu_j`` of each row (the CRF dual, SDCA)."""
        mu = np.atleast_2d(np.asarray(mu, dtype=np.float64))
        return -np.sum(mu * np.log(np.where(mu > 0, mu, 1.0)), axis=1)

    def entropy_coefficients(self, mu) -> np.ndarray:
        """``c`` with ``entropy(mu) = -sum_j c_j mu_j log mu_j`` (all ones on the simplex)."""
        return np.ones(self.k)

    def decode(self, v) -> np.ndarray:
        v2, single = _as_scores(v, self.k)
        out = np.argmax(v2, axis=1).astype(np.int64)
        return out[0] if single else out

    def loss_augmented(self, v, y) -> np.ndarray:
        v2, single = _as_scores(v, self.k)
        y = np.atleast_1d(self.check_labels(y))
        if y.shape[0] != v2.shape[0]:
            raise StructpredError(f"{v2.shape[0]} scores but {y.shape[0]} labels")
        out = np.argmax(self.loss_matrix[y] + v2, axis=1).astype(np.int64)
        return out[0] if single else out

    def top_k(self, v, y, K: int):
        """The ``K`` labels of largest ``v_j (+ A[y, j])`` in decreasing order (ties: lower
        label first): ``(labels (K',), scores (K',))`` with ``K' = min(K, k)`` for one score,
        lists of them for a batch."""
        v2, single = _as_scores(v, self.k)
        K = int(K)
        if K < 1:
            raise StructpredError(f"K must be >= 1, got {K}")
        S = v2 if y is None else v2 + self.loss_matrix[np.atleast_1d(self.check_labels(y))]
        if S.shape[0] != v2.shape[0]:
            raise StructpredError(f"{v2.shape[0]} scores but {S.shape[0]} labels")
        order = np.argsort(-S, axis=1, kind="stable")[:, :K]
        out = [(o.astype(np.int64), s[o]) for o, s in zip(order, S)]
        return out[0] if single else out

    def marginals(self, v) -> np.ndarray:
        v2, single = _as_scores(v, self.k)
        m = softmax(v2, axis=1)
        return m[0] if single else m

    def log_partition(self, v) -> np.ndarray:
        v2, single = _as_scores(v, self.k)
        z = logsumexp(v2, axis=1)
        return z[0] if single else z

    def bayes_decode(self, m) -> np.ndarray:
        """``argmin_y' sum_y m_y A[y, y'] = argmin (A^T m)`` (median bin for ``|y - y'|``)."""
        m2, single = _as_scores(m, self.k)
        out = np.argmin(m2 @ self.loss_matrix, axis=1).astype(np.int64)
        return out[0] if single else out

    def max_min(self, v, warm=None, n_iter: int = 20) -> MaxMinResult:
        """SP-MP for ``max_mu min_nu nu^T A mu + v^T mu`` (M4N eq. 14, Algorithm 2).

        ``warm`` is the ``state`` of a previous result (log-domain last iterates
        ``(log mu, log nu)``, shapes like ``v``) or None for the uniform start.
        """
        v2, single = _as_scores(v, self.k)
        n = v2.shape[0]
        if warm is None:
            lmu = np.full((n, self.k), -np.log(self.k))
            lnu = lmu.copy()
        else:
            lmu = np.array(np.atleast_2d(warm[0]), dtype=np.float64, order="C")
            lnu = np.array(np.atleast_2d(warm[1]), dtype=np.float64, order="C")
            if lmu.shape != v2.shape or lnu.shape != v2.shape:
                raise StructpredError("warm state does not match the scores' shape")
        n_iter = int(n_iter)
        if n_iter < 0:
            raise StructpredError("n_iter must be >= 0")
        mu = np.empty_like(v2)
        nu = np.empty_like(v2)
        gap = np.empty(n)
        lo = np.empty(n)
        up = np.empty(n)
        K.spmp_batch(np.ascontiguousarray(v2), self.loss_matrix, self.kind, self.eta, n_iter,
                     lmu, lnu, mu, nu, gap, lo, up)
        if single:
            return MaxMinResult(mu[0], nu[0], gap[0], lo[0], up[0], (lmu[0], lnu[0]))
        return MaxMinResult(mu, nu, gap, lo, up, (lmu, lnu))

    def max_min_exact(self, v, warm=None, tol: float = 1e-9, max_iter: int = 1000) -> MaxMinResult:
        """``max_mu min_nu nu^T A mu + v^T mu`` exactly (zero-one and absolute losses): the closed
        form of AGM's node game (:func:`structpred.outputs._multiclass_kernels.exact_game`);
        ``value`` is the maximiser's exact value, ``upper`` the closed form's, ``nu`` a best
        response.  ``warm``, ``tol`` and ``max_iter`` are unused (no iterations); ``state`` is ``None``."""
        if self.kind == K.KIND_DENSE:
            raise StructpredError(f"{self!r} has no exact game: {self.unsupported[ExactMaxMin]}")
        v2, single = _as_scores(v, self.k)
        n = v2.shape[0]
        mu, nu = np.empty_like(v2), np.empty_like(v2)
        lo, up = np.empty(n), np.empty(n)
        K.exact_game_batch(np.ascontiguousarray(v2), self.loss_matrix, self.kind, mu, nu, lo, up)
        gap = np.maximum(up - lo, 0.0)
        if single:
            return MaxMinResult(mu[0], nu[0], gap[0], lo[0], up[0], None)
        return MaxMinResult(mu, nu, gap, lo, up, [None] * n)
