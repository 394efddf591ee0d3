"""Permutation output space: label ranking and matching (M4N Example 2.2, Appendix G.3).

An output is a permutation of ``M`` labels stored as an int64 array ``y`` of length
``M`` with ``y[j]`` = rank position of label ``j`` (0 = top), as the data layer stores
label rankings.  The embedding is the permutation matrix ``P_y`` (``P[j, y[j]] = 1``)
flattened row-major, so ``k = M^2`` and a score ``v`` is a flattened ``(M, M)`` matrix
with ``v[j * M + r]`` = score of putting label ``j`` at position ``r``.

Loss: normalised Hamming ``L(y, y') = (1/M) sum_j 1[y_j != y'_j] = 1 - <P_y, P_y'>/M``,
i.e. ``A = -I/M`` and the constant ``a = 1`` (``loss_offset``).  The marginal polytope
is the Birkhoff polytope of doubly stochastic matrices.

Oracles: ``decode`` / ``loss_augmented`` / ``bayes_decode`` by the Hungarian algorithm
(:func:`scipy.optimize.linear_sum_assignment`); ``top_k`` by Murty's ranking of assignments
(:mod:`structpred.outputs.assignment_kbest`), which gives Casimir's top-K smoothing on rankings;
``max_min_exact`` by the adversarial bipartite matching game's linear program
(:mod:`structpred.outputs.permutation_game`), which gives AGM on rankings; ``max_min`` by SP-MP (M4N Algorithm 2)
with the entropy of the marginals (M4N eq. 38) whose projections are log-domain
Sinkhorn iterations (numba).  Marginal inference (the :class:`Marginals` capability) needs
the permanent, which is #P-hard (M4N §5.3): the space does not offer it, so there is no
CRF on it.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from structpred.errors import StructpredError
from structpred.outputs import _permutation_kernels as K
from structpred.outputs.assignment_kbest import k_best_assignments
from structpred.outputs.base import (
    AffineLoss,
    ExactMaxMin,
    LossAugmented,
    Marginals,
    MaxMin,
    MaxMinResult,
    OutputSpace,
    TopK,
    as_int_labels,
)
from structpred.outputs.permutation_game import solve_game

_NO_MARGINALS = (
    "marginal inference on permutations (the exp oracle: marginals / log-partition of "
    "p(y) ∝ exp <P_y, v>) needs the permanent of an M x M matrix, which is #P-hard "
    "(Valiant 1979; M4N §5.3, App. G.3): no CRF is defined on the Permutation space; "
    "use M3N (BCFW) or M4N (GBCFW + SP-MP with Sinkhorn projections)"
)


def _assign_max(S: np.ndarray) -> np.ndarray:
    """``argmax_y sum_j S[j, y_j]`` over permutations: ``y[j]`` = column of row ``j``."""
    _, col = linear_sum_assignment(S, maximize=True)
    return col.astype(np.int64)


class Permutation(OutputSpace, LossAugmented, TopK, MaxMin, ExactMaxMin, AffineLoss):
    """Permutations of ``M`` labels with the normalised Hamming loss.

    Parameters
    ----------
    M : number of labels (``M >= 2``).
    sinkhorn_max_iter : cap on the Sinkhorn sweeps (one row + one column normalisation)
        per KL projection inside SP-MP (default 1000).  The potentials are warm started
        from the previous projection of the same kind, so at moderate scores a projection
        takes a few sweeps; the cap only binds on very peaked iterates.
    sinkhorn_tol : max-norm error of the marginals at which a projection stops; ``None``
        (default) derives it per score from the SP-MP rate, so that the rounding of
        inexact projections costs at most a tenth of the certified gap
        ``4 log(M) / K``: ``tol = 0.1 (4 log(M) / K) / (4 M (max|v| + 1/M))`` (rounding
        moves a pair by ``<= 4 M tol`` in l1, and the bilinear value by at most
        ``max|v| + 1/M`` per unit of l1).  A fixed number of sweeps (the reference code's
        ``sink_iter = 10``) lets the gap grow with the score scale: M = 5, scale 500,
        K = 1000 gave a gap of 53 against the rate's 0.006.

    Notes
    -----
    SP-MP step size (M4N Theorem G.1).  On the Birkhoff polytope every entry is ``<= 1``,
    so the negative entropy of the marginals ``sum P log P`` has Hessian
    ``diag(1/P) >= I``: it is 1-strongly convex w.r.t. the Frobenius norm, with range
    ``R^2 = max H - min H = M log M`` (uniform matrix vs a permutation).  The bilinear
    term ``-<Q, P>/M`` has ``beta_12 = beta_21 = ||A||_2 = 1/M`` and ``beta_11 = beta_22 = 0``,
    so ``L = R^2 / M = log M``.  With the distance-generating function normalised by
    ``R^2`` and ``eta = 1/(2L)`` (Theorem G.1), the step on the raw entropy is
    ``eta_raw = R^2 / (2L) = M / 2``, and the averaged pair has gap ``<= 4 log(M) / K`` when
    the projections are exact.  The reported ``gap`` (upper minus lower value of feasible,
    rounded pairs) is always a true bound on the pair's duality gap; it stays within the rate
    (plus its ``RATE_FRACTION``) while every Sinkhorn projection reaches ``sinkhorn_tol``.  When
    the sweep cap binds instead (very peaked iterates: scores of scale ~500), rounding costs more
    and the gap can exceed the rate: 1.18 x at M = 5, K = 1000 (``tests/test_permutation.py``);
    raise ``sinkhorn_max_iter`` to bring it back under.
    This is the step of the reference code (``eta = 1/2`` on the unscaled matrix ``P``,
    i.e. ``M/2`` on the gradient ``P/M``).  ``lipschitz`` holds ``L``.

    Warm start state (``MaxMinResult.state`` and the ``warm`` argument): a pair of
    arrays, one per player, whose rows are ``[log P (M^2) | Sinkhorn potentials (4M)]``
    (``f, g`` of the half-step and of the full-step projection).
    """

    name = "permutation"
    loss_offset = 1.0
    unsupported = {Marginals: _NO_MARGINALS}

    #: fraction of the SP-MP rate that inexact projections may cost (``sinkhorn_tol=None``)
    RATE_FRACTION = 0.1

    def __init__(self, M: int, sinkhorn_max_iter: int = 1000, sinkhorn_tol: float | None = None):
        try:
            M_int = int(M)
        except (TypeError, ValueError):
            raise StructpredError(f"M must be an integer >= 2, got {M!r}") from None
        if M_int != M or M_int < 2:
            raise StructpredError(f"M must be an integer >= 2, got {M!r}")
        self.M = M_int
        self.sinkhorn_max_iter = int(sinkhorn_max_iter)
        self.sinkhorn_tol = None if sinkhorn_tol is None else float(sinkhorn_tol)
        if self.sinkhorn_max_iter < 1 or not (self.sinkhorn_tol is None or self.sinkhorn_tol >= 0):
            raise StructpredError("sinkhorn_max_iter must be >= 1 and sinkhorn_tol >= 0 (or None)")
        self.eta = self.M / 2.0
        self.lipschitz = float(np.log(self.M))

    def __repr__(self) -> str:
        return f"Permutation(M={self.M})"

    # --- basic ---------------------------------------------------------------------
    @property
    def n_labels(self) -> int:
        return self.M

    @property
    def k(self) -> int:
        """Embedding dimension ``M^2`` (the width of scores and of the weight matrix)."""
        return self.M * self.M

    @property
    def embedding_dim(self) -> int:
        return self.M * self.M

    @property
    def label_shape(self) -> tuple:
        return (self.M,)

    @property
    def loss_matrix(self) -> np.ndarray:
        """``A = -I/M`` (``k x k``); the loss is ``phi(y)^T A phi(y') + loss_offset``."""
        return -np.eye(self.k) / self.M

    def check_labels(self, y) -> np.ndarray:
        """Validate rankings: shape ``(M,)`` or ``(n, M)``, each row a permutation of 0..M-1."""
        y = as_int_labels(y, "rankings")
        if y.ndim not in (1, 2) or y.shape[-1] != self.M:
            raise StructpredError(
                f"rankings must have shape ({self.M},) or (n, {self.M}) for M={self.M}, got {y.shape}")
        y2 = y.reshape(-1, self.M)
        if y2.size and not np.array_equal(np.sort(y2, axis=1), np.broadcast_to(np.arange(self.M), y2.shape)):
            bad = int(np.flatnonzero(np.any(np.sort(y2, axis=1) != np.arange(self.M), axis=1))[0])
            raise StructpredError(
                f"ranking row {bad} is not a permutation of 0..{self.M - 1}: {y2[bad].tolist()}")
        return y

    def _scores(self, v) -> tuple[np.ndarray, bool]:
        v = np.asarray(v, dtype=np.float64)
        single = v.ndim == 1
        v2 = np.atleast_2d(v)
        if v2.ndim != 2 or v2.shape[1] != self.k:
            raise StructpredError(f"scores must have shape (k,) or (n, k) with k=M^2={self.k}, got {v.shape}")
        if not np.all(np.isfinite(v2)):
            raise StructpredError("scores contain NaN or infinite values")
        return v2, single

    def embed(self, y) -> np.ndarray:
        y = self.check_labels(y)
        single = y.ndim == 1
        y2 = y.reshape(-1, self.M)
        out = np.zeros((y2.shape[0], self.k))
        out[np.arange(y2.shape[0])[:, None], np.arange(self.M) * self.M + y2] = 1.0
        return out[0] if single else out

    def loss(self, y, y2) -> np.ndarray:
        """Normalised Hamming ``mean_j 1[y_j != y2_j]``, broadcast over rows."""
        return np.mean(self.check_labels(y) != self.check_labels(y2), axis=-1)

    def linear_loss(self, y, mu) -> np.ndarray:
        """``phi(y_i)^T A mu_i = -<P_{y_i}, mu_i>/M`` row-wise (add ``loss_offset`` for the loss)."""
        y = self.check_labels(y).reshape(-1, self.M)
        mu = np.atleast_2d(mu)
        return -mu[np.arange(y.shape[0])[:, None], np.arange(self.M) * self.M + y].sum(1) / self.M

    def loss_scores(self, y) -> np.ndarray:
        """``A^T phi(y_i) = -P_{y_i} / M`` row-wise."""
        return -np.atleast_2d(self.embed(y)) / self.M

    def min_loss(self, mu) -> np.ndarray:
        """``min_y' phi(y')^T A mu_i = -max_y' <P_y', mu_i>/M`` row-wise (Hungarian)."""
        mu = np.atleast_2d(np.asarray(mu, dtype=np.float64))
        M = self.M
        out = np.empty(mu.shape[0])
        for i in range(mu.shape[0]):
            S = mu[i].reshape(M, M)
            out[i] = -S[np.arange(M), _assign_max(S)].sum() / M
        return out

    # --- oracles --------------------------------------------------------------------
    def decode(self, v) -> np.ndarray:
        """``argmax_y <P_y, v>``: linear assignment (Hungarian), ``(n, M)`` rankings."""
        v2, single = self._scores(v)
        M = self.M
        out = np.empty((v2.shape[0], M), dtype=np.int64)
        for i in range(v2.shape[0]):
            out[i] = _assign_max(v2[i].reshape(M, M))
        return out[0] if single else out

    def loss_augmented(self, v, y) -> np.ndarray:
        """``argmax_y' L(y, y') + <P_y', v>`` = assignment on ``v - P_y / M``."""
        v2, single = self._scores(v)
        y = self.check_labels(y).reshape(-1, self.M)
        if y.shape[0] != v2.shape[0]:
            raise StructpredError(f"{v2.shape[0]} scores but {y.shape[0]} rankings")
        M = self.M
        out = np.empty((v2.shape[0], M), dtype=np.int64)
        rows = np.arange(M)
        for i in range(v2.shape[0]):
            S = v2[i].reshape(M, M).copy()
            S[rows, y[i]] -= 1.0 / M
            out[i] = _assign_max(S)
        return out[0] if single else out

    def top_k(self, v, y, K: int):
        """The ``K`` rankings of largest ``<P_y', v> + L(y, y')`` (``y=None``: without the loss) in
        decreasing order, by Murty's ranking of the assignments on ``v - P_y / M`` (the loss is
        ``1 - <P_y, P_y'> / M``): ``(Y (K', M) int64, scores (K',))`` with ``K' = min(K, M!)`` for
        one score, a list of them for a batch."""
        v2, single = self._scores(v)
        K = int(K)
        if K < 1:
            raise StructpredError(f"K must be >= 1, got {K}")
        M = self.M
        lab = None if y is None else self.check_labels(y).reshape(-1, M)
        if lab is not None and lab.shape[0] != v2.shape[0]:
            raise StructpredError(f"{v2.shape[0]} scores but {lab.shape[0]} rankings")
        out = []
        for i in range(v2.shape[0]):
            S = v2[i].reshape(M, M).copy()
            if lab is not None:
                S[np.arange(M), lab[i]] -= 1.0 / M
            Y, scores = k_best_assignments(S, K)
            out.append((Y, scores + (self.loss_offset if lab is not None else 0.0)))
        return out[0] if single else out

    def bayes_decode(self, m) -> np.ndarray:
        """``argmin_y' sum_y m(y) L(y, y') = argmax_y' <P_y', m>`` for marginals ``m`` in the
        Birkhoff polytope (linear assignment).  Tractable given ``m``; only computing
        ``m`` from scores (``marginals``) is #P-hard."""
        m2, single = self._scores(m)
        out = self.decode(m2)
        return out[0] if single else out

    def max_min_exact(self, v, warm=None, tol: float = 1e-9, max_iter: int = 1000) -> MaxMinResult:
        """``max_P min_Q -<Q, P>/M + <v, P>`` over the Birkhoff polytope exactly: the adversarial
        bipartite matching game (Fathony et al., ICML 2018) as a linear program with the
        permutations' constraints generated by the Hungarian algorithm
        (:func:`structpred.outputs.permutation_game.solve_game`).  ``value`` (at ``mu``) and
        ``upper`` (at ``nu``) are exact bounds, within ``tol`` at convergence; ``state`` is the
        working set of permutations (one list per score), the next call's ``warm``."""
        v2, single = self._scores(v)
        n, M = v2.shape[0], self.M
        warm = [None] * n if warm is None else ([warm] if single else list(warm))
        if len(warm) != n:
            raise StructpredError(f"{n} scores but {len(warm)} warm states")
        mu, nu = np.empty((n, self.k)), np.empty((n, self.k))
        lo, up, states = np.empty(n), np.empty(n), []
        for i in range(n):
            Q, N, lo[i], up[i], kept = solve_game(v2[i].reshape(M, M), warm[i], tol, max_iter)
            mu[i], nu[i] = Q.ravel(), N.ravel()
            states.append(kept)
        gap = np.maximum(up - lo, 0.0)
        if single:
            return MaxMinResult(mu[0], nu[0], gap[0], lo[0], up[0], states[0])
        return MaxMinResult(mu, nu, gap, lo, up, states)

    # --- max-min oracle ----------------------------------------------------------------
    @property
    def state_width(self) -> int:
        return self.k + 4 * self.M

    def init_maxmin_state(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Uniform doubly stochastic start ``P = Q = 11^T/M`` and zero Sinkhorn potentials."""
        s = np.zeros((int(n), self.state_width))
        s[:, : self.k] = -np.log(self.M)
        return s, s.copy()

    def mix_warm_state(self, lmu, lnu, eps: float) -> None:
        """In place ``P <- (1 - eps) P + eps 11^T/M`` for both players (potentials kept)."""
        M = self.M
        for s in (lmu, lnu):
            K.mix_uniform(s[: self.k].reshape(M, M), float(eps))

    def _split_state(self, s, n):
        M = self.M
        s = np.array(np.atleast_2d(s), dtype=np.float64, order="C")
        if s.shape != (n, self.state_width):
            raise StructpredError(
                f"warm state rows must have shape ({n}, {self.state_width}) = (n, M^2 + 4M), got {s.shape}")
        return s, s[:, : self.k].reshape(n, M, M), s[:, self.k:].reshape(n, 4, M)

    def projection_tol(self, V3: np.ndarray, n_iter: int) -> np.ndarray:
        """Per-score Sinkhorn tolerance (see ``sinkhorn_tol`` in the class notes)."""
        n = V3.shape[0]
        if self.sinkhorn_tol is not None:
            return np.full(n, self.sinkhorn_tol)
        rate = 4.0 * np.log(self.M) / max(int(n_iter), 1)
        scale = np.abs(V3).reshape(n, -1).max(axis=1) + 1.0 / self.M
        return self.RATE_FRACTION * rate / (4.0 * self.M * scale)

    def max_min(self, v, warm=None, n_iter: int = 20) -> MaxMinResult:
        """SP-MP for ``max_P min_Q -<Q, P>/M + <v, P>`` over the Birkhoff polytope (M4N eq. 37).

        The constant ``a = loss_offset`` is *not* included: the M4N surrogate value is
        ``value + loss_offset - <v, phi(y)>``.  ``warm`` is the ``state`` of a previous
        result (log iterates and Sinkhorn potentials, see the class notes) or None for
        the uniform start.  The returned averaged pair is exactly doubly stochastic
        (rounded, :func:`round_birkhoff`); ``upper = max_P <v - Q_bar/M, P>`` and
        ``value = min_Q -<Q, P_bar>/M + <v, P_bar>`` are computed exactly by the
        Hungarian algorithm (a linear function over the Birkhoff polytope is maximised
        at a permutation), so ``gap = upper - value`` is the exact duality gap.
        """
        v2, single = self._scores(v)
        n, M = v2.shape[0], self.M
        n_iter = int(n_iter)
        if n_iter < 0:
            raise StructpredError("n_iter must be >= 0")
        if warm is None:
            smu, snu = self.init_maxmin_state(n)
        else:
            smu, snu = warm
        smu, lP, potP = self._split_state(smu, n)
        snu, lQ, potQ = self._split_state(snu, n)
        V3 = np.ascontiguousarray(v2.reshape(n, M, M))
        PB = np.empty((n, M, M))
        QB = np.empty((n, M, M))
        K.spmp_batch(V3, self.eta, n_iter, self.sinkhorn_max_iter, self.projection_tol(V3, n_iter),
                     lP, lQ, potP, potQ, PB, QB)
        lo = np.empty(n)
        up = np.empty(n)
        rows = np.arange(M)
        for i in range(n):
            S = V3[i] - QB[i] / M
            up[i] = S[rows, _assign_max(S)].sum()
            lo[i] = -PB[i][rows, _assign_max(PB[i])].sum() / M + float(np.sum(V3[i] * PB[i]))
        mu = PB.reshape(n, self.k)
        nu = QB.reshape(n, self.k)
        gap = up - lo
        if single:
            return MaxMinResult(mu[0], nu[0], gap[0], lo[0], up[0], (smu[0], snu[0]))
        return MaxMinResult(mu, nu, gap, lo, up, (smu, snu))
