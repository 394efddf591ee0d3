"""QS on sequences of varying length (and trees of varying shape): one kernel ridge block per length.

A sequence space's loss compares outputs of one length only (the normalised Hamming loss of
two words), so QS's loss trick ``argmin_y sum_i alpha_i(x) L(y_i, y)`` (QS eq. 2) needs weights on
training words of the query's length.  The kernel

    k(x, x') = [T(x) = T(x')] kappa(vec x, vec x')

(``kappa`` linear or Gaussian on the ``T x d`` frames laid end to end, or, for CoNLL's
:class:`~structpred.features.hashed.WindowTokens`, on the counts of each position's hashed window
ids laid end to end: ``kappa_lin(x, x') = sum_t #(ids_t(x) & ids_t(x'))``, a sparse row of ``T x
2^16`` columns per sentence) gives exactly that: it is
positive definite (a direct sum of kernels, one per length), its Gram matrix is block diagonal
over lengths, so ``(K + n lam I)^{-1}`` is too, and ``alpha(x) = (K + n lam I)^{-1} K_x`` (QS
eq. 3-4, ``n`` all training words) is zero outside the block of ``x``'s length: the block's own
ridge system with the whole set's ``n lam``.  A query whose length no training word has gets
``alpha(x) = 0``: every output has loss-trick objective 0, and the space's decoder breaks the tie
(for a chain, label 0 everywhere).

Trees (:class:`~structpred.features.tree_hashed.TreeFeatures`, SRL's propositions) are the same
with the tree's shape for its length: the node loss compares labellings of one tree only, so
``k(x, x') = [tree(x) = tree(x')] kappa(vec x, vec x')``, ``vec x`` the counts of each node's hashed
node ids and of its parent edge's hashed edge ids (modulo the map's ``2^n_bits``) laid end to end.
"""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError
from scipy import sparse

from structpred.features.hashed import HASH_DIM, WindowTokens
from structpred.features.tree_array import TreeArray
from structpred.features.tree_hashed import TreeFeatures
from structpred.features.kernels import kernel_matrix
from structpred.features.sequences import Sequences
from structpred.outputs import StatisticDecoding
from structpred.solvers.kernel_ridge import RidgeWeights


def by_length(X) -> dict:
    """``key -> indices`` of the inputs of one length (a sequence's ``T``) or one tree (its parents,
    a tuple), keys in order, indices ascending."""
    if isinstance(X, TreeFeatures):
        out: dict = {}
        for i, tree in enumerate(X.trees):
            out.setdefault(tuple(int(p) for p in tree), []).append(i)
        return {key: np.array(out[key], dtype=np.int64) for key in sorted(out, key=lambda k: (len(k), k))}
    lengths = X.lengths
    return {int(T): np.flatnonzero(lengths == T) for T in np.unique(lengths)}


def _counts(rows: np.ndarray, cols: np.ndarray, n: int, width: int):
    """The sparse ``(n, width)`` matrix of how often each ``(row, col)`` pair occurs."""
    return sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, width))


def _tree_rows(X: TreeFeatures, idx: np.ndarray, T: int):
    """The sparse rows of trees ``idx`` (all of ``T`` nodes): node ``t``'s node ids in columns
    ``2 t dim + id mod dim``, its parent edge's ids in ``(2 t + 1) dim + id mod dim``."""
    rows, cols = [], []
    for r, i in enumerate(idx):
        for t in range(T):
            n = X.offsets[i] + t
            for ptr, ids, side in ((X.node_ptr, X.node_ids, 0), (X.edge_ptr, X.edge_ids, 1)):
                got = ids[ptr[n]:ptr[n + 1]] % X.dim + (2 * t + side) * X.dim
                rows.append(np.full(len(got), r))
                cols.append(got)
    return _counts(np.concatenate(rows), np.concatenate(cols), len(idx), 2 * T * X.dim)


def flat_frames(X, idx: np.ndarray, key):
    """The rows ``vec x_i`` of inputs ``idx`` (all of length, or tree, ``key``): ``(len(idx), T * d)``
    frames of :class:`Sequences`, the sparse ``(len(idx), T * 2^16)`` id counts of
    :class:`WindowTokens`, or those of :class:`TreeFeatures` (:func:`_tree_rows`)."""
    T = len(key) if isinstance(key, tuple) else key
    if isinstance(X, TreeFeatures):
        return _tree_rows(X, idx, T)
    rows = X.offsets[idx][:, None] + np.arange(T)
    if isinstance(X, Sequences):
        return X.frames[rows].reshape(len(idx), T * X.n_features)
    ids = X.input_ids()[rows]                               # (len(idx), T, slots)
    cols = ids + (np.arange(T) * HASH_DIM)[None, :, None]
    keep = ids >= 0
    which = np.broadcast_to(np.arange(len(idx))[:, None, None], ids.shape)[keep]
    return _counts(which, cols[keep], len(idx), T * HASH_DIM)


#: the structured inputs QS takes (one ridge system per length or tree)
SEQUENCE_INPUTS = (Sequences, WindowTokens, TreeFeatures)


def position_width(X) -> int:
    """Input features per position: a frame's, the hashed window ids' range, or a tree node's and
    its edge's hashed ids' ranges."""
    if isinstance(X, TreeFeatures):
        return 2 * X.dim
    return X.n_features if isinstance(X, Sequences) else HASH_DIM


def _tie_output(key):
    """A labelling of the length or tree ``key``: all zeros (the training outputs a query whose
    ``alpha(x) = 0`` hands the decoder, whose tie then decides)."""
    if isinstance(key, tuple):
        return TreeArray(np.zeros(len(key), dtype=np.int64), np.array(key, dtype=np.int64))
    return np.zeros(key, dtype=np.int64)


def _on(key, statistics):
    """The rows of ``statistics`` as the space decodes them: on the tree ``key`` (a tuple), or as they are."""
    parents = np.array(key, dtype=np.int64) if isinstance(key, tuple) else None
    return statistics if parents is None else [TreeArray(row, parents) for row in statistics]


class LengthBlocks:
    """QS's weights on sequences under ``k(x, x') = [T(x) = T(x')] kappa(vec x, vec x')``: one
    :class:`~structpred.solvers.kernel_ridge.RidgeWeights` per training length (or tree), each with
    the whole set's ``n lam`` (see the module's docstring)."""

    def __init__(self, kernel: str, X, y, sigma: float, lam: float, space):
        self.kernel, self.sigma, self.space = kernel, sigma, space
        self.blocks = {}
        for key, idx in by_length(X).items():
            F = flat_frames(X, idx, key)
            weights = RidgeWeights(kernel_matrix(kernel, F, F, sigma), lam, n=X.n)
            Y = [y[i] for i in idx]
            dual = weights.dual(space.statistic(Y)) if isinstance(space, StatisticDecoding) else None
            self.blocks[key] = (idx, F, weights, Y, dual)

    def weights(self, X, n_train: int) -> np.ndarray:
        """``alpha(x)`` over all ``n_train`` training sequences, a row per sequence of ``X``
        (zero outside its length's block)."""
        out = np.zeros((X.n, n_train))
        for key, q in by_length(X).items():
            if key in self.blocks:
                idx, F, weights, _, _ = self.blocks[key]
                out[np.ix_(q, idx)] = weights(kernel_matrix(self.kernel, F, flat_frames(X, q, key), self.sigma))
        return out

    def decode(self, X) -> list:
        """``argmin_y sum_i alpha_i(x) L(y_i, y)`` for every sequence of ``X`` (QS eq. 2)."""
        out = [None] * X.n
        for key, q in by_length(X).items():
            if key in self.blocks:
                _, F, weights, Y, dual = self.blocks[key]
                Kx = kernel_matrix(self.kernel, F, flat_frames(X, q, key), self.sigma)
                pred = (self.space.decode_statistic(_on(key, Kx.T @ dual)) if dual is not None
                        else self.space.weighted_decode(weights(Kx), Y))
            else:   # alpha(x) = 0: the decoder's tie
                pred = self.space.weighted_decode(np.zeros((len(q), 1)), [_tie_output(key)])
            for j, p in zip(q, pred):
                out[j] = p
        return out


def check_sequences(X, n_components):
    """``X`` as QS takes sequences: exact weights only (Nystrom centres on words of one length
    are not built)."""
    if n_components is not None:
        raise StructpredError("QS on sequences: n_components (Nystrom) is not supported; use the exact "
                              "weights (n_components=None), one ridge system per word length")
    return X
