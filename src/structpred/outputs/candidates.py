"""Candidates: choose one of an example's finite set of candidates (Casimir §7.2: boxes).

Example ``i`` has ``m_i`` candidates; its truth is the vector of their losses ``l_i``
(``l_ij = 1 - IoU(ground truth, box j)`` for localisation), the embedding of candidate ``j``
is ``e_j`` in ``R^{m_i}``, a score is ``v_i`` in ``R^{m_i}`` and the task loss of choosing
``j`` is ``L(l_i, j) = l_ij``, affine in ``e_j`` (``A^T phi = l_i``, no constant).  The
labelled output of a truth is its best candidate ``argmin_j l_ij`` (the box of highest
IoU), whose loss may be positive.  Outputs are :class:`Pick` (an ``int``: the index, which
also knows ``m_i``).  Oracles: ``decode`` / ``loss_augmented`` ``argmax_j v_j (+ l_ij)``,
``top_k`` (the ``K`` largest), ``marginals`` ``softmax(v)``, ``log_partition``, ``entropy``;
ties go to the smallest index.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp, softmax

from structpred.errors import StructpredError
from structpred.outputs.base import AffineLoss, LossAugmented, Marginals, OutputSpace, TopK
from structpred.outputs.batch import is_ragged


class Pick(int):
    """A chosen candidate: its index (an ``int``), with ``m`` the example's number of candidates."""

    def __new__(cls, index: int, m: int):
        out = int.__new__(cls, index)
        out.m = int(m)
        return out

    def __repr__(self) -> str:
        return f"Pick({int(self)} of {self.m})"


def _truth(y) -> np.ndarray:
    """One truth: a non-empty 1-d vector of finite candidate losses."""
    a = np.asarray(y, dtype=np.float64)
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)):
        raise StructpredError("a candidates truth is a non-empty 1-d vector of finite candidate losses")
    return a


class Candidates(OutputSpace, LossAugmented, TopK, Marginals, AffineLoss):
    """One of ``m_i`` candidates per example (see the module docstring)."""

    name = "candidates"
    ragged = True
    joint_map = "candidates"

    @property
    def embedding_dim(self) -> int:
        """Varies with the example (``m_i``): 0 stands for "per example"."""
        return 0

    @property
    def n_labels(self) -> int:
        return 0

    @property
    def loss_offset(self) -> float:
        return 0.0

    def check_labels(self, y):
        if not is_ragged(y):
            raise StructpredError("candidates labels are a list of per-example candidate-loss vectors")
        return [_truth(t) for t in y]

    def _one_or_batch(self, fn, *args):
        if is_ragged(args[0]):
            return [fn(*row) for row in zip(*args)]
        return fn(*args)

    def embed(self, y):
        """``e_j`` for a :class:`Pick` ``j``; ``e_{argmin l}`` for a truth ``l``."""
        def one(t):
            if isinstance(t, Pick):
                e = np.zeros(t.m)
                e[int(t)] = 1.0
                return e
            t = _truth(t)
            e = np.zeros(t.size)
            e[int(np.argmin(t))] = 1.0
            return e
        return [one(t) for t in y] if is_ragged(y) else one(y)

    def loss(self, y, y2):
        """``l_{j}`` of choosing ``y2 = j`` under truth ``y = l`` (``y2`` a truth: its best candidate)."""
        def one(t, p):
            t = _truth(t)
            j = int(np.argmin(_truth(p))) if not isinstance(p, (int, np.integer)) else int(p)
            if not 0 <= j < t.size:
                raise StructpredError(f"candidate {j} is out of range for an example with {t.size} candidates")
            return float(t[j])
        if is_ragged(y):
            if not is_ragged(y2) or len(y2) != len(y):
                raise StructpredError(f"{len(y)} truths but {len(y2) if is_ragged(y2) else 1} outputs")
            return np.array([one(t, p) for t, p in zip(y, y2)])
        return one(y, y2)

    def loss_scores(self, y):
        """``A^T phi(y)`` of a truth: its loss vector (the loss is linear in ``e_j``)."""
        return [_truth(t) for t in y] if is_ragged(y) else _truth(y)

    def min_loss(self, mu):
        raise StructpredError("Candidates: the Bayes decoding needs the truth's losses, which a prediction lacks")

    def bayes_decode(self, mu):
        """``argmax_j mu_j``: the most probable candidate (the loss is per example, unknown at prediction)."""
        return self.decode(mu)

    def decode(self, v):
        return self._one_or_batch(lambda s: Pick(int(np.argmax(_score(s))), len(s)), v)

    def loss_augmented(self, v, y):
        def one(s, t):
            s, t = _score(s), _truth(t)
            _same_size(s, t)
            return Pick(int(np.argmax(s + t)), s.size)
        return self._one_or_batch(one, v, y)

    def top_k(self, v, y, K: int):
        """The ``K`` (at most ``m_i``) candidates of largest ``v_j (+ l_j)``, in decreasing order
        (stable: ties by index), as ``(picks, scores)``: an object array of :class:`Pick` and
        their scores."""
        def one(s, t):
            s = _score(s)
            if t is not None:
                t = _truth(t)
                _same_size(s, t)
                s = s + t
            order = np.argsort(-s, kind="stable")[:K]
            picks = np.empty(order.size, dtype=object)
            picks[:] = [Pick(int(j), s.size) for j in order]
            return picks, s[order]
        if is_ragged(v):
            ys = y if y is not None else [None] * len(v)
            return [one(s, t) for s, t in zip(v, ys)]
        return one(v, y)

    def mean_embedding(self, Y, w):
        out = np.zeros(Y[0].m)
        for p, wk in zip(Y, w):
            out[int(p)] += wk
        return out

    def marginals(self, v):
        return self._one_or_batch(lambda s: softmax(_score(s)), v)

    def log_partition(self, v):
        out = self._one_or_batch(lambda s: float(logsumexp(_score(s))), v)
        return np.asarray(out) if is_ragged(v) else out

    def entropy(self, mu):
        def one(m):
            m = np.asarray(m, dtype=np.float64)
            nz = m[m > 0]
            return float(-np.sum(nz * np.log(nz)))
        out = self._one_or_batch(one, mu)
        return np.asarray(out) if is_ragged(mu) else out

    def entropy_coefficients(self, mu) -> np.ndarray:
        return np.ones(np.asarray(mu).shape[0])


def _score(s) -> np.ndarray:
    s = np.asarray(s, dtype=np.float64)
    if s.ndim != 1 or s.size == 0:
        raise StructpredError("a candidates score is a non-empty 1-d vector (one entry per candidate)")
    if not np.all(np.isfinite(s)):
        raise StructpredError("scores contain NaN or infinite values")
    return s


def _same_size(s, t) -> None:
    if s.size != t.size:
        raise StructpredError(f"a score over {s.size} candidates but a truth over {t.size}")
