"""Batches of scores, marginals and outputs: dense ``(n, k)`` arrays or ragged lists.

A space whose embedding size is fixed (``Multiclass``, ``Permutation``) takes a batch as an
``(n, k)`` array; a space whose embedding size depends on the output (a chain of length
``T``) takes a *ragged* batch: a list of per-sample vectors.  This module is the one
place that tells the two apart, so the rest of the library never tests for ``list``.
"""

from __future__ import annotations

import numpy as np


def is_ragged(batch) -> bool:
    """Whether ``batch`` is a ragged batch (a list or tuple of per-sample arrays)."""
    return isinstance(batch, (list, tuple))


def rowdot(V, Phi) -> np.ndarray:
    """``<v_i, phi_i>`` per sample, for dense or ragged batches."""
    if is_ragged(V):
        return np.array([float(a @ b) for a, b in zip(V, Phi)])
    return np.einsum("ij,ij->i", np.atleast_2d(V), np.atleast_2d(Phi))


def rowsub(A, B):
    """``a_i - b_i`` per sample, for dense or ragged batches."""
    if is_ragged(A):
        return [a - b for a, b in zip(A, B)]
    return np.atleast_2d(A) - np.atleast_2d(B)


def copy_rows(batch):
    """Deep copy of a batch (a ragged one may hold ``None`` entries: cold oracle states)."""
    if is_ragged(batch):
        return [None if s is None else s.copy() for s in batch]
    return batch.copy()


def labels_batch(space, y):
    """Validated labels of a batch: a list for ragged spaces, an array otherwise."""
    return space.check_labels(list(y) if is_ragged(y) else np.asarray(y))
