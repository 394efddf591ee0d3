"""QS on sequences of varying length: one kernel ridge block per length.

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
"""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError
from scipy import sparse

from structpred.features.hashed import HASH_DIM, WindowTokens
from structpred.features.kernels import kernel_matrix
from structpred.features.sequences import Sequences
from structpred.outputs import StatisticDecoding
from structpred.solvers.kernel_ridge import RidgeWeights


def by_length(X) -> dict[int, np.ndarray]:
    """``T -> indices`` of the sequences of length ``T``, lengths ascending, indices ascending."""
    lengths = X.lengths
    return {int(T): np.flatnonzero(lengths == T) for T in np.unique(lengths)}


def flat_frames(X, idx: np.ndarray, T: int):
    """The rows ``vec x_i`` of sequences ``idx`` (all of length ``T``): ``(len(idx), T * d)`` frames of
    :class:`Sequences`, or the sparse ``(len(idx), T * 2^16)`` id counts of :class:`WindowTokens`."""
    rows = X.offsets[idx][:, None] + np.arange(T)
    if isinstance(X, Sequences):
        return X.frames[rows].reshape(len(idx), T * X.n_features)
    ids = X.input_ids()[rows]                               # (len(idx), T, slots)
    cols = ids + (np.arange(T) * HASH_DIM)[None, :, None]
    keep = ids >= 0
    which = np.broadcast_to(np.arange(len(idx))[:, None, None], ids.shape)[keep]
    return sparse.csr_matrix((np.ones(int(keep.sum())), (which, cols[keep])), shape=(len(idx), T * HASH_DIM))


#: the sequence inputs QS takes (one ridge system per length)
SEQUENCE_INPUTS = (Sequences, WindowTokens)


def position_width(X) -> int:
    """Input features per position: a frame's, or the hashed window ids' range."""
    return X.n_features if isinstance(X, Sequences) else HASH_DIM


class LengthBlocks:
    """QS's weights on sequences under ``k(x, x') = [T(x) = T(x')] kappa(vec x, vec x')``: one
    :class:`~structpred.solvers.kernel_ridge.RidgeWeights` per training length, each with the
    whole set's ``n lam`` (see the module's docstring)."""

    def __init__(self, kernel: str, X, y, sigma: float, lam: float, space):
        self.kernel, self.sigma, self.space = kernel, sigma, space
        self.blocks = {}
        for T, idx in by_length(X).items():
            F = flat_frames(X, idx, T)
            weights = RidgeWeights(kernel_matrix(kernel, F, F, sigma), lam, n=X.n)
            Y = [y[i] for i in idx]
            dual = weights.dual(space.statistic(Y)) if isinstance(space, StatisticDecoding) else None
            self.blocks[T] = (idx, F, weights, Y, dual)

    def weights(self, X, n_train: int) -> np.ndarray:
        """``alpha(x)`` over all ``n_train`` training sequences, a row per sequence of ``X``
        (zero outside its length's block)."""
        out = np.zeros((X.n, n_train))
        for T, q in by_length(X).items():
            if T in self.blocks:
                idx, F, weights, _, _ = self.blocks[T]
                out[np.ix_(q, idx)] = weights(kernel_matrix(self.kernel, F, flat_frames(X, q, T), self.sigma))
        return out

    def decode(self, X) -> list:
        """``argmin_y sum_i alpha_i(x) L(y_i, y)`` for every sequence of ``X`` (QS eq. 2)."""
        out = [None] * X.n
        for T, q in by_length(X).items():
            if T in self.blocks:
                _, F, weights, Y, dual = self.blocks[T]
                Kx = kernel_matrix(self.kernel, F, flat_frames(X, q, T), self.sigma)
                pred = (self.space.decode_statistic(Kx.T @ dual) if dual is not None
                        else self.space.weighted_decode(weights(Kx), Y))
            else:   # alpha(x) = 0: the decoder's tie
                pred = self.space.weighted_decode(np.zeros((len(q), 1)), [np.zeros(T, dtype=np.int64)])
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
