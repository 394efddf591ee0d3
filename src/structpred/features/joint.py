"""Joint feature maps: how inputs ``x`` and weights ``W`` give the score ``v`` a space understands.

DESIGN.md, "score parametrisation is separate": the solvers see a map with

``scores(W)``      all scores ``v_i = Psi_i^T w`` (an ``(n, k)`` array or a list of vectors),
``score(i, W)``    one score,
``add(i, W, g)``   ``W += Psi_i g`` (back-propagates a score direction ``g`` into the weights),
``norm2(i, g)``    ``||Psi_i g||^2`` (the BCFW / SDCA line searches),
``weight_shape``   the shape of ``W``.

:class:`LinearJoint` (``"linear"``) is ``phi(y) ⊗ x`` (``v_i = W^T x_i``; a fixed-size embedding).
:class:`SequenceJoint` (``"sequence"``) is the sequence map of M4N App. G.2: unary scores
``U_t = W_g^T x_t`` from the per-position features (``W_g`` the block of the sequence's group,
AGM's per-emotion weights) and one transition matrix shared by all edges, stacked as
``W = [W_0; ...; W_{G-1}; T]``.  :class:`~structpred.features.hashed.HashedWindowJoint`
(``"hashed_window"``) is Casimir's hashed window features for tagging, :class:`CandidateJoint`
(``"candidates"``) a shared linear score of each candidate's features (Casimir's boxes), and
:class:`~structpred.features.tree_hashed.TreeHashedJoint` (``"tree_hashed"``) hashed node and
edge features of per-example trees (SRL).  A space names its map in ``joint_map``; :data:`JOINT_MAPS`
resolves the name, so a new map is one class plus one entry.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from structpred.errors import StructpredError
from structpred.features.hashed import HashedWindowJoint
from structpred.features.sequences import Sequences, as_float_matrix, as_sequences
from structpred.features.tree_hashed import TreeHashedJoint


@njit(cache=True)
def linear_scores(X, i, W, v):
    """``v = W^T x_i``."""
    d, k = W.shape
    for j in range(k):
        v[j] = 0.0
    for a in range(d):
        xa = X[i, a]
        if xa != 0.0:
            for j in range(k):
                v[j] += xa * W[a, j]


@njit(cache=True)
def linear_add(X, i, W, coef):
    """``W += x_i coef^T``."""
    d, k = W.shape
    for a in range(d):
        xa = X[i, a]
        if xa != 0.0:
            for j in range(k):
                W[a, j] += xa * coef[j]


@njit(cache=True)
def sequence_scores(frames, a, b, row0, W, v):
    """``v = [U | P]`` of the frames ``a <= t < b`` (:class:`SequenceJoint` without edge
    features): ``U_t = W[row0: row0 + d]^T x_t``, every ``P_t`` the last ``R`` rows of ``W``."""
    T = b - a
    d = frames.shape[1]
    R = W.shape[1]
    U = v[: T * R].reshape(T, R)
    for t in range(T):
        for j in range(R):
            U[t, j] = 0.0
        for f in range(d):
            xf = frames[a + t, f]
            if xf != 0.0:
                for j in range(R):
                    U[t, j] += xf * W[row0 + f, j]
    top = W.shape[0] - R
    for t in range(T - 1):
        base = T * R + t * R * R
        for r in range(R):
            for j in range(R):
                v[base + r * R + j] = W[top + r, j]


@njit(cache=True)
def sequence_add(frames, a, b, row0, W, c):
    """``W += Psi c`` for the frames ``a <= t < b`` (:class:`SequenceJoint` without edge
    features): ``W[row0 + f] += sum_t x_t[f] c_U[t]``, the last ``R`` rows ``+= sum_t c_P[t]``."""
    T = b - a
    d = frames.shape[1]
    R = W.shape[1]
    for t in range(T):
        for f in range(d):
            xf = frames[a + t, f]
            if xf != 0.0:
                for j in range(R):
                    W[row0 + f, j] += xf * c[t * R + j]
    top = W.shape[0] - R
    for t in range(T - 1):
        base = T * R + t * R * R
        for r in range(R):
            for j in range(R):
                W[top + r, j] += c[base + r * R + j]


class LinearJoint:
    """``v_i = W^T x_i`` with ``W (d, k)``: the joint feature ``x_i phi(y)^T``."""

    def __init__(self, X, k: int):
        self.X = as_float_matrix(X)
        self.k = int(k)
        self.xnorm2 = np.einsum("ij,ij->i", self.X, self.X)

    @classmethod
    def build(cls, space, X, like=None):
        if isinstance(X, Sequences) or (isinstance(X, (list, tuple)) and any(np.ndim(x) != 1 for x in X)):
            raise StructpredError(f"{space!r} takes a 2-d feature matrix (one row per sample), not sequences "
                                  "of per-position features (those go with loss='sequence_hamming')")
        return cls(X, space.embedding_dim)   # a list of rows is a matrix

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def weight_shape(self) -> tuple:
        return (self.X.shape[1], self.k)

    def scores(self, W):
        return self.X @ W

    def score(self, i, W):
        v = np.empty(self.k)
        linear_scores(self.X, i, W, v)
        return v

    def add(self, i, W, g):
        linear_add(self.X, i, W, np.ascontiguousarray(g, dtype=np.float64))

    def norm2(self, i, g):
        return float(self.xnorm2[i] * (g @ g))


class SequenceJoint:
    """Sequence scores ``U_t = W_{g_i}^T x_t`` (unaries) and pairwise scores ``P_t``.

    Without edge features every edge shares one transition matrix ``T``: ``W`` of shape
    ``(G d + R, R)`` and ``<phi(y), v> = sum_t <W_g[:, y_t], x_t> + sum_t T[y_t, y_{t+1}]``.
    With edge features ``e_t`` (:attr:`Sequences.edges`, the AGM reference's emotion model)
    each group has edge weights ``E_g (d_e, R, R)`` and ``P_t[a, b] = sum_f e_t[f] E_g[f, a, b]``:
    ``W`` of shape ``(G d + G d_e R, R)``, the ``E_g`` stacked below the unary blocks.
    """

    def __init__(self, X, n_labels: int, n_groups: int | None = None):
        self.seq = as_sequences(X)
        self.R = int(n_labels)
        self.G = self.seq.n_groups if n_groups is None else int(n_groups)
        if self.seq.groups is not None and self.seq.groups.max() >= self.G:
            raise StructpredError(f"group ids go up to {self.seq.groups.max()} but the model has {self.G} groups")

    @classmethod
    def build(cls, space, X, like=None):
        fmap = cls(X, space.n_labels, n_groups=None if like is None else like.G)
        if like is not None and fmap.seq.n_edge_features != like.seq.n_edge_features:
            raise StructpredError(f"the sequences have {fmap.seq.n_edge_features} edge features but the model was "
                                  f"fitted with {like.seq.n_edge_features}")
        return fmap

    @property
    def n(self) -> int:
        return self.seq.n

    @property
    def n_features(self) -> int:
        return self.seq.n_features

    @property
    def _edge_rows(self) -> int:
        de = self.seq.n_edge_features
        return self.R if de == 0 else self.G * de * self.R

    @property
    def weight_shape(self) -> tuple:
        return (self.G * self.seq.n_features + self._edge_rows, self.R)

    def _group(self, i) -> int:
        return 0 if self.seq.groups is None else int(self.seq.groups[i])

    def _block(self, i):
        d = self.seq.n_features
        g = self._group(i)
        return slice(g * d, (g + 1) * d)

    def _edge_block(self, i, W):
        """``E_g`` of sequence ``i``'s group as a ``(d_e, R, R)`` view of ``W``."""
        R, de = self.R, self.seq.n_edge_features
        start = self.G * self.seq.n_features + self._group(i) * de * R
        return W[start:start + de * R].reshape(de, R, R)

    def score(self, i, W):
        R = self.R
        Xi = self.seq[i]
        T = Xi.shape[0]
        v = np.empty(T * R + (T - 1) * R * R)
        v[: T * R] = (Xi @ W[self._block(i)]).ravel()
        if self.seq.edges is None:
            v[T * R:] = np.tile(W[-R:].ravel(), T - 1)
        else:
            v[T * R:] = (self.seq.edges_of(i) @ self._edge_block(i, W).reshape(-1, R * R)).ravel()
        return v

    def scores(self, W):
        return [self.score(i, W) for i in range(self.n)]

    def _parts(self, i, g):
        """``(x_t, unary directions (T, R), pairwise direction)``: the pairwise part as the
        ``(d_e, R, R)`` weight direction with edge features, else summed over the edges."""
        R = self.R
        Xi = self.seq[i]
        T = Xi.shape[0]
        g = np.asarray(g, dtype=np.float64)
        gp = g[T * R:].reshape(T - 1, R * R)
        if self.seq.edges is None:
            return Xi, g[: T * R].reshape(T, R), gp.sum(axis=0).reshape(R, R)
        return Xi, g[: T * R].reshape(T, R), (self.seq.edges_of(i).T @ gp).reshape(-1, R)

    def _pair_rows(self, i, W):
        return W[-self.R:] if self.seq.edges is None else self._edge_block(i, W).reshape(-1, self.R)

    def add(self, i, W, g):
        Xi, gu, gp = self._parts(i, g)
        W[self._block(i)] += Xi.T @ gu
        self._pair_rows(i, W)[...] += gp

    def norm2(self, i, g):
        Xi, gu, gp = self._parts(i, g)
        a = Xi.T @ gu
        return float(np.sum(a * a) + np.sum(gp * gp))


#: joint feature maps by the name an output space gives in ``joint_map``
class CandidateJoint:
    """Candidate scores ``v_i = X_i w``: ``X_i (m_i, d)`` holds the features of example ``i``'s
    candidates (a :class:`Sequences` or a list of arrays) and ``w (d,)`` is shared by all
    (Casimir §7.2: a linear score of each box's CNN features)."""

    def __init__(self, X):
        self.seq = as_sequences(X)

    @classmethod
    def build(cls, space, X, like=None):
        return cls(X)

    @property
    def n(self) -> int:
        return self.seq.n

    @property
    def n_features(self) -> int:
        return self.seq.frames.shape[1]

    @property
    def weight_shape(self) -> tuple:
        return (self.n_features,)

    def _rows(self, i):
        return self.seq.frames[self.seq.offsets[i]:self.seq.offsets[i + 1]]

    def score(self, i, W):
        return self._rows(i) @ W

    def scores(self, W):
        return [self.score(i, W) for i in range(self.n)]

    def add(self, i, W, g):
        W += self._rows(i).T @ np.asarray(g, dtype=np.float64)

    def norm2(self, i, g):
        u = self._rows(i).T @ np.asarray(g, dtype=np.float64)
        return float(u @ u)


JOINT_MAPS = {"linear": LinearJoint, "sequence": SequenceJoint, "hashed_window": HashedWindowJoint,
              "tree_hashed": TreeHashedJoint,
              "candidates": CandidateJoint}


def joint_map(space, X, like=None, who: str = "the_model"):
    """The joint feature map ``space`` names (``space.joint_map``) on inputs ``X`` (``like``: a
    fitted map whose shape the new one must match, for prediction; ``who`` names the model in
    the error)."""
    cls = JOINT_MAPS.get(getattr(space, "joint_map", None))
    if cls is None:
        raise StructpredError(f"{space!r} names an unknown joint map {getattr(space, 'joint_map', None)!r}; "
                              f"known: {', '.join(JOINT_MAPS)}")
    fmap = cls.build(space, X, like)
    if like is not None and fmap.n_features != like.n_features:
        raise StructpredError(f"X has {fmap.n_features} features, but {who} is expecting {like.n_features} "
                              "features as input")
    return fmap
