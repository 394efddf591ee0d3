"""Shared pieces of the dual block solvers: input checks, objectives, history."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from structpred.errors import StructpredError


@dataclass
class SolverResult:
    """Output of a solver run.

    W : (d, k) weights (the averaged iterate when averaging was requested).
    mu : (n, k) dual blocks.
    history : list of per-pass dicts (pass, primal, dual, gap, oracle_calls, seconds,
        [val_loss], plus solver-specific keys).
    state : solver-specific extra arrays (e.g. oracle warm-start state).
    """

    W: np.ndarray
    mu: np.ndarray
    history: list = field(default_factory=list)
    state: dict = field(default_factory=dict)


def check_problem(space, X, y, lam):
    X = np.asarray(X)
    if X.ndim != 2:
        raise StructpredError(f"X must be a 2-d array (n_samples, n_features), got shape {X.shape}")
    if X.shape[0] == 0:
        raise StructpredError("X has no rows")
    X = np.ascontiguousarray(X, dtype=np.float64)
    if not np.all(np.isfinite(X)):
        raise StructpredError("X contains NaN or infinite values")
    y = np.asarray(y)
    shape = tuple(getattr(space, "label_shape", ()))
    if y.ndim != 1 + len(shape) or y.shape[0] != X.shape[0]:
        want = f"1-d with {X.shape[0]} entries" if not shape else f"of shape ({X.shape[0]}, {', '.join(map(str, shape))})"
        raise StructpredError(f"y must be {want}, got shape {y.shape}")
    y = np.ascontiguousarray(space.check_labels(y))
    lam = float(lam)
    if not np.isfinite(lam) or lam <= 0:
        raise StructpredError(f"lam must be a positive number, got {lam}")
    return X, y, lam


def make_rng(random_state):
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


def init_dual(space, y):
    """``mu_i = phi(y_i)`` so that ``W(mu) = 0``."""
    return np.ascontiguousarray(space.embed(y).astype(np.float64))


def entropy_rows(mu):
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(mu > 0, mu * np.log(np.where(mu > 0, mu, 1.0)), 0.0)
    return -t.sum(axis=1)


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


def progress(iterable, verbose, desc):
    if verbose:
        from tqdm.auto import tqdm

        return tqdm(iterable, desc=desc)
    return iterable
