"""Chain output space: label sequences with unary and adjacent pairwise factors (M4N Ex. 2.1, App. G.2).

An output is an int64 array ``y`` of length ``T >= 1`` with labels in ``0..R-1``; a batch is
a list of such arrays (lengths may differ).  The embedding of M4N App. G.2 is
``phi(y) = (e_{y_1}, ..., e_{y_T}, e_{y_1 y_2}, ..., e_{y_{T-1} y_T})``, flattened as
``[unary (T, R) | pairwise (T-1, R, R)]`` row-major, so a score ``v`` (and a marginal
vector ``mu``) of a length-``T`` chain has ``T R + (T-1) R^2`` entries and
``<phi(y), v> = sum_t U[t, y_t] + sum_t P[t, y_t, y_{t+1}]``.  Scores of a batch are a
list of such vectors.

Loss: separable, ``L(y, y') = sum_t w_t C[y_t, y'_t] / sum_t w_t`` with a node loss matrix
``C`` (row = truth) and per-position weights ``w_t`` (uniform by default: the normalised
Hamming loss for ``C = 1 - I``; ``weights="position"`` gives ``w_t = t`` for t = 1..T,
AGM §4.1); ``normalize=False`` drops the division (Casimir's Hamming loss: the number of
wrong tokens).  In the affine form ``L = phi(y)^T A phi(y')`` only the unary blocks of ``A``
are non-zero (``A_tt = w_t C / sum w``), ``loss_offset = 0``.
"""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError
from structpred.outputs import _chain_kernels as K_
from structpred.outputs.base import (
    AffineLoss,
    LossAugmented,
    Marginals,
    MaxMin,
    MaxMinResult,
    OutputSpace,
    TopK,
    as_int_labels,
)
from structpred.outputs.batch import is_ragged

NODE_LOSSES = ("hamming", "zero_one", "absolute", "squared")


def node_loss_matrix(name: str, R: int) -> np.ndarray:
    """``R x R`` node loss: ``hamming`` / ``zero_one`` ``1[i != j]``, ``absolute`` ``|i - j|``,
    ``squared`` ``(i - j)^2`` (labels as ordered integers)."""
    i = np.arange(R)
    d = i[:, None] - i[None, :]
    if name in ("hamming", "zero_one"):
        return (d != 0).astype(np.float64)
    if name == "absolute":
        return np.abs(d).astype(np.float64)
    if name == "squared":
        return (d * d).astype(np.float64)
    raise StructpredError(f"unknown node loss {name!r}: use one of {', '.join(NODE_LOSSES)} or an R x R matrix")


class Chain(OutputSpace, LossAugmented, TopK, Marginals, MaxMin, AffineLoss):
    """Sequences over ``n_labels`` labels with a separable, position-weighted node loss.

    Parameters
    ----------
    n_labels : number of labels ``R >= 2``.
    node_loss : ``R x R`` matrix (row = true label) or a name in :data:`NODE_LOSSES`.
    weights : ``None`` (uniform), ``"position"`` (``w_t = t``), or a callable ``T -> (T,)``
        of positive weights.
    normalize : divide the loss by ``sum_t w_t`` (default); ``False``: ``sum_t w_t C[y_t, y'_t]``.
    joint_map : the joint feature map the solvers build for this space (``"sequence"``: per-position
        features and one transition matrix; ``"hashed_window"``: Casimir's hashed NER features).
    iterations_per_node : if true (default), ``max_min(v, n_iter=K)`` runs ``K * T``
        SP-MP iterations on a length-``T`` chain ("10 x the length of the sequence",
        M4N §6); otherwise exactly ``K``.

    Notes
    -----
    SP-MP step (M4N App. G.2, as for :class:`Multiclass`): ``eta = 1 / (2 max_t max_ij
    |A_t[i, j]|)`` on the raw entropies, i.e. ``T / 2`` for the normalised Hamming loss
    (the reference code uses ``1 / (2 max C)`` on the unnormalised node loss, the same
    step relative to the loss term).

    Warm-start state (``MaxMinResult.state``): a pair ``(theta, log_nu)``: the natural
    parameters of the ``mu`` iterate (layout of a score) and the log-probabilities of the
    ``nu`` iterate ``(T R,)``; ``None`` entries mean a cold start.
    """

    name = "chain"
    ragged = True
    joint_map = "sequence"

    def __init__(self, n_labels: int, node_loss="hamming", weights=None, iterations_per_node: bool = True,
                 normalize: bool = True, joint_map: str = "sequence"):
        try:
            R = int(n_labels)
        except (TypeError, ValueError):
            raise StructpredError(f"n_labels must be an integer >= 2, got {n_labels!r}") from None
        if R != n_labels or R < 2:
            raise StructpredError(f"n_labels must be an integer >= 2, got {n_labels!r}")
        self.R = R
        if isinstance(node_loss, str):
            C = node_loss_matrix(node_loss, R)
            self.node_loss_name = node_loss
        else:
            C = np.asarray(node_loss, dtype=np.float64)
            self.node_loss_name = "matrix"
        if C.shape != (R, R) or not np.all(np.isfinite(C)):
            raise StructpredError(f"node_loss must be a finite {R} x {R} matrix, got shape {C.shape}")
        self.node_loss = np.ascontiguousarray(C)
        if not (weights is None or (isinstance(weights, str) and weights == "position") or callable(weights)):
            raise StructpredError(f"weights must be None, 'position' or a callable T -> (T,), got {weights!r}")
        self.weights = weights
        self.iterations_per_node = bool(iterations_per_node)
        self.normalize = bool(normalize)
        self.joint_map = joint_map
        self._cmax = float(np.max(np.abs(C))) or 1.0
        self._kind = 1 if np.array_equal(C, 1.0 - np.eye(R)) else 0
        self._weights_cache: dict[int, np.ndarray] = {}

    def __repr__(self) -> str:
        w = "uniform" if self.weights is None else ("position" if isinstance(self.weights, str) else "custom")
        scale = "" if self.normalize else ", normalize=False"
        return f"Chain(n_labels={self.R}, node_loss={self.node_loss_name}, weights={w}{scale})"

    # --- layout ----------------------------------------------------------------------
    @property
    def n_labels(self) -> int:
        return self.R

    @property
    def embedding_dim(self) -> int:
        raise StructpredError("a chain's embedding dimension depends on its length: use dim(T)")

    @property
    def label_shape(self) -> tuple:
        return (None,)

    def dim(self, T: int) -> int:
        """``T R + (T-1) R^2``: size of a score / embedding of a length-``T`` chain."""
        return T * self.R + (T - 1) * self.R * self.R

    def length(self, v) -> int:
        """``T`` of a flat score vector (inverse of :meth:`dim`)."""
        R = self.R
        n = np.asarray(v).shape[0]
        T, rem = divmod(n + R * R, R + R * R)
        if rem or T < 1:
            raise StructpredError(f"a chain score over {R} labels has T*R + (T-1)*R^2 entries; got {n}")
        return T

    def split(self, v):
        """Views ``(U (T, R), P (T-1, R, R))`` of a flat score or marginal vector."""
        v = np.asarray(v, dtype=np.float64)
        if v.ndim != 1:
            raise StructpredError(f"a chain score must be 1-d, got shape {v.shape}")
        T = self.length(v)
        R = self.R
        return v[: T * R].reshape(T, R), v[T * R:].reshape(T - 1, R, R)

    def position_weights(self, T: int) -> np.ndarray:
        """Weights ``w_t / sum w`` of a length-``T`` chain (``w_t`` if not ``normalize``), cached."""
        cached = self._weights_cache.get(T)
        if cached is None:
            cached = self._weights_cache[T] = self._position_weights(T)
        return cached

    def _position_weights(self, T: int) -> np.ndarray:
        if self.weights is None:
            w = np.ones(T)
        elif isinstance(self.weights, str):
            w = np.arange(1, T + 1, dtype=np.float64)
        else:
            w = np.asarray(self.weights(T), dtype=np.float64)
            if w.shape != (T,) or not np.all(w > 0):
                raise StructpredError(f"weights({T}) must be {T} positive numbers, got {w!r}")
        return w / w.sum() if self.normalize else w

    def weighted_loss(self, T: int) -> np.ndarray:
        """``(T, R, R)`` per-position loss blocks ``A_t = w_t C / sum w`` (or ``w_t C``)."""
        return np.ascontiguousarray(self.position_weights(T)[:, None, None] * self.node_loss[None])

    # --- batches -----------------------------------------------------------------------
    def _scores(self, v):
        U, P = self.split(v)
        if not (np.all(np.isfinite(U)) and np.all(np.isfinite(P))):
            raise StructpredError("scores contain NaN or infinite values")
        return np.ascontiguousarray(U), np.ascontiguousarray(P)

    def check_labels(self, y):
        """Validate one sequence ``(T,)`` or a list of them; returns int64 arrays."""
        if is_ragged(y):
            return [self.check_labels(s) for s in y]
        s = as_int_labels(y, "chain labels")
        if s.ndim != 1 or s.shape[0] < 1:
            raise StructpredError(f"a label sequence must be a non-empty 1-d array, got shape {s.shape}")
        if s.min() < 0 or s.max() >= self.R:
            raise StructpredError(f"chain labels must lie in 0..{self.R - 1}, got {s.min()}..{s.max()}")
        return s

    def _map(self, fn, *args):
        if is_ragged(args[0]):
            if len(args) > 1 and any(len(a) != len(args[0]) for a in args[1:]):
                raise StructpredError(f"batch sizes differ: {[len(a) for a in args]}")
            return [fn(*xs) for xs in zip(*args)]
        return fn(*args)

    # --- basic --------------------------------------------------------------------------
    def embed(self, y):
        def one(s):
            s = self.check_labels(s)
            T, R = s.shape[0], self.R
            out = np.zeros(self.dim(T))
            out[np.arange(T) * R + s] = 1.0
            if T > 1:
                out[T * R + np.arange(T - 1) * R * R + s[:-1] * R + s[1:]] = 1.0
            return out

        return self._map(one, y)

    def mean_embedding(self, Y, w):
        """``sum_k w_k phi(Y[k])`` for equal-length sequences ``Y (K, T)`` (compiled)."""
        Y = np.ascontiguousarray(Y, dtype=np.int64)
        out = np.empty(self.dim(Y.shape[1]))
        K_.weighted_embedding(Y, np.ascontiguousarray(w, dtype=np.float64), self.R, out)
        return out

    def loss(self, y, y2):
        """``sum_t w_t C[y_t, y2_t] / sum w``; a float, or an ``(n,)`` array for batches."""
        def one(a, b):
            a, b = self.check_labels(a), self.check_labels(b)
            if a.shape != b.shape:
                raise StructpredError(f"sequences of different lengths: {a.shape[0]} and {b.shape[0]}")
            return float(self.position_weights(a.shape[0]) @ self.node_loss[a, b])

        out = self._map(one, y, y2)
        return np.asarray(out) if is_ragged(y) else out

    def linear_loss(self, y, mu):
        """``phi(y)^T A mu = sum_t w_t (C mu_t)[y_t] / sum w`` per sequence."""
        def one(s, m):
            s = self.check_labels(s)
            Mu, _ = self.split(m)
            if Mu.shape[0] != s.shape[0]:
                raise StructpredError(f"labels of length {s.shape[0]} but marginals of length {Mu.shape[0]}")
            w = self.position_weights(s.shape[0])
            return float(np.sum(w * np.einsum("tj,tj->t", self.node_loss[s], Mu)))

        return np.atleast_1d(np.asarray(self._map(one, y, mu)))

    def loss_scores(self, y):
        """``A^T phi(y)``: ``w_t C[y_t, :]`` on the unary blocks, zero on the pairwise ones."""
        def one(s):
            s = self.check_labels(s)
            T = s.shape[0]
            out = np.zeros(self.dim(T))
            out[: T * self.R] = (self.position_weights(T)[:, None] * self.node_loss[s]).ravel()
            return out

        return self._map(one, y)

    def min_loss(self, mu):
        """``min_y' phi(y')^T A mu = sum_t w_t min_i (C mu_t)[i] / sum w`` per sequence."""
        def one(m):
            Mu, _ = self.split(m)
            return float(self.position_weights(Mu.shape[0]) @ np.min(Mu @ self.node_loss.T, axis=1))

        return np.atleast_1d(np.asarray(self._map(one, mu)))

    def entropy(self, mu):
        """Tree entropy ``sum_t H(mu_{t,t+1}) - sum_t (deg_t - 1) H(mu_t)`` (M4N App. G.2) of
        consistent chain marginals; per sequence."""
        def h(p):
            p = p[p > 0]
            return float(-np.sum(p * np.log(p)))

        def one(m):
            Mu, Pu = self.split(m)
            T = Mu.shape[0]
            if T == 1:
                return h(Mu[0])
            return sum(h(Pu[t]) for t in range(T - 1)) - sum(h(Mu[t]) for t in range(1, T - 1))

        return np.atleast_1d(np.asarray(self._map(one, mu)))

    def entropy_coefficients(self, mu) -> np.ndarray:
        """``c`` with ``entropy(mu) = -sum_j c_j mu_j log mu_j`` on one marginal vector: 1 on the
        pairwise blocks, ``-(deg_t - 1)`` on the unary blocks (``+1`` for a single node)."""
        T = self.length(mu)
        R = self.R
        c = np.ones(self.dim(T))
        node = c[: T * R].reshape(T, R)
        if T > 1:
            node[:] = -1.0
            node[0] = node[-1] = 0.0
        return c

    # --- oracles ------------------------------------------------------------------------
    def decode(self, v):
        """Viterbi ``argmax_y <phi(y), v>``."""
        def one(s):
            U, P = self._scores(s)
            out = np.empty(U.shape[0], dtype=np.int64)
            K_.viterbi(U, P, out)
            return out

        return self._map(one, v)

    def loss_augmented(self, v, y):
        """``argmax_y' L(y, y') + <phi(y'), v>``: Viterbi with ``A_t[y_t, :]`` added to the unaries."""
        def one(s, lab):
            U, P = self._scores(s)
            lab = self.check_labels(lab)
            if lab.shape[0] != U.shape[0]:
                raise StructpredError(f"score of length {U.shape[0]} but labels of length {lab.shape[0]}")
            Ua = U + self.position_weights(U.shape[0])[:, None] * self.node_loss[lab]
            out = np.empty(U.shape[0], dtype=np.int64)
            K_.viterbi(Ua, P, out)
            return out

        return self._map(one, v, y)

    def top_k(self, v, y, K: int):
        """The ``K`` outputs of largest ``<phi(y'), v> + L(y, y')`` (``y=None``: without the
        loss), in decreasing order, by list Viterbi (Casimir §4, top-K oracle): ``(Y (K', T)
        int64, scores (K',))`` with ``K' = min(K, R^T)``; a list of them for a batch."""
        K = int(K)
        if K < 1:
            raise StructpredError(f"K must be >= 1, got {K}")

        def one(s, lab):
            U, P = self._scores(s)
            if lab is not None:
                lab = self.check_labels(lab)
                if lab.shape[0] != U.shape[0]:
                    raise StructpredError(f"score of length {U.shape[0]} but labels of length {lab.shape[0]}")
                U = U + self.position_weights(U.shape[0])[:, None] * self.node_loss[lab]
            Y = np.zeros((K, U.shape[0]), dtype=np.int64)
            S = np.zeros(K)
            found = K_.top_k_viterbi(U, P, K, Y, S)
            return Y[:found], S[:found]

        if is_ragged(v):
            return self._map(one, v, [None] * len(v) if y is None else y)
        return one(v, y)

    def smoothed_top_k(self, v, y, K: int, mu: float):
        """``(value, gradient)`` of the top-K l2-smoothed hinge of one chain in one compiled call
        (the fast path of :class:`structpred.surrogates.TopKSmoothedHinge`)."""
        U, P = self._scores(v)
        y = self.check_labels(y)
        if y.shape[0] != U.shape[0]:
            raise StructpredError(f"score of length {U.shape[0]} but labels of length {y.shape[0]}")
        A = self.position_weights(U.shape[0])[:, None] * self.node_loss[y]
        grad = np.empty(self.dim(U.shape[0]))
        Y = np.zeros((K, U.shape[0]), dtype=np.int64)
        S = np.zeros(K)
        value = K_.smoothed_top_k(U, P, y, A, int(K), float(mu), grad, Y, S)
        return value, grad

    def marginals(self, v):
        """Sum-product: ``[unary (T, R) | pairwise (T-1, R, R)]`` marginals of ``p ∝ exp <phi, v>``."""
        def one(s):
            U, P = self._scores(s)
            T, R = U.shape
            out = np.empty(self.dim(T))
            node = out[: T * R].reshape(T, R)
            edge = out[T * R:].reshape(T - 1, R, R)
            K_.sum_product(U, P, node, edge, True)
            return out

        return self._map(one, v)

    def log_partition(self, v):
        """``log sum_y exp <phi(y), v>`` (forward recursion); float or ``(n,)`` array."""
        def one(s):
            U, P = self._scores(s)
            return float(K_.log_partition(U, P))

        out = self._map(one, v)
        return np.asarray(out) if is_ragged(v) else out

    def bayes_decode(self, m):
        """``argmin_y' sum_t w_t sum_i m_t[i] C[i, y'_t]``: per node (positive weights)."""
        def one(s):
            Mu, _ = self.split(s)
            return np.argmin(Mu @ self.node_loss, axis=1).astype(np.int64)

        return self._map(one, m)

    # --- max-min oracle ---------------------------------------------------------------
    def init_maxmin_state(self, n: int):
        """Cold-start states for ``n`` chains: ``[None] * n`` per player (lengths unknown)."""
        return [None] * int(n), [None] * int(n)

    def mix_warm_state(self, lmu, lnu, eps: float) -> None:
        """In place: mix both warm iterates with the uniform distribution in the mean-parameter
        space, as the other spaces do (see :func:`structpred.solvers.gbcfw`).

        ``mu``: its marginals (sum-product) are mixed, ``(1 - eps) mu + eps * uniform`` (a
        convex combination of consistent chain marginals is consistent), and mapped back to
        the canonical natural parameters of a chain, ``log mu_{t,t+1}`` on the edges and
        ``-(deg_t - 1) log mu_t`` on the nodes.  Tempering ``theta`` instead does not bound
        the distance to the next best response: on CK emotion, GBCFW's mean oracle gap grew
        to 27 at lambda = 2^-4 (0.06 cold).  ``nu``: ``(1 - eps) nu + eps / R``.
        """
        R = self.R
        T = self.length(lmu)
        m = self.marginals(lmu)
        m *= 1.0 - eps
        m[: T * R] += eps / R
        m[T * R:] += eps / (R * R)
        lmu[:] = np.log(m) * self.entropy_coefficients(m)
        lnu[:] = np.logaddexp(lnu + np.log1p(-eps), np.log(eps / R))

    def max_min(self, v, warm=None, n_iter: int = 10) -> MaxMinResult:
        """SP-MP for ``max_mu min_nu sum_t nu_t^T A_t mu_t + <v, mu>`` (M4N eq. 14, App. G.2).

        ``mu`` on the marginal polytope (sum-product projections), ``nu`` on a product of
        simplices (softmax).  ``value = min_nu F(nu, mu_bar)`` and ``upper = max_mu
        F(nu_bar, mu)`` (Viterbi) are exact, so ``gap`` is the exact duality gap of the
        averaged pair.  ``warm``: a previous ``state`` (or ``None``).  Batches (lists)
        return a :class:`MaxMinResult` of lists / arrays.
        """
        n_iter = int(n_iter)
        if n_iter < 0:
            raise StructpredError("n_iter must be >= 0")
        if is_ragged(v):
            ws = warm if warm is not None else self.init_maxmin_state(len(v))
            rs = [self._max_min_one(s, (a, b), n_iter) for s, a, b in zip(v, ws[0], ws[1])]
            return MaxMinResult([r.mu for r in rs], [r.nu for r in rs], np.array([r.gap for r in rs]),
                                np.array([r.value for r in rs]), np.array([r.upper for r in rs]),
                                ([r.state[0] for r in rs], [r.state[1] for r in rs]))
        return self._max_min_one(v, warm if warm is not None else (None, None), n_iter)

    def _max_min_one(self, v, warm, n_iter):
        U, P = self._scores(v)
        T, R = U.shape
        theta, lnu = warm
        if theta is None:
            theta = np.zeros(self.dim(T))
        else:
            theta = np.array(theta, dtype=np.float64)
        if lnu is None:
            lnu = np.full(T * R, -np.log(R))
        else:
            lnu = np.array(lnu, dtype=np.float64)
        if theta.shape != (self.dim(T),) or lnu.shape != (T * R,):
            raise StructpredError(f"warm state does not fit a chain of length {T}")
        Lw = self.weighted_loss(T)
        eta = 1.0 / (2.0 * self._cmax * float(np.max(self.position_weights(T))))
        iters = n_iter * T if self.iterations_per_node else n_iter
        mu = np.empty(self.dim(T))
        mu_node = mu[: T * R].reshape(T, R)
        mu_edge = mu[T * R:].reshape(T - 1, R, R)
        nu = np.empty((T, R))
        thU = theta[: T * R].reshape(T, R)
        thP = theta[T * R:].reshape(T - 1, R, R)
        K_.spmp(U, P, Lw, self._kind, eta, iters, thU, thP, lnu.reshape(T, R), mu_node, mu_edge, nu)
        _make_feasible(mu_node, mu_edge, nu)
        # exact bounds of the averaged pair
        lower = float(np.sum(np.min(np.einsum("tij,tj->ti", Lw, mu_node), axis=1))) + float(v @ mu)
        Uq = U + np.einsum("tij,ti->tj", Lw, nu)
        ymax = np.empty(T, dtype=np.int64)
        upper = float(K_.viterbi(np.ascontiguousarray(Uq), P, ymax))
        return MaxMinResult(mu, nu.ravel(), upper - lower, lower, upper, (theta, lnu))


def _make_feasible(node, edge, nu) -> None:
    """In place: the closest-by-construction exact point of the marginal polytope and of the
    product of simplices.

    The averaged SP-MP iterates leave the polytope by round-off (unary rows summing to
    ``1 + 3e-10``, edges inconsistent with their unaries), which scores of size 500 turn into
    bounds off by ``1e-6``.  ``mu`` is replaced by the marginals of the Markov chain with
    start ``node[0] / sum`` and transitions ``edge[t][i, :] / sum_j edge[t][i, j]`` (exactly
    consistent, and equal to ``mu`` when ``mu`` is consistent); ``nu``'s rows are normalised.
    """
    R = node.shape[1]
    nu /= nu.sum(axis=1, keepdims=True)
    node[0] /= node[0].sum()
    for t in range(edge.shape[0]):
        rows = edge[t].sum(axis=1, keepdims=True)
        cond = np.where(rows > 0, edge[t] / np.where(rows > 0, rows, 1.0), 1.0 / R)
        edge[t] = node[t][:, None] * cond
        node[t + 1] = edge[t].sum(axis=0)


__all__ = ["NODE_LOSSES", "Chain", "node_loss_matrix"]
