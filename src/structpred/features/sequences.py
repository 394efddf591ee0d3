"""A batch of variable-length sequences stored flat: per-position features plus offsets."""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError, StructpredTypeError


def as_float_matrix(X, what: str = "X") -> np.ndarray:
    """``X`` as a C-contiguous float64 ``(rows, features)`` array with at least one row and only
    finite values; errors name ``what``."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise StructpredError(f"{what} must be a 2-d array (rows, features), got shape {X.shape}. Reshape your "
                              "data with X.reshape(-1, 1) for one feature or X.reshape(1, -1) for one sample")
    if X.shape[0] == 0:
        raise StructpredError(f"{what} has no rows: 0 sample(s) (shape={X.shape}) while a minimum of 1 is required")
    if X.shape[1] == 0:
        raise StructpredError(f"{what} has 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    if np.iscomplexobj(X):
        raise StructpredError(f"Complex data not supported: {what} has dtype {X.dtype}")
    try:
        X = np.ascontiguousarray(X, dtype=np.float64)
    except TypeError as e:
        raise StructpredTypeError(f"{what} must be numeric: {e}") from None
    except ValueError as e:
        raise StructpredError(f"{what} must be numeric: {e}") from None
    if not np.all(np.isfinite(X)):
        raise StructpredError(f"{what} contains NaN or infinite values")
    with np.errstate(over="ignore"):
        overflow = not np.all(np.isfinite(np.einsum("ij,ij->i", X, X)))
    if overflow:   # the solvers' norms and steps would be inf / NaN, and a model silently 0
        raise StructpredError(f"{what}'s values are too large: their squared norms overflow float64 (largest "
                              f"|value| {np.abs(X).max():.3g}); rescale {what} (e.g. sklearn's StandardScaler)")
    return X


class Sequences:
    """``n`` sequences of per-position feature vectors.

    Parameters
    ----------
    frames : (N, d) features of all positions, sequence after sequence.
    offsets : (n + 1,) int, sequence ``i`` is ``frames[offsets[i]:offsets[i+1]]`` (non-empty).
    groups : optional (n,) int in ``0..n_groups-1`` selecting a weight block per sequence
        (AGM's per-emotion weights).
    n_groups : number of groups (default ``max(groups) + 1``, 1 without groups).
    edges : optional (N, d_e) features of the edges: row ``offsets[i] + t`` (``t >= 1``) describes
        the edge ``(t - 1, t)`` of sequence ``i``; the row of each first position is unused
        (AGM's emotion edges ``[|x_t - x_{t-1}|, 1]``, :func:`difference_edges`).
    """

    def __init__(self, frames, offsets, groups=None, n_groups: int | None = None, edges=None):
        frames = as_float_matrix(frames, "sequence features (frames)")
        offsets = np.asarray(offsets)
        if offsets.ndim != 1 or offsets.shape[0] < 2 or offsets.dtype.kind not in "iu":
            raise StructpredError("offsets must be a 1-d integer array with at least 2 entries")
        offsets = offsets.astype(np.int64)
        if offsets[0] != 0 or offsets[-1] != frames.shape[0] or np.any(np.diff(offsets) < 1):
            raise StructpredError(
                f"offsets must start at 0, end at {frames.shape[0]} (the number of positions) and increase strictly")
        self.frames = frames
        self.offsets = offsets
        if groups is not None:
            groups = np.asarray(groups)
            if groups.shape != (self.n,) or groups.dtype.kind not in "iu" or groups.min() < 0:
                raise StructpredError(f"groups must be {self.n} non-negative integers")
            groups = groups.astype(np.int64)
        self.groups = groups
        top = 1 if groups is None else int(groups.max()) + 1
        self.n_groups = top if n_groups is None else int(n_groups)
        if self.n_groups < top:
            raise StructpredError(f"n_groups={n_groups} but group ids go up to {top - 1}")
        if edges is not None:
            edges = as_float_matrix(edges, "edge features (edges)")
            if edges.shape[0] != frames.shape[0]:
                raise StructpredError(f"edges must have one row per position ({frames.shape[0]}), got {edges.shape[0]}")
        self.edges = edges

    @property
    def n(self) -> int:
        return self.offsets.shape[0] - 1

    @property
    def n_features(self) -> int:
        return self.frames.shape[1]

    @property
    def n_edge_features(self) -> int:
        """Columns of ``edges`` (0 without edge features)."""
        return 0 if self.edges is None else self.edges.shape[1]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i) -> np.ndarray:
        return self.frames[self.offsets[i]:self.offsets[i + 1]]

    def edges_of(self, i) -> np.ndarray:
        """``(T_i - 1, d_e)`` features of sequence ``i``'s edges ``(t - 1, t)``, ``t = 1..T_i-1``."""
        return self.edges[self.offsets[i] + 1:self.offsets[i + 1]]

    def split_labels(self, y_flat) -> list[np.ndarray]:
        """Per-position labels ``(N,)`` -> list of per-sequence arrays."""
        y_flat = np.asarray(y_flat)
        if y_flat.shape != (self.frames.shape[0],):
            raise StructpredError(f"flat labels must have shape ({self.frames.shape[0]},), got {y_flat.shape}")
        return [y_flat[a:b] for a, b in zip(self.offsets[:-1], self.offsets[1:])]

    def subset(self, idx) -> Sequences:
        """The sequences ``idx`` (in that order), keeping ``n_groups``."""
        idx = np.asarray(idx, dtype=np.int64)
        if idx.size == 0:
            raise StructpredError("no sequences selected")
        rows = np.concatenate([np.arange(self.offsets[i], self.offsets[i + 1]) for i in idx]).astype(np.int64)
        offsets = np.r_[0, np.cumsum(self.lengths[idx])].astype(np.int64)
        groups = None if self.groups is None else self.groups[idx]
        edges = None if self.edges is None else self.edges[rows]
        return Sequences(self.frames[rows], offsets, groups, self.n_groups, edges)


def difference_edges(frames, offsets) -> np.ndarray:
    """Edge features ``[|x_t - x_{t-1}|, 1]`` per position (zeros at each first position): the
    AGM reference's emotion edges."""
    frames = np.asarray(frames, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    out = np.zeros((frames.shape[0], frames.shape[1] + 1))
    out[1:, :-1] = np.abs(np.diff(frames, axis=0))
    out[1:, -1] = 1.0
    out[offsets[:-1]] = 0.0
    return out


def as_sequences(X) -> Sequences:
    """``X`` as :class:`Sequences`: a ``Sequences`` or a list of ``(T_i, d)`` arrays."""
    if isinstance(X, Sequences):
        return X
    if isinstance(X, (list, tuple)):
        if not X:
            raise StructpredError("no sequences given")
        arrs = [np.asarray(x) for x in X]
        if any(a.ndim != 2 for a in arrs) or len({a.shape[1] for a in arrs}) != 1:
            raise StructpredError("sequences must be 2-d arrays (length, features) with the same number of features")
        offsets = np.r_[0, np.cumsum([a.shape[0] for a in arrs])].astype(np.int64)
        return Sequences(np.concatenate(arrs), offsets)
    raise StructpredError(f"sequence inputs must be a Sequences object or a list of (T, d) arrays, got {type(X).__name__}")
