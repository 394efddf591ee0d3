"""Hashed node and edge features of per-example trees, as a joint map (AGM §4.2, SRL).

Each example is a tree (``parents`` in topological order, :mod:`structpred.outputs.tree`) whose
nodes carry lists of hashed feature ids and whose edges (one per non-root node, from its
parent) carry their own (:class:`TreeFeatures`).  The score of a labelling is
``sum_t sum_{f in F(t)} w[h(0, f, y_t)] + sum_{t>0} sum_{e in E(t)} w[h(1, e, R y_{p(t)} + y_t)]``
with the window map's index hash ``h(j, a, b) = (506447 + 961 j + 31 a + b) mod dim``
(:mod:`structpred.features.hashed`): node features tensored with the node's label, edge
features with the (parent, child) label pair; collisions add up.  :class:`TreeHashedJoint`
(``"tree_hashed"``) computes the scores ``[unary (T, R) | pairwise (T-1, R, R)]`` of
:class:`~structpred.outputs.Tree` on the fly in numba and returns them as TreeArrays on each
example's tree; ``add`` scatters a score direction back into the weights (its adjoint).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from structpred.errors import StructpredError
from structpred.features.hashed import _h
from structpred.features.tree_array import TreeArray, check_parents

SCORE, ADD, NORM2 = 0, 1, 2


@njit(cache=True)
def _walk(mode, node_ptr, node_ids, edge_ptr, edge_ids, a, b, R, W, v):
    """Every (weight index, score position) pair of the tree of nodes ``a..b``: ``SCORE``
    ``v[pos] += W[idx]``; ``ADD`` ``W[idx] += v[pos]``; ``NORM2`` returns ``sum W[idx]^2`` over
    the distinct indices and zeroes them (``W`` a scratch array holding one ``ADD`` of ``v``)."""
    T = b - a
    dim = W.shape[0]
    acc = 0.0
    for t in range(T):
        n = a + t
        for lab in range(R):
            pos = t * R + lab
            if mode != SCORE and v[pos] == 0.0:
                continue
            for k in range(node_ptr[n], node_ptr[n + 1]):
                idx = _h(0, node_ids[k], lab, dim)
                if mode == SCORE:
                    v[pos] += W[idx]
                elif mode == ADD:
                    W[idx] += v[pos]
                else:
                    acc += W[idx] * W[idx]
                    W[idx] = 0.0
        if t > 0:
            base = T * R + (t - 1) * R * R
            for pc in range(R * R):
                pos = base + pc
                if mode != SCORE and v[pos] == 0.0:
                    continue
                for k in range(edge_ptr[n], edge_ptr[n + 1]):
                    idx = _h(1, edge_ids[k], pc, dim)
                    if mode == SCORE:
                        v[pos] += W[idx]
                    elif mode == ADD:
                        W[idx] += v[pos]
                    else:
                        acc += W[idx] * W[idx]
                        W[idx] = 0.0
    return acc


def _csr(ptr, ids, N, what):
    ptr = np.ascontiguousarray(ptr, dtype=np.int64)
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    if ptr.shape != (N + 1,) or ptr[0] != 0 or ptr[-1] != ids.shape[0] or np.any(np.diff(ptr) < 0):
        raise StructpredError(f"{what}_ptr must rise from 0 to len({what}_ids) with one entry per node plus one")
    if ids.size and ids.min() < 0:
        raise StructpredError(f"{what}_ids must be non-negative hashes")
    return ptr, ids


class TreeFeatures:
    """Hashed features of ``n`` trees over ``N`` nodes in all.

    ``offsets (n + 1,)``: the nodes of tree ``i`` are ``offsets[i]:offsets[i+1]``;
    ``parents (N,)``: per node, its parent's index within its tree (-1 at each root);
    ``node_ptr (N + 1,)`` / ``node_ids``: node ``m``'s feature hashes ``node_ids[node_ptr[m]:
    node_ptr[m+1]]``; ``edge_ptr`` / ``edge_ids`` the same for the edge from its parent (empty
    at roots); ``n_bits``: the weights have ``2^n_bits`` entries.
    """

    def __init__(self, offsets, parents, node_ptr, node_ids, edge_ptr, edge_ids, n_bits: int):
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        parents = np.asarray(parents, dtype=np.int64)
        N = parents.shape[0]
        if self.offsets.ndim != 1 or self.offsets[0] != 0 or self.offsets[-1] != N or np.any(np.diff(self.offsets) < 1):
            raise StructpredError("offsets must rise from 0 to the number of nodes, each tree at least one node")
        self.trees = [check_parents(parents[a:b]) for a, b in zip(self.offsets[:-1], self.offsets[1:])]
        self.node_ptr, self.node_ids = _csr(node_ptr, node_ids, N, "node")
        self.edge_ptr, self.edge_ids = _csr(edge_ptr, edge_ids, N, "edge")
        if np.any(self.edge_ptr[self.offsets[:-1] + 1] != self.edge_ptr[self.offsets[:-1]]):
            raise StructpredError("a root has edge features: roots have no parent edge")
        self.n_bits = int(n_bits)
        if not 1 <= self.n_bits <= 30:
            raise StructpredError(f"n_bits must be in 1..30, got {n_bits!r}")

    @property
    def n(self) -> int:
        return len(self.trees)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def dim(self) -> int:
        return 2 ** self.n_bits

    def __len__(self) -> int:
        return self.n


class TreeHashedJoint:
    """The joint map of hashed tree features: weights ``w`` of shape ``(2^n_bits,)``."""

    def __init__(self, X: TreeFeatures, n_labels: int):
        if not isinstance(X, TreeFeatures):
            raise StructpredError(f"the tree_hashed map takes TreeFeatures, got {type(X).__name__}")
        self.X = X
        self.seq = X  # the tree sizes, for checking labels
        self.R = int(n_labels)
        self._scratch = None

    @classmethod
    def build(cls, space, X, like=None):
        return cls(X, space.n_labels)

    @property
    def n(self) -> int:
        return self.X.n

    @property
    def n_features(self) -> int:
        return self.X.dim

    @property
    def weight_shape(self) -> tuple:
        return (self.X.dim,)

    def _run(self, mode, i, W, v):
        X = self.X
        return _walk(mode, X.node_ptr, X.node_ids, X.edge_ptr, X.edge_ids, X.offsets[i], X.offsets[i + 1],
                     self.R, W, v)

    def score(self, i, W):
        T, R = int(self.X.offsets[i + 1] - self.X.offsets[i]), self.R   # not X.lengths: a diff over all trees a call
        out = np.zeros(T * R + (T - 1) * R * R)
        self._run(SCORE, i, W, out)
        return TreeArray(out, self.X.trees[i])

    def scores(self, W):
        return [self.score(i, W) for i in range(self.n)]

    def add(self, i, W, g):
        self._run(ADD, i, W, np.ascontiguousarray(g, dtype=np.float64))

    def norm2(self, i, g):
        """``||Psi_i g||^2`` through a scratch vector that is zero again on return."""
        if self._scratch is None:
            self._scratch = np.zeros(self.X.dim)
        g = np.ascontiguousarray(g, dtype=np.float64)
        self._run(ADD, i, self._scratch, g)
        return float(self._run(NORM2, i, self._scratch, g))


__all__ = ["TreeFeatures", "TreeHashedJoint"]
