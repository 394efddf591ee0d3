"""A tree-structured output's array carrying its tree (``TreeArray``) and the check of a parent
vector (one root, parents before children).  The features build them (SRL propositions, hashed
tree features) and :class:`~structpred.outputs.Tree` reads them, so they sit below both."""

from __future__ import annotations

import numpy as np

from structpred.errors import StructpredError


def check_parents(parents) -> np.ndarray:
    """``parents`` as a read-only int64 array, or one clear error: 1-d, ``parents[0] = -1``,
    ``0 <= parents[t] < t`` for ``t >= 1`` (one root, parents before children)."""
    p = np.asarray(parents)
    if p.dtype.kind == "f" and np.all(np.isfinite(p)) and np.all(p == np.round(p)):
        p = p.astype(np.int64)
    if p.dtype.kind not in "iu" or p.ndim != 1 or p.shape[0] < 1:
        raise StructpredError(f"parents must be a non-empty 1-d integer array, got {p.dtype} of shape {p.shape}")
    p = p.astype(np.int64)
    if p[0] != -1:
        raise StructpredError(f"parents[0] must be -1 (node 0 is the root), got {p[0]}")
    t = np.arange(p.shape[0])
    bad = np.flatnonzero((p[1:] < 0) | (p[1:] >= t[1:])) + 1
    if bad.size:
        t0 = int(bad[0])
        why = "a second root: forests are refused" if p[t0] < 0 else "parents must precede their children"
        raise StructpredError(f"parents is not a tree in topological order (0 <= parents[t] < t): "
                              f"parents[{t0}] = {p[t0]} ({why})")
    p.flags.writeable = False
    return p


class TreeArray(np.ndarray):
    """A numpy array of one tree-structured output, carrying the tree: ``TreeArray(values, parents)``.

    ``values``: the labels ``(T,)`` or a vector in the embedding layout ``(T R + (T-1) R^2,)``;
    ``parents``: checked by :func:`check_parents`.  Elementwise arithmetic, copies, views and
    pickling keep ``parents`` (a slice keeps it too, and the space then refuses its size);
    results of another shape (sums, dot products) are plain, and so are ``np.asarray`` /
    ``np.array`` copies (``np.asanyarray`` keeps the tree).
    """

    def __new__(cls, values, parents):
        return attach_parents(values, check_parents(parents))

    def __array_finalize__(self, obj):
        self.parents = getattr(obj, "parents", None)

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        if arr.shape != self.shape:
            arr = arr.view(np.ndarray)
            return arr[()] if return_scalar else arr
        return super().__array_wrap__(arr, context, return_scalar)

    def __reduce__(self):
        fn, args, state = super().__reduce__()
        return fn, args, (state, self.parents)

    def __setstate__(self, state):
        state, self.parents = state
        super().__setstate__(state)


def attach_parents(values, parents) -> TreeArray:
    """``values`` as a TreeArray of the (already checked) ``parents``, without a copy."""
    a = np.asarray(values).view(TreeArray)
    a.parents = parents
    return a
