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
from scipy import sparse

from structpred.errors import StructpredError
from structpred.features.hashed import HashedWindowJoint
from structpred.features.joint import SequenceJoint
from structpred.outputs import _chain_batch as KB
from structpred.outputs import _chain_kernels as K_
from structpred.outputs import _tree_kernels as TK
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
)
from structpred.outputs._chain_oracles import HashedChainOracles
from structpred.outputs._sequence_oracles import SequenceChainOracles
from structpred.outputs.batch import is_ragged
from structpred.outputs.node_loss import NODE_LOSSES, NodeLoss, node_loss_matrix


#: numbers of scores the batched kernels copy at a time (64 MiB): a ragged batch larger than that
#: goes through them in chunks
BATCH_DOUBLES = 1 << 23


class Chain(NodeLoss, OutputSpace, LossAugmented, TopK, Marginals, MaxMin, ExactMaxMin, AffineLoss,
            MinLossLines, MarginalPolytope):
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

    ``max_min_exact``: AGM's exact game (zero-one, absolute and squared node losses), the chain
    solved as a tree; its warm state is the ``((T-1) R,)`` multipliers.

    Warm-start state of ``max_min`` (``MaxMinResult.state``): a pair ``(theta, log_nu)``: the natural
    parameters of the ``mu`` iterate (layout of a score) and the log-probabilities of the
    ``nu`` iterate ``(T R,)``; ``None`` entries mean a cold start.
    """

    name = "chain"
    ragged = True
    joint_map = "sequence"

    def __init__(self, n_labels: int, node_loss="hamming", weights=None, iterations_per_node: bool = True,
                 normalize: bool = True, joint_map: str = "sequence"):
        super().__init__(n_labels, node_loss, weights, normalize, iterations_per_node)
        self.joint_map = joint_map

    def __repr__(self) -> str:
        return f"Chain({self._loss_repr()})"

    # --- layout ----------------------------------------------------------------------
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

    # --- batches -----------------------------------------------------------------------
    def _scores(self, v):
        U, P = self.split(v)
        if not (np.all(np.isfinite(U)) and np.all(np.isfinite(P))):
            raise StructpredError("scores contain NaN or infinite values")
        return np.ascontiguousarray(U), np.ascontiguousarray(P)

    def _ragged_chunks(self, v):
        """Index ranges ``[a, b)`` of a ragged batch whose score vectors hold together at most
        :data:`BATCH_DOUBLES` numbers (or one vector): the batched kernels copy a chunk's scores."""
        sizes = np.cumsum([np.size(s) for s in v])
        a = 0
        while a < len(sizes):
            base = sizes[a - 1] if a else 0
            b = max(a + 1, int(np.searchsorted(sizes, base + BATCH_DOUBLES, side="right")))
            yield a, b
            a = b

    def _ragged_scores(self, v, y=None):
        """A ragged batch of scores as the batched kernels (:mod:`structpred.outputs._chain_batch`)
        read it: ``(fu, ustarts, fp, pstarts, lengths)``, word ``i``'s unary scores at
        ``fu[ustarts[i]:]`` and its pairwise scores at ``fp[pstarts[i]:]``, checked as
        :meth:`_scores` checks one; with labels ``y``, the unaries are the loss-augmented ``U +
        A_t[y_t, :]`` of :meth:`top_k` (the same numpy sums)."""
        R = self.R
        vs = [np.asarray(s, dtype=np.float64) for s in v]
        for s in vs:
            if s.ndim != 1:
                raise StructpredError(f"a chain score must be 1-d, got shape {s.shape}")
        sizes = np.array([s.shape[0] for s in vs], dtype=np.int64)
        lengths, rem = np.divmod(sizes + R * R, R + R * R)
        bad = np.flatnonzero((rem != 0) | (lengths < 1))
        if bad.size:
            raise StructpredError(f"a chain score over {R} labels has T*R + (T-1)*R^2 entries; got {sizes[bad[0]]}")
        fp = np.concatenate(vs) if vs else np.empty(0)
        if not np.all(np.isfinite(fp)):
            raise StructpredError("scores contain NaN or infinite values")
        starts = np.cumsum(sizes) - sizes
        pstarts = starts + lengths * R
        if y is None:
            return fp, starts, fp, pstarts, lengths
        aug = []
        for s, T, lab in zip(vs, lengths, y):
            lab = self.check_labels(lab)
            if lab.shape[0] != T:
                raise StructpredError(f"score of length {T} but labels of length {lab.shape[0]}")
            aug.append((s[: T * R].reshape(T, R) + self._loss_rows(lab)).ravel())
        fu = np.concatenate(aug) if aug else np.empty(0)
        return fu, np.cumsum(lengths * R) - lengths * R, fp, pstarts, lengths

    def check_labels(self, y):
        """Validate one sequence ``(T,)`` or a list of them; returns int64 arrays."""
        if is_ragged(y):
            return [self.check_labels(s) for s in y]
        return self.node_labels(y)

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
            return self._pair_loss(a, b)

        out = self._map(one, y, y2)
        return np.asarray(out) if is_ragged(y) else out

    def linear_loss(self, y, mu):
        """``phi(y)^T A mu = sum_t w_t (C mu_t)[y_t] / sum w`` per sequence."""
        def one(s, m):
            return self._linear_loss_nodes(self.check_labels(s), self.split(m)[0])

        return np.atleast_1d(np.asarray(self._map(one, y, mu)))

    def loss_scores(self, y):
        """``A^T phi(y)``: ``w_t C[y_t, :]`` on the unary blocks, zero on the pairwise ones."""
        def one(s):
            s = self.check_labels(s)
            T = s.shape[0]
            out = np.zeros(self.dim(T))
            out[: T * self.R] = self._loss_rows(s).ravel()
            return out

        return self._map(one, y)

    def min_loss(self, mu):
        """``min_y' phi(y')^T A mu = sum_t w_t min_i (C mu_t)[i] / sum w`` per sequence."""
        return np.atleast_1d(np.asarray(self._map(lambda m: self._min_loss_nodes(self.split(m)[0]), mu)))

    def marginal_polytope(self, m) -> tuple:
        """Local consistency, exact on a chain: ``sum_i U_0[i] = 1``, ``sum_j P_t[i, j] = U_t[i]`` and
        ``sum_i P_t[i, j] = U_{t+1}[j]`` for every edge, all entries ``>= 0`` (layout of :meth:`split`)."""

        T, R = self.length(m), self.R
        rows, cols, vals = [np.zeros(R, dtype=np.int64)], [np.arange(R)], [np.ones(R)]
        if T > 1:
            t, i, j = (a.ravel() for a in np.meshgrid(np.arange(T - 1), np.arange(R), np.arange(R), indexing="ij"))
            pair = T * R + (t * R + i) * R + j
            out_row, in_row = 1 + 2 * R * t + i, 1 + 2 * R * t + R + j       # edge t's row sums, column sums
            node = np.arange((T - 1) * R)
            rows += [out_row, in_row, 1 + 2 * R * (node // R) + node % R, 1 + 2 * R * (node // R) + R + node % R]
            cols += [pair, pair, node, node + R]                                # U_t[i] and U_{t+1}[j]
            vals += [np.ones(pair.size), np.ones(pair.size), -np.ones(node.size), -np.ones(node.size)]
        n_rows = 1 + 2 * R * (T - 1)
        A = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                              shape=(n_rows, self.dim(T)))
        b = np.zeros(n_rows)
        b[0] = 1.0
        return A, b

    def into_polytope(self, m) -> np.ndarray:
        """The marginals of the Markov chain whose start law is ``max(U_0, 0)`` renormalised and whose
        transition rows are those of ``max(P_t, 0)`` renormalised: exactly consistent, and ``m``
        itself when ``m`` is (rows of zero mass take the next node's clipped law, else uniform)."""
        U, P = self.split(m)
        U, P = np.maximum(U, 0.0), np.maximum(P, 0.0)
        R = self.R
        out_U, out_P = np.empty_like(U), np.empty_like(P)

        def law(x):
            total = x.sum()
            return x / total if total > 0.0 else np.full(R, 1.0 / R)

        out_U[0] = law(U[0])
        for t in range(P.shape[0]):
            rows = P[t].sum(axis=1, keepdims=True)
            cond = np.where(rows > 0.0, P[t] / np.where(rows > 0.0, rows, 1.0), law(U[t + 1])[None, :])
            out_P[t] = out_U[t][:, None] * cond
            out_U[t + 1] = out_P[t].sum(axis=0)
        return np.concatenate([out_U.ravel(), out_P.ravel()])

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

    def compiled_oracles(self, fmap, y):
        """The compiled oracles of :mod:`structpred.outputs._chain_oracles` for Casimir's hashed
        window map, of :mod:`structpred.outputs._sequence_oracles` for the dense sequence map
        without edge features; ``None`` (generic loops) for any other map."""
        if isinstance(fmap, HashedWindowJoint):
            return HashedChainOracles(self, fmap, y)
        if isinstance(fmap, SequenceJoint) and fmap.seq.edges is None:
            return SequenceChainOracles(self, fmap, y)
        return None

    # --- oracles ------------------------------------------------------------------------
    def decode(self, v):
        """Viterbi ``argmax_y <phi(y), v>`` (word by word: the batched Viterbi kernel,
        ``_chain_batch.viterbis``, gives the same bits but its packing costs what it saves)."""
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
            Ua = U + self._loss_rows(lab)
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
                U = U + self._loss_rows(lab)
            Y = np.zeros((K, U.shape[0]), dtype=np.int64)
            S = np.zeros(K)
            found = K_.top_k_viterbi(U, P, K, Y, S)
            return Y[:found], S[:found]

        if is_ragged(v):        # the batched kernel: the same bits
            if y is not None and len(y) != len(v):
                raise StructpredError(f"batch sizes differ: {[len(v), len(y)]}")
            out = []
            for c0, c1 in self._ragged_chunks(v):
                fu, us, fp, ps, lengths = self._ragged_scores(v[c0:c1], None if y is None else y[c0:c1])
                blocks, singles = KB.plan(lengths)
                ystarts = np.cumsum(lengths) - lengths
                Y = np.zeros(K * int(lengths.sum()), dtype=np.int64)
                S = np.zeros((len(lengths), K))
                found = np.empty(len(lengths), dtype=np.int64)
                KB.top_ks(fu, us, fp, ps, lengths, self.R, K, blocks, singles, Y, ystarts, S, found)
                out += [(Y[K * a: K * (a + T)].reshape(K, T)[:f], S[i, :f])
                        for i, (a, T, f) in enumerate(zip(ystarts, lengths, found))]
            return out
        return one(v, y)

    def smoothed_top_k(self, v, y, K: int, mu: float):
        """``(value, gradient)`` of the top-K l2-smoothed hinge of one chain in one compiled call
        (the fast path of :class:`structpred.surrogates.TopKSmoothedHinge`)."""
        U, P = self._scores(v)
        y = self.check_labels(y)
        if y.shape[0] != U.shape[0]:
            raise StructpredError(f"score of length {U.shape[0]} but labels of length {y.shape[0]}")
        A = self._loss_rows(y)
        grad = np.empty(self.dim(U.shape[0]))
        Y = np.zeros((K, U.shape[0]), dtype=np.int64)
        S = np.zeros(K)
        value = K_.smoothed_top_k(U, P, y, A, int(K), float(mu), grad, Y, S)
        return value, grad

    def marginals(self, v):
        """Sum-product: ``[unary (T, R) | pairwise (T-1, R, R)]`` marginals of ``p ∝ exp <phi, v>``
        (a ragged batch by the batched kernel, the same bits; its marginals are views of one array
        per chunk of :meth:`_ragged_chunks`)."""
        if is_ragged(v):
            out = []
            for c0, c1 in self._ragged_chunks(v):
                fu, us, fp, ps, lengths = self._ragged_scores(v[c0:c1])
                blocks, singles = KB.plan(lengths)
                flat = np.empty(fp.shape[0])
                KB.sums_products(fu, us, fp, ps, lengths, self.R, blocks, singles, flat, us, np.empty(len(lengths)))
                out += np.split(flat, us[1:])
            return out

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
        """``log sum_y exp <phi(y), v>`` (forward recursion); float or ``(n,)`` array (a ragged
        batch by the batched kernel, the same bits)."""
        if is_ragged(v):
            out = np.empty(len(v))
            for c0, c1 in self._ragged_chunks(v):
                fu, us, fp, ps, lengths = self._ragged_scores(v[c0:c1])
                blocks, singles = KB.plan(lengths)
                KB.log_partitions(fu, us, fp, ps, lengths, self.R, blocks, singles, out[c0:c1])
            return out

        def one(s):
            U, P = self._scores(s)
            return float(K_.log_partition(U, P))

        out = self._map(one, v)
        return np.asarray(out) if is_ragged(v) else out

    def bayes_decode(self, m):
        """``argmin_y' sum_t w_t sum_i m_t[i] C[i, y'_t]``: per node (positive weights)."""
        return self._map(lambda s: self._bayes_nodes(self.split(s)[0]), m)

    # --- max-min oracle ---------------------------------------------------------------
    def _max_min_one(self, v, warm, n_iter):
        """SP-MP on one chain (:meth:`NodeLoss.max_min`); the upper bound by Viterbi."""
        U, P = self._scores(v)
        T, R = U.shape
        theta, lnu = self._warm(warm, T)
        mu = np.empty(self.dim(T))
        mu_node = mu[: T * R].reshape(T, R)
        mu_edge = mu[T * R:].reshape(T - 1, R, R)
        nu = np.empty((T, R))
        thU = theta[: T * R].reshape(T, R)
        thP = theta[T * R:].reshape(T - 1, R, R)
        K_.spmp(U, P, self.weighted_loss(T), self._kind, self.spmp_step(T), self.spmp_iteration_count(n_iter, T),
                thU, thP, lnu.reshape(T, R), mu_node, mu_edge, nu)
        TK.make_feasible(TK.chain_parents(T), mu_node, mu_edge, nu)
        lower = self._maxmin_lower(v, mu)
        upper = float(K_.viterbi(self._against(U, nu), P, np.empty(T, dtype=np.int64)))
        return MaxMinResult(mu, nu.ravel(), upper - lower, lower, upper, (theta, lnu))

    def _max_min_exact_one(self, v, warm, tol, max_iter):
        """The exact game on one chain (:meth:`NodeLoss.max_min_exact`), as a tree."""
        U, P = self._scores(v)
        return self._exact_game(TK.chain_parents(U.shape[0]), U, P, warm, tol, max_iter)


__all__ = ["NODE_LOSSES", "Chain", "node_loss_matrix"]
