"""Pairwise ranking output space: rankings of ``M`` items scored against ratings (QS §6, "Ranking
Movies", eq. 22; loss of Duchi, Mackey and Jordan 2010).

Truths are rating vectors ``r`` (float, ``r[j] > 0`` the rating of item ``j``, ``0`` = not
rated; MovieLens ratings are 1..5); predictions are rankings ``y`` given as rank positions
(int64, ``y[j]`` = position of item ``j``, 0 = top), as :class:`~structpred.outputs.Permutation`
stores them.

Loss (truth first): ``L(r, y) = (1/Z(r)) sum_{j,k rated, r_j > r_k} (r_j - r_k) 1[y_j > y_k]``
(QS eq. 22), the rating difference of every rated pair the ranking puts in the wrong order,
with ``Z(r) = sum_{j,k rated, r_j > r_k} (r_j - r_k)`` (``normalize=True``: ``L`` in [0, 1],
0 when ``r`` has fewer than two distinct ratings) or ``Z = 1``.  With the pair costs
``c(r)[j, k] = (r_j - r_k)_+ / Z(r)`` (both rated), ``L(r, y) = sum_{j,k} c[j, k] 1[y_j > y_k]``.

Loss-trick decoding (QS eq. 2): ``argmin_y sum_i alpha_i L(R_i, y) = argmin_y sum_{j,k} C[j, k]
1[y_j > y_k]`` with ``C = sum_i alpha_i c(R_i)``.  Each pair is ordered one way or the other, so
only the net weights ``D = C - C^T``, ``D[j, k] = sum_i (alpha_i / Z_i) (r_ij - r_ik)`` over the
rows rating both items, matter (``D[j, k] > 0``: ``j`` should come before ``k``): a weighted
linear ordering / feedback arc set problem.  Its argmin is NP-hard (Duchi et al. 2010), so the
decoder is a heuristic, the one the QS paper uses: the greedy FAS order of Eades, Lin and Smyth
(1993) for weighted arcs (:func:`structpred.outputs._ranking_kernels.fas_order`, ``O(M^2)``),
exact when the positive net weights are acyclic (e.g. one training output, or weights
consistent with a total order).  ``D`` is accumulated from the rated entries only (``sum_i
m_i^2 / 2`` operations for ``m_i`` rated items in training row ``i``), never from ``n_train``
full ``(M, M)`` cost matrices.
"""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError
from structpred.outputs import _ranking_kernels as K
from structpred.outputs.base import LossSpace, WeightedDecoding, as_weights
from structpred.outputs.permutation import Permutation

#: greedy weighted FAS order of antisymmetric net weights (Eades, Lin and Smyth 1993)
fas_order = K.fas_order
#: positions ``y[order[p]] = p`` of an order
order_to_positions = K.order_to_positions


def linear_order_value(C, y) -> float:
    """``sum_{j,k} C[j, k] 1[y_j > y_k]`` for positions ``y``: the decoding objective
    ``sum_i alpha_i L(R_i, y)`` for ``C = sum_i alpha_i c(R_i)`` (see
    :meth:`PairwiseRanking.pair_costs`), the backward net weight for ``D = C - C^T``."""
    C = np.ascontiguousarray(C, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.int64)
    if C.ndim != 2 or C.shape[0] != C.shape[1] or y.shape != (C.shape[0],):
        raise StructpredError(f"linear_order_value needs an (M, M) matrix and M positions, got "
                              f"{C.shape} and {y.shape}")
    return float(K.linear_order_value(C, y))


class PairwiseRanking(LossSpace, WeightedDecoding):
    """Rankings of ``M`` items against rating vectors, with the pairwise disagreement loss.

    ``L(r, y) = (1/Z(r)) sum_{j,k rated, r_j > r_k} (r_j - r_k) 1[y_j > y_k]`` (QS eq. 22;
    Duchi et al. 2010), ``Z(r)`` the same sum without the indicator (``normalize=True``, loss in
    [0, 1]; ``Z = 0`` gives 0) or 1.  ``weighted_decode`` is the QS prediction by the greedy
    feedback-arc-set heuristic of Eades et al. (1993), as in the QS paper: the exact argmin is
    NP-hard (Duchi et al. 2010).  See the module docstring.

    Parameters
    ----------
    M : number of items (``M >= 2``).
    normalize : divide by ``Z(r)`` (default True).
    """

    name = "pairwise-ranking"

    def __init__(self, M: int, normalize: bool = True):
        self._perm = Permutation(M)  # checks M; its check_labels validates rankings
        self.M = self._perm.M
        self.normalize = bool(normalize)

    def __repr__(self) -> str:
        return f"PairwiseRanking(M={self.M})" if self.normalize else f"PairwiseRanking(M={self.M}, normalize=False)"

    @property
    def n_labels(self) -> int:
        """Number of items being ranked."""
        return self.M

    @property
    def label_shape(self) -> tuple:
        return (self.M,)

    # --- checks ------------------------------------------------------------------------
    def check_labels(self, r) -> np.ndarray:
        """Validate rating vectors: shape ``(M,)`` or ``(n, M)``, finite, ``>= 0`` (0 = not rated);
        returns them as float64."""
        a = np.asarray(r)
        if a.dtype.kind not in "iuf":
            raise StructpredError(f"ratings must be numbers, got dtype {a.dtype}")
        a = a.astype(np.float64)
        if a.ndim not in (1, 2) or a.shape[-1] != self.M:
            raise StructpredError(f"ratings must have shape ({self.M},) or (n, {self.M}) for M={self.M}, "
                                  f"got {a.shape}")
        if not np.all(np.isfinite(a)):
            raise StructpredError("ratings contain NaN or infinite values")
        if np.any(a < 0):
            raise StructpredError(f"ratings must be >= 0 (0 = not rated), got minimum {a.min():g}")
        return a

    def check_rankings(self, y) -> np.ndarray:
        """Validate rankings (rank positions): shape ``(M,)`` or ``(n, M)``, each row a permutation
        of 0..M-1; returns them as int64."""
        return self._perm.check_labels(y)

    def _rows(self, r, y):
        """Ratings and rankings broadcast to ``(n, M)`` C-contiguous arrays, and whether both were 1-d."""
        r = self.check_labels(r)
        y = self.check_rankings(y)
        single = r.ndim == 1 and y.ndim == 1
        r2, y2 = np.atleast_2d(r), np.atleast_2d(y)
        if r2.shape[0] != y2.shape[0] and 1 not in (r2.shape[0], y2.shape[0]):
            raise StructpredError(f"{r2.shape[0]} rating vectors but {y2.shape[0]} rankings")
        n = max(r2.shape[0], y2.shape[0])
        return (np.ascontiguousarray(np.broadcast_to(r2, (n, self.M))),
                np.ascontiguousarray(np.broadcast_to(y2, (n, self.M))), single)

    # --- loss -------------------------------------------------------------------------
    def loss(self, r, y) -> np.ndarray:
        """``L(r, y)`` (QS eq. 22), truth ``r`` first; broadcast over rows (a single pair gives a 0-d value)."""
        R, Y, single = self._rows(r, y)
        out = np.empty(R.shape[0])
        K.pair_loss_rows(R, Y, self.normalize, out)
        return out[0] if single else out

    def normalizer(self, r) -> np.ndarray:
        """``Z(r)`` row-wise (``1`` without ``normalize``); 0 when fewer than two distinct ratings."""
        r = self.check_labels(r)
        R = np.ascontiguousarray(np.atleast_2d(r))
        z = np.empty(R.shape[0])
        if self.normalize:
            K.normalizers(R, z)
        else:
            z[:] = 1.0
        return z[0] if r.ndim == 1 else z

    def pair_costs(self, r) -> np.ndarray:
        """``c[j, k] = (r_j - r_k)_+ / Z(r)`` for ``j, k`` both rated (else 0), so that
        ``L(r, y) = sum_{j,k} c[j, k] 1[y_j > y_k]``; ``(M, M)`` or ``(n, M, M)``."""
        r = self.check_labels(r)
        R = np.atleast_2d(r)
        z = np.atleast_1d(self.normalizer(R))
        rated = R > 0
        diff = np.maximum(R[:, :, None] - R[:, None, :], 0.0) * (rated[:, :, None] & rated[:, None, :])
        inv = np.divide(1.0, z, out=np.zeros_like(z), where=z > 0)
        c = diff * inv[:, None, None]
        return c[0] if r.ndim == 1 else c

    # --- loss-trick decoding -------------------------------------------------------------
    def _training(self, alpha, R):
        R = np.ascontiguousarray(np.atleast_2d(self.check_labels(R)))
        a, single = as_weights(alpha, R.shape[0])
        z = np.atleast_1d(self.normalizer(R))
        inv = np.divide(1.0, z, out=np.zeros_like(z), where=z > 0)
        return R, np.ascontiguousarray(a * inv[None, :]), single

    def net_weights(self, alpha, R) -> np.ndarray:
        """``D = C - C^T`` for ``C = sum_i alpha_i c(R_i)``: ``D[j, k] = sum_i (alpha_i / Z_i)
        (r_ij - r_ik)`` over the training rows rating both ``j`` and ``k``; ``(M, M)`` or
        ``(n, M, M)`` for ``alpha`` of shape ``(n_train,)`` or ``(n, n_train)``."""
        R, W, single = self._training(alpha, R)
        idx, val, offs = K.rated_lists(R)
        D = np.empty((W.shape[0], self.M, self.M))
        for q in range(W.shape[0]):
            K.net_weights(idx, val, offs, W[q], D[q])
        return D[0] if single else D

    def weighted_decode(self, alpha, R) -> np.ndarray:
        """QS prediction ``argmin_y sum_i alpha_i L(R_i, y)`` (QS eq. 2), by the greedy FAS heuristic
        (Eades et al. 1993) on the net weights (:meth:`net_weights`): exact when they are
        acyclic, else an approximation (the argmin is NP-hard).  ``alpha`` of any sign, shape
        ``(n_train,)`` or ``(n, n_train)``; returns positions ``(M,)`` or ``(n, M)``."""
        R, W, single = self._training(alpha, R)
        idx, val, offs = K.rated_lists(R)
        out = np.empty((W.shape[0], self.M), dtype=np.int64)
        K.decode_rows(idx, val, offs, W, out)
        return out[0] if single else out
