"""The matrix's estimator factory (``structpred.papers.matrix.methods``): every method fits on
every space family it can, learns a separable toy problem, and a cell that cannot exist says why."""

from __future__ import annotations

import numpy as np
import pytest

from structpred.errors import ConfigError
from structpred.features import Sequences
from structpred.outputs import Chain, Multiclass, Permutation, Tree
from structpred.papers.matrix.methods import METHODS, estimator, game_of, smoothing_of, why_impossible


def _toy(space, rng):
    """Inputs and outputs decoded from a random linear model (a problem each method can fit)."""
    if isinstance(space, Chain):   # words of two lengths (QS: one ridge system per length)
        lengths = np.tile([3, 4], 40)
        X = Sequences(rng.normal(size=(lengths.sum(), 4)), np.concatenate([[0], np.cumsum(lengths)]))
        W = rng.normal(size=(4, space.n_labels))
        return X, [np.argmax(X.frames[a:b] @ W, axis=1).astype(np.int64) for a, b in zip(X.offsets, X.offsets[1:])]
    if isinstance(space, Tree):
        X = [rng.normal(size=(4, 4)) for _ in range(40)]
        W = rng.normal(size=(4, space.n_labels))
        return X, [np.argmax(x @ W, axis=1).astype(np.int64) for x in X]
    X = rng.normal(size=(60, 5))
    return X, space.decode(X @ rng.normal(size=(5, space.embedding_dim)))


SPACES = [Multiclass.zero_one(3), Multiclass.ordinal(4), Permutation(3), Chain(3), Tree(3, parents=[-1, 0, 0, 1])]
# QS on trees (inputs and outputs of many shapes) is not built yet; on chains it takes Sequences
CELLS = [(m, s) for m in METHODS for s in SPACES if not (m == "QS" and isinstance(s, Tree))]


@pytest.mark.parametrize("method,space", CELLS, ids=[f"{m}-{s!r}" for m, s in CELLS])
def test_every_feasible_cell_fits(method, space):
    reason = why_impossible(method, space)
    if reason is not None:
        assert method == "CRF" and isinstance(space, Permutation)
        assert "permanent" in reason and "#P-hard" in reason
        return
    X, y = _toy(space, np.random.default_rng(0))
    budget = {"kernel": "linear"} if method == "QS" else {"n_passes": 10}
    est = estimator(method, space, 1e-3, budget, 0).fit(X, y)
    first = {np.shape(t): t for t in reversed(y)}             # predicting one output for every input (of a shape)
    constant = np.mean([space.loss(t, first[np.shape(t)]) for t in y])
    assert est.task_loss(X, y) < 0.5 * constant, (method, space)


def test_choices_per_space():
    assert smoothing_of(Chain(3)) == "topk" and smoothing_of(Tree(3)) == "entropy"
    assert smoothing_of(Permutation(4)) == "topk"
    assert game_of(Permutation(4)) == "exact" and game_of(Multiclass.zero_one(3)) == "exact"
    assert game_of(Chain(3, node_loss=np.ones((3, 3)) - np.eye(3) + 0.5 * np.eye(3)[::-1])) == "spmp"


def test_unknown_method_and_budget_are_one_clear_error():
    with pytest.raises(ConfigError, match="unknown matrix method 'SVM'"):
        estimator("SVM", Chain(3), 1.0, {}, 0)
    with pytest.raises(ConfigError, match="matrix budget of M3N"):
        estimator("M3N", Chain(3), 1.0, {"n_pases": 3}, 0)
