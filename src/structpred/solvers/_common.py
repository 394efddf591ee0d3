"""Shared pieces of the dual block solvers: input checks, objectives, history."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from structpred.errors import StructpredError
from structpred.features.joint import joint_map


@dataclass
class SolverResult:
    """Output of a solver run.

    W : weights of the joint feature map (``(d, k)`` for ``v = W^T x``; the averaged
        iterate when averaging was requested).
    mu : dual blocks, ``(n, k)`` or a list of per-sample vectors.
    history : list of per-pass dicts (pass, primal, dual, gap, oracle_calls, seconds,
        [val_loss], plus solver-specific keys).
    state : solver-specific extra arrays (e.g. oracle warm-start state).
    """

    W: np.ndarray
    mu: np.ndarray
    history: list = field(default_factory=list)
    state: dict = field(default_factory=dict)


def check_problem(space, X, y, lam):
    """Validate a training problem; returns ``(fmap, y, lam)`` with ``fmap`` the joint feature
    map of ``space`` on ``X`` (:func:`structpred.features.joint.joint_map`)."""
    fmap = joint_map(space, X)
    n = fmap.n
    if isinstance(y, (list, tuple)):
        if len(y) != n:
            raise StructpredError(f"y has {len(y)} label sequences but X has {n} samples")
        y = space.check_labels(list(y))
        lengths = getattr(fmap, "seq", None)
        if lengths is not None and any(len(s) != t for s, t in zip(y, fmap.seq.lengths)):
            raise StructpredError("a label sequence and its input sequence have different lengths")
    else:
        y = np.asarray(y)
        shape = tuple(getattr(space, "label_shape", ()))
        if None in shape:
            raise StructpredError(f"{space!r} takes y as a list of label sequences")
        if y.ndim != 1 + len(shape) or y.shape[0] != n:
            want = f"1-d with {n} entries" if not shape else f"of shape ({n}, {', '.join(map(str, shape))})"
            raise StructpredError(f"y must be {want}, got shape {y.shape}")
        y = np.ascontiguousarray(space.check_labels(y))
    lam = float(lam)
    if not np.isfinite(lam) or lam <= 0:
        raise StructpredError(f"lam must be a positive number, got {lam}")
    return fmap, y, lam


def make_rng(random_state):
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


def init_dual(space, y):
    """``mu_i = phi(y_i)`` so that ``W(mu) = 0`` (an ``(n, k)`` array, or a list of vectors
    for spaces whose embedding size varies per sample)."""
    phi = space.embed(y)
    if isinstance(phi, list):
        return [np.array(p, dtype=np.float64) for p in phi]
    return np.ascontiguousarray(phi.astype(np.float64))


class PassTimer:
    """Accumulates training time only (evaluation between passes is excluded)."""

    def __init__(self):
        self.total = 0.0
        self._t = None

    def __enter__(self):
        self._t = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.total += time.perf_counter() - self._t


def val_record(rec, predict, X_val, y_val, space):
    if X_val is not None:
        pred = predict(X_val)
        rec["val_loss"] = float(np.mean(space.loss(y_val, pred)))
    return rec


def copy_state(state):
    """Deep copy of an oracle warm-start state (arrays, or lists of arrays / None)."""
    if isinstance(state, list):
        return [None if s is None else s.copy() for s in state]
    return state.copy()


def progress(iterable, verbose, desc):
    if verbose:
        from tqdm.auto import tqdm

        return tqdm(iterable, desc=desc)
    return iterable
