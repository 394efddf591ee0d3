"""Histogram output spaces for the loss trick (QS §6, Example 1.4-1.5; Cortes, Mohri and Weston 2005).

An output is a histogram: a point of the simplex ``{y in R^d : y >= 0, sum_j y_j = 1}``,
one ``(d,)`` array, a batch ``(n, d)``.  Labels are checked to be finite, non-negative and
to sum to one within ``1e-6`` (:data:`SUM_TOL`).  These spaces have no finite linear
embedding to score (they are :class:`~structpred.outputs.base.LossSpace`, not
``OutputSpace``): they are decoded by the loss trick of QS (Alg. 1, eq. 2),
``y(x) = argmin_y sum_i alpha_i(x) L(Y_i, y)``, with kernel-ridge weights ``alpha`` of any
sign (they need not sum to one).

* :class:`Hellinger`: the squared Hellinger distance, decoded in closed form (QS §6, the
  USPS digit reconstruction experiment).
* :class:`GaussianHistogram`: the loss induced by a normalised Gaussian kernel on outputs
  (the KDE loss of Weston et al. 2002, Cortes et al. 2005), decoded by a local pre-image
  (mean-shift) iteration with restarts (:mod:`structpred.outputs._histogram_kernels`).
"""

from __future__ import annotations

import logging

import numpy as np

from structpred.errors import StructpredError, check_positive, check_positive_int
from structpred.outputs import _histogram_kernels as K
from structpred.outputs.base import LossSpace, StatisticDecoding, WeightedDecoding, as_real, as_weights, broadcast_pair

log = logging.getLogger(__name__)

#: tolerance on ``|sum_j y_j - 1|`` for a histogram
SUM_TOL = 1e-6


class _Histograms(LossSpace, WeightedDecoding):
    """Common part: the dimension ``d``, label checks, the training-output check."""

    def __init__(self, d: int):
        self.d = check_positive_int(d, "d (the histogram dimension)")

    @property
    def label_shape(self) -> tuple:
        return (self.d,)

    def check_labels(self, y) -> np.ndarray:
        """Validate histograms: shape ``(d,)`` or ``(n, d)``, finite, ``>= 0``, rows summing to
        one within :data:`SUM_TOL`.  Returns them as float64."""
        a = as_real(y, "histograms")
        if a.ndim not in (1, 2) or a.shape[-1] != self.d:
            raise StructpredError(f"histograms must have shape ({self.d},) or (n, {self.d}) for d={self.d}, "
                                  f"got {a.shape}")
        a2 = a.reshape(-1, self.d)
        if a2.size:
            neg = np.flatnonzero(np.any(a2 < 0, axis=1))
            if neg.size:
                r = int(neg[0])
                raise StructpredError(f"histogram row {r} has a negative entry ({a2[r].min():.3g}): "
                                      "histograms must be non-negative")
            off = np.abs(a2.sum(axis=1) - 1.0)
            bad = np.flatnonzero(off > SUM_TOL)
            if bad.size:
                r = int(bad[0])
                raise StructpredError(f"histogram row {r} sums to {a2[r].sum():.9g}, not 1 "
                                      f"(tolerance {SUM_TOL:g})")
        return a

    def _pair(self, y, y2) -> tuple[np.ndarray, np.ndarray]:
        a, b = self.check_labels(y), self.check_labels(y2)
        broadcast_pair(a, b, "histograms")
        return a, b

    def _outputs(self, Y) -> np.ndarray:
        """Checked training outputs ``(n_train, d)``, ``n_train >= 1``."""
        Y = self.check_labels(Y)
        if Y.ndim != 2 or Y.shape[0] == 0:
            raise StructpredError(f"training outputs must have shape (n_train, {self.d}) with n_train >= 1, "
                                  f"got {Y.shape}")
        return Y

    def _training(self, alpha, Y) -> tuple[np.ndarray, np.ndarray, bool]:
        Y = self._outputs(Y)
        A, single = as_weights(alpha, Y.shape[0])
        return np.ascontiguousarray(Y), np.ascontiguousarray(A), single


class Hellinger(_Histograms, StatisticDecoding):
    """Histograms in the simplex of ``R^d`` with the squared Hellinger distance (QS §6, Example 1.5).

    ``L(y, y') = sum_j (sqrt(y_j) - sqrt(y'_j))^2 = 2 - 2 sum_j sqrt(y_j y'_j)``, *without* the
    factor 1/2 of some authors: its range on the simplex is ``[0, 2]`` (2 for disjoint
    supports).  It is the squared euclidean distance between ``sqrt(y)`` and ``sqrt(y')``,
    points of the unit sphere, which is QS's Asm. 1 with the embedding ``sqrt`` (QS App. C).

    Loss-trick decoding, derived (QS eq. 2).  With ``u = sqrt(y)`` (``u >= 0``, ``||u|| = 1``,
    a bijection between the simplex and the non-negative part of the unit sphere) and
    ``s = sum_i alpha_i sqrt(Y_i)``::

        sum_i alpha_i L(Y_i, y) = sum_i alpha_i (sum_j Y_ij + 1) - 2 <s, u>,

    so the decoding maximises ``<s, u>`` over unit ``u >= 0``.  If ``s_+ = max(s, 0) != 0``:
    ``<s, u> <= <s_+, u> <= ||s_+|| ||u|| = ||s_+||`` (``u >= 0``, then Cauchy-Schwarz), with
    equality at ``u = s_+ / ||s_+||``, hence ``y = u^2 = s_+^2 / ||s_+||^2``.  If ``s <= 0``:
    ``<s, u> = -sum_j |s_j| u_j <= -min_j |s_j| ||u||_1 <= -min_j |s_j|`` (as
    ``||u||_1 >= ||u||_2 = 1``), with equality at the vertex ``e_j``, ``j = argmax_j s_j`` (ties
    to the lowest ``j``).  Either answer is the global minimiser, for weights of any sign.
    """

    name = "hellinger"

    def __repr__(self) -> str:
        return f"Hellinger(d={self.d})"

    def loss(self, y, y2) -> np.ndarray:
        """``sum_j (sqrt(y_j) - sqrt(y2_j))^2`` (in ``[0, 2]``), broadcast over rows."""
        a, b = self._pair(y, y2)
        return np.sum((np.sqrt(a) - np.sqrt(b)) ** 2, axis=-1)

    def statistic(self, Y) -> np.ndarray:
        """``sqrt(Y_i)`` stacked: the loss depends on the weights only through ``sum_i alpha_i sqrt(Y_i)``."""
        return np.sqrt(self._outputs(Y))

    def decode_statistic(self, m) -> np.ndarray:
        """``argmin_y sum_i alpha_i L(Y_i, y)`` over the simplex in closed form (class notes) from
        ``s = sum_i alpha_i sqrt(Y_i)`` (rows of ``m``): ``s_+^2 / ||s_+||^2``, or the vertex at
        ``argmax s`` when ``s`` has no positive entry."""
        S = np.atleast_2d(np.asarray(m, dtype=np.float64))
        if S.shape[1] != self.d or not np.all(np.isfinite(S)):
            raise StructpredError(f"statistics must be finite with {self.d} columns, got shape {S.shape}")
        out = np.zeros_like(S)
        P = np.maximum(S, 0.0)
        top = P.max(axis=1)
        pos = top > 0
        if np.any(pos):
            Q = P[pos] / top[pos, None]  # scaled first: no underflow of tiny s_j^2
            Q *= Q
            out[pos] = Q / Q.sum(axis=1, keepdims=True)
        rows = np.flatnonzero(~pos)
        if rows.size:
            out[rows, np.argmax(S[rows], axis=1)] = 1.0
        return out


class GaussianHistogram(_Histograms):
    """Histograms with the loss of a normalised Gaussian kernel on outputs (QS §6, Example 1.4;
    the KDE loss of Weston et al. 2002 and Cortes, Mohri and Weston 2005).

    ``L(y, y') = 1 - k(y, y')``, ``k(y, y') = exp(-||y - y'||^2 / (2 sigma^2))``: the loss the
    kernel induces, ``||psi(y) - psi(y')||^2 = 2 - 2 k(y, y')`` for a normalised kernel
    (``k(y, y) = 1``), up to the factor 2 (range ``[0, 1)``).

    Parameters
    ----------
    d : histogram dimension.
    sigma : kernel width (> 0).
    n_restarts : the decoder's restarts (default 5), from the training outputs of largest
        objective ``g`` (exact duplicates skipped).
    max_iter : cap on the ascent iterations of one restart (default 1000).
    tol : a restart stops when a step moves its point by at most ``tol`` in l1 (relative to
        ``||y||_1 = 1``; default ``1e-10``).

    Notes
    -----
    Decoding (QS eq. 2): ``argmin_y sum_i alpha_i L(Y_i, y) = argmax_y g(y)``,
    ``g(y) = sum_i alpha_i k(y, Y_i)``, over the simplex.  ``g`` is not concave and, with
    weights of both signs, not even a mixture: the decoder is a *local* method that returns
    the best point it finds, with no global guarantee.  Each restart iterates the pre-image
    (mean-shift) fixed point ``y <- sum_i w_i Y_i / sum_i w_i``, ``w_i = alpha_i k(y, Y_i)``
    (Cortes et al. 2005, eq. 9; ``grad g(y) = 0`` is this fixed point), a monotone ascent
    when all weights are non-negative.  When the step is unavailable (denominator
    ``sum_i w_i = g(y) <= 0``), leaves the simplex, or does not increase ``g`` (negative
    weights), a projected gradient ascent step is taken instead (Euclidean projection onto
    the simplex, sort-based; step halved from the mean-shift step until Armijo's condition
    holds).  See :func:`structpred.outputs._histogram_kernels.gauss_ascent`.
    """

    name = "gaussian-histogram"

    def __init__(self, d: int, sigma: float, n_restarts: int = 5, max_iter: int = 1000, tol: float = 1e-10):
        super().__init__(d)
        self.sigma = check_positive(sigma, "sigma")
        self.n_restarts = check_positive_int(n_restarts, "n_restarts")
        self.max_iter = check_positive_int(max_iter, "max_iter")
        self.tol = check_positive(tol, "tol")

    def __repr__(self) -> str:
        return f"GaussianHistogram(d={self.d}, sigma={self.sigma:g})"

    def kernel(self, y, y2) -> np.ndarray:
        """``k(y, y2) = exp(-||y - y2||^2 / (2 sigma^2))``, broadcast over rows."""
        a, b = self._pair(y, y2)
        return np.exp(-np.sum((a - b) ** 2, axis=-1) / (2.0 * self.sigma ** 2))

    def loss(self, y, y2) -> np.ndarray:
        """``1 - exp(-||y - y2||^2 / (2 sigma^2))``, broadcast over rows."""
        a, b = self._pair(y, y2)
        return -np.expm1(-np.sum((a - b) ** 2, axis=-1) / (2.0 * self.sigma ** 2))

    def objective(self, alpha, Y, y) -> np.ndarray:
        """``g(y) = sum_i alpha_i k(Y_i, y)`` (the decoder maximises it; the loss-trick objective
        is ``sum_i alpha_i - g(y)``).  ``alpha`` ``(n_train,)`` or ``(n, n_train)`` and ``y``
        ``(d,)`` or ``(n, d)`` broadcast row-wise (one weight vector at many points, many at
        one point, or pairs); a scalar for one of each."""
        Y, A, single = self._training(alpha, Y)
        y = self.check_labels(y)
        y2 = np.atleast_2d(y)
        if A.shape[0] != y2.shape[0] and 1 not in (A.shape[0], y2.shape[0]):
            raise StructpredError(f"{A.shape[0]} weight vectors but {y2.shape[0]} histograms")
        D = np.sum((y2[:, None, :] - Y[None, :, :]) ** 2, axis=-1)
        g = np.sum(A * np.exp(-D / (2.0 * self.sigma ** 2)), axis=1)
        return g[0] if single and y.ndim == 1 else g

    def _g_at_training(self, A: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """``G0[q, i] = g_q(Y_i)`` through the Gram matrix of the outputs (column blocks)."""
        n = Y.shape[0]
        sq = np.einsum("ij,ij->i", Y, Y)
        G0 = np.empty((A.shape[0], n))
        step = max(1, min(n, 4_000_000 // max(n, 1)))
        inv = 1.0 / (2.0 * self.sigma ** 2)
        for j0 in range(0, n, step):
            j1 = min(n, j0 + step)
            D = sq[:, None] + sq[None, j0:j1] - 2.0 * (Y @ Y[j0:j1].T)
            np.maximum(D, 0.0, out=D)
            D[np.arange(j0, j1), np.arange(j1 - j0)] = 0.0
            G0[:, j0:j1] = A @ np.exp(-D * inv)
        return G0

    def weighted_decode(self, alpha, Y) -> np.ndarray:
        """``argmax_y sum_i alpha_i k(y, Y_i)`` over the simplex by restarted pre-image / projected
        gradient ascent (class notes): a local method, the best point found.  ``alpha`` is
        ``(n_train,)`` (returns ``(d,)``) or ``(n, n_train)`` (returns ``(n, d)``); ``Y`` is
        ``(n_train, d)``."""
        Y, A, single = self._training(alpha, Y)
        G0 = self._g_at_training(A, Y)
        out = np.empty((A.shape[0], self.d))
        iters = np.empty(A.shape[0], dtype=np.int64)
        K.gauss_decode_batch(A, Y, G0, self.sigma, self.n_restarts, self.max_iter, self.tol, out, iters)
        log.debug("%r: decoded %d queries, %.1f ascent iterations per query on average",
                  self, A.shape[0], float(iters.mean()))
        return out[0] if single else out
