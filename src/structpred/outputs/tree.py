"""Tree output space: labelled trees with unary and parent-child pairwise factors (AGM §3.2, eq. 5).

An output labels the ``T`` nodes of a tree with ``0..R-1``.  The tree is a ``parents`` array:
``parents[0] = -1`` (the root), ``0 <= parents[t] < t`` (nodes in topological order; a forest
is refused).  The embedding generalises Chain's (M4N App. G.2): ``phi(y) = (e_{y_1}, ...,
e_{y_T}, e_{y_{p(2)} y_2}, ..., e_{y_{p(T)} y_T})`` flattened as ``[unary (T, R) | pairwise
(T-1, R, R)]``, one block per edge in the order of the children, indexed ``[parent label,
child label]`` (AGM's ``Q_{pt(i); i}``), so ``<phi(y), v> = sum_t U[t, y_t] + sum_{t>0} P[t-1,
y_{p(t)}, y_t]``; on a chain (``parents = [-1, 0, ..., T-2]``) layout, loss and every oracle are
Chain's.  The loss is the separable node loss of :mod:`structpred.outputs.node_loss`.

Per-example structure.  Every example (a proposition's pruned parse tree in SRL) has its own
tree, and the library's oracles see one score ``v`` or one output ``y`` at a time (``decode(v)``,
``embed(y)``, ``marginals(v)``), as do the surrogates and step rules, which also add and subtract
scores.  So the tree travels *with* the arrays: a :class:`TreeArray` is a numpy array (labels
``(T,)`` int64, or a vector in the embedding layout: scores, marginals, loss scores, warm states)
that carries its ``parents``; elementwise arithmetic and copies keep it, and every oracle
returns TreeArrays of its input's tree.  The space holds nothing per example; a batch is
a list of TreeArrays (``ragged = True``, as Chain's lists of vectors).  A space built with
``parents=`` (every example on one tree) also takes plain arrays, which then get that tree.

Oracles: ``decode`` (max-product), ``loss_augmented``, ``marginals`` / ``log_partition``
(log-domain sum-product), ``entropy`` (tree entropy), the affine-loss oracles, and ``max_min``
(SP-MP on the tree's marginal polytope, as Chain's, warm-started, its averaged pair made
exactly feasible), and ``max_min_exact`` (AGM's exact game for the zero-one, absolute and
squared node losses: :mod:`structpred.outputs._game_kernels`).  No ``top_k``: the K best
labellings of a tree need K-best merges of the children's lists at every node (or K T
constrained max-products); not built.
"""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError
from structpred.features.tree_array import TreeArray, attach_parents, check_parents
from structpred.outputs import _tree_kernels as TK
from structpred.outputs.base import (
    AffineLoss,
    ExactMaxMin,
    LossAugmented,
    Marginals,
    MaxMin,
    MaxMinResult,
    MinLossLines,
    OutputSpace,
    as_weights,
)
from structpred.outputs.batch import is_ragged
from structpred.outputs.node_loss import NodeLoss


class Tree(NodeLoss, OutputSpace, LossAugmented, Marginals, MaxMin, ExactMaxMin, AffineLoss, MinLossLines):
    """Labelled trees over ``n_labels`` labels with a separable, position-weighted node loss.

    Parameters
    ----------
    n_labels, node_loss, weights, normalize, iterations_per_node : as :class:`~structpred.outputs.chain.Chain`
        (``weights="position"`` weighs node ``t`` by ``t + 1``, the topological order).
    parents : optional tree shared by every example: plain arrays are then taken on it (a
        :class:`TreeArray` always keeps its own tree).
    joint_map : the joint feature map the solvers build (``"sequence"``: per-node unaries and
        one pairwise matrix for every edge, plain score vectors, so it needs ``parents=``;
        ``"tree_hashed"``: hashed node and edge features of per-example trees, scores as
        TreeArrays on each example's tree).

    Notes
    -----
    Warm-start state of ``max_min_exact``: the ``((T-1) R,)`` multipliers.  Warm-start state of
    ``max_min``: ``(theta, log_nu)``, ``theta`` the
    natural parameters of the ``mu`` iterate (a TreeArray in the score layout), ``log_nu`` the
    ``(T R,)`` log-probabilities of ``nu``.
    """

    name = "tree"
    ragged = True
    joint_map = "sequence"

    def __init__(self, n_labels: int, node_loss="hamming", weights=None, normalize: bool = True,
                 iterations_per_node: bool = True, parents=None, joint_map: str = "sequence"):
        super().__init__(n_labels, node_loss, weights, normalize, iterations_per_node)
        self.parents = None if parents is None else check_parents(parents)
        self.joint_map = joint_map

    def __repr__(self) -> str:
        tree = "" if self.parents is None else f", parents=<{self.parents.shape[0]} nodes>"
        return f"Tree({self._loss_repr()}{tree})"

    # --- layout ----------------------------------------------------------------------------
    def structure(self, x) -> np.ndarray:
        """The ``parents`` of one output or vector: its own (a :class:`TreeArray`), else the space's."""
        p = getattr(x, "parents", None)
        if p is None:
            p = self.parents
        if p is None:
            raise StructpredError(f"{self!r} has no tree of its own: give each output and score as "
                                  "TreeArray(values, parents), or build the space with parents=")
        return p

    def split(self, v):
        """Views ``(U (T, R), P (T-1, R, R))`` of a score or marginal vector on its tree."""
        parents = self.structure(v)
        a = np.asarray(v, dtype=np.float64)
        T, R = parents.shape[0], self.R
        if a.shape != (self.dim(T),):
            raise StructpredError(f"a tree of {T} nodes over {R} labels has T*R + (T-1)*R^2 = {self.dim(T)} "
                                  f"scores; got shape {a.shape}")
        return a[: T * R].reshape(T, R), a[T * R:].reshape(T - 1, R, R)

    def _scores(self, v):
        """``(parents, U, P)`` of a finite score vector (contiguous)."""
        U, P = self.split(v)
        if not (np.all(np.isfinite(U)) and np.all(np.isfinite(P))):
            raise StructpredError("scores contain NaN or infinite values")
        return self.structure(v), np.ascontiguousarray(U), np.ascontiguousarray(P)

    def check_labels(self, y):
        """Validate one labelled tree or a list of them; returns TreeArrays."""
        if is_ragged(y):
            return [self.check_labels(s) for s in y]
        parents = self.structure(y)
        s = self.node_labels(y)
        if s.shape[0] != parents.shape[0]:
            raise StructpredError(f"{s.shape[0]} labels for a tree of {parents.shape[0]} nodes")
        return attach_parents(s, parents)

    def _labels_on(self, y, parents):
        """Checked labels of ``y``, which must lie on the tree ``parents`` (of the scores)."""
        s = self.check_labels(y)
        if not np.array_equal(s.parents, parents):
            raise StructpredError(f"labels and scores of different trees ({s.shape[0]} and {parents.shape[0]} nodes)")
        return s

    # --- basic -----------------------------------------------------------------------------
    def embed(self, y):
        def one(s):
            s = self.check_labels(s)
            p, T, R = s.parents, s.shape[0], self.R
            out = np.zeros(self.dim(T))
            out[np.arange(T) * R + s] = 1.0
            out[T * R + np.arange(T - 1) * R * R + s[p[1:]] * R + s[1:]] = 1.0
            return attach_parents(out, p)

        return self._map(one, y)

    def loss(self, y, y2):
        """``sum_t w_t C[y_t, y2_t] / sum w`` of two labellings of one tree; float or ``(n,)``."""
        def one(a, b):
            a = self.check_labels(a)
            return self._pair_loss(a, self._labels_on(b, a.parents))

        out = self._map(one, y, y2)
        return np.asarray(out) if is_ragged(y) else out

    def linear_loss(self, y, mu):
        """``phi(y)^T A mu = sum_t w_t (C mu_t)[y_t] / sum w`` per tree."""
        def one(s, m):
            return self._linear_loss_nodes(self._labels_on(s, self.structure(m)), self.split(m)[0])

        return np.atleast_1d(np.asarray(self._map(one, y, mu)))

    def loss_scores(self, y):
        """``A^T phi(y)``: ``w_t C[y_t, :]`` on the unary blocks, zero on the pairwise ones."""
        def one(s):
            s = self.check_labels(s)
            T = s.shape[0]
            out = np.zeros(self.dim(T))
            out[: T * self.R] = self._loss_rows(s).ravel()
            return attach_parents(out, s.parents)

        return self._map(one, y)

    def min_loss(self, mu):
        """``min_y' phi(y')^T A mu = sum_t w_t min_i (C mu_t)[i] / sum w`` per tree."""
        return np.atleast_1d(np.asarray(self._map(lambda m: self._min_loss_nodes(self.split(m)[0]), mu)))

    def bayes_decode(self, m):
        """``argmin_y' sum_t w_t sum_i m_t[i] C[i, y'_t]``: per node (positive weights)."""
        return self._map(lambda s: attach_parents(self._bayes_nodes(self.split(s)[0]), self.structure(s)), m)

    def weighted_decode(self, alpha, Y):
        """QS's loss trick ``argmin_y sum_i alpha_i L(Y_i, y)`` on one tree: the training outputs must
        share it (each its own :class:`TreeArray`, or the space's tree); the prediction carries it.
        A loss between trees of different shapes is not defined: one clear error."""
        Y = list(Y) if self.ragged or isinstance(Y, (list, tuple)) else Y
        trees = {tuple(self.structure(y)) for y in Y}
        if len(trees) != 1:
            raise StructpredError(f"{self!r}: loss-trick decoding needs training outputs on one tree, got "
                                  f"{len(trees)} different trees")
        parents = np.asarray(next(iter(trees)), dtype=np.int64)
        E = self.statistic([attach_parents(np.asarray(y), parents) for y in Y])
        a, single = as_weights(alpha, E.shape[0])
        out = self.bayes_decode([attach_parents(row, parents) for row in a @ E])
        return out[0] if single else out

    def entropy_coefficients(self, mu) -> np.ndarray:
        """``c`` with ``entropy(mu) = -sum_j c_j mu_j log mu_j`` on one marginal vector: 1 on the
        pairwise blocks, ``1 - deg_t`` on node ``t``'s unary block."""
        U, _ = self.split(mu)
        parents = self.structure(mu)
        T, R = U.shape
        deg = np.bincount(parents[1:], minlength=T) + (np.arange(T) > 0)
        c = np.ones(self.dim(T))
        c[: T * R] = np.repeat(1.0 - deg, R)
        return attach_parents(c, parents)

    # --- oracles ---------------------------------------------------------------------------
    def _max_product(self, parents, U, P):
        out = np.empty(U.shape[0], dtype=np.int64)
        TK.max_product(parents, U, P, out)
        return attach_parents(out, parents)

    def decode(self, v):
        """Max-product ``argmax_y <phi(y), v>`` (ties to the smallest label)."""
        return self._map(lambda s: self._max_product(*self._scores(s)), v)

    def loss_augmented(self, v, y):
        """``argmax_y' L(y, y') + <phi(y'), v>``: max-product with ``A_t[y_t, :]`` added to the unaries."""
        def one(s, lab):
            parents, U, P = self._scores(s)
            return self._max_product(parents, U + self._loss_rows(self._labels_on(lab, parents)), P)

        return self._map(one, v, y)

    def marginals(self, v):
        """Sum-product: ``[unary (T, R) | pairwise (T-1, R, R)]`` marginals of ``p ∝ exp <phi, v>``."""
        def one(s):
            parents, U, P = self._scores(s)
            T, R = U.shape
            out = np.empty(self.dim(T))
            TK.sum_product(parents, U, P, out[: T * R].reshape(T, R), out[T * R:].reshape(T - 1, R, R), True)
            return attach_parents(out, parents)

        return self._map(one, v)

    def log_partition(self, v):
        """``log sum_y exp <phi(y), v>`` (upward pass); float or ``(n,)`` array."""
        out = self._map(lambda s: float(TK.log_partition(*self._scores(s))), v)
        return np.asarray(out) if is_ragged(v) else out

    # --- max-min oracle --------------------------------------------------------------------
    def _max_min_one(self, v, warm, n_iter):
        """SP-MP on one tree (:meth:`NodeLoss.max_min`); the upper bound by max-product."""
        parents, U, P = self._scores(v)
        T, R = U.shape
        theta, lnu = self._warm(warm, T)
        mu = np.empty(self.dim(T))
        mu_node = mu[: T * R].reshape(T, R)
        mu_edge = mu[T * R:].reshape(T - 1, R, R)
        nu = np.empty((T, R))
        TK.spmp(parents, U, P, self.weighted_loss(T), self._kind, self.spmp_step(T),
                self.spmp_iteration_count(n_iter, T), theta[: T * R].reshape(T, R),
                theta[T * R:].reshape(T - 1, R, R), lnu.reshape(T, R), mu_node, mu_edge, nu)
        TK.make_feasible(parents, mu_node, mu_edge, nu)
        mu = attach_parents(mu, parents)
        lower = self._maxmin_lower(v, mu)
        upper = float(TK.max_product(parents, self._against(U, nu), P, np.empty(T, dtype=np.int64)))
        return MaxMinResult(mu, nu.ravel(), upper - lower, lower, upper, (attach_parents(theta, parents), lnu))

    def _max_min_exact_one(self, v, warm, tol, max_iter):
        """The exact game on one tree (:meth:`NodeLoss.max_min_exact`); ``mu`` a TreeArray."""
        parents, U, P = self._scores(v)
        res = self._exact_game(parents, U, P, warm, tol, max_iter)
        res.mu = attach_parents(res.mu, parents)
        return res


__all__ = ["Tree", "TreeArray", "check_parents"]
