"""Murty's ranking of assignments (``structpred.outputs.assignment_kbest``) against enumerating
every permutation, and Permutation's top-K oracle built on it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from structpred.errors import StructpredError
from structpred.outputs import Permutation
from structpred.outputs.assignment_kbest import k_best_assignments


def _all_ranked(S):
    M = S.shape[0]
    perms = [np.array(p) for p in itertools.permutations(range(M))]
    scores = np.array([S[np.arange(M), p].sum() for p in perms])
    order = np.argsort(-scores, kind="stable")
    return [perms[i] for i in order], scores[order]


@pytest.mark.parametrize("M", [2, 3, 4, 5])
def test_every_permutation_in_order_of_its_score(M):
    S = np.random.default_rng(M).normal(size=(M, M))
    n = int(np.prod(range(1, M + 1)))
    Y, scores = k_best_assignments(S, n + 3)        # more than there are: all M!, once each
    perms, truth = _all_ranked(S)
    assert Y.shape == (n, M)
    np.testing.assert_allclose(scores, truth, atol=1e-12)
    assert len({tuple(y) for y in Y}) == n
    np.testing.assert_allclose([S[np.arange(M), y].sum() for y in Y], scores, atol=1e-12)


def test_ties_and_a_prefix():
    S = np.zeros((4, 4))            # every permutation scores 0: 24 distinct ones all the same
    Y, scores = k_best_assignments(S, 24)
    assert len({tuple(y) for y in Y}) == 24 and np.all(scores == 0.0)
    S = np.random.default_rng(7).normal(size=(6, 6))
    Y5, s5 = k_best_assignments(S, 5)
    Y9, s9 = k_best_assignments(S, 9)
    np.testing.assert_array_equal(Y9[:5], Y5)
    np.testing.assert_allclose(s5, _all_ranked(S)[1][:5], atol=1e-12)


def test_permutation_top_k_adds_the_loss_and_batches():
    sp = Permutation(4)
    rng = np.random.default_rng(3)
    V = rng.normal(size=(3, 16))
    ys = np.array([rng.permutation(4) for _ in range(3)])
    out = sp.top_k(V, ys, 5)
    assert len(out) == 3
    for (Y, s), v, y in zip(out, V, ys):
        full = [sp.loss(y, p) + v @ sp.embed(p) for p in itertools.permutations(range(4))]
        np.testing.assert_allclose(s, np.sort(full)[::-1][:5], atol=1e-12)
        np.testing.assert_allclose([sp.loss(y, p) + v @ sp.embed(p) for p in Y], s, atol=1e-12)
        Y1, s1 = sp.top_k(v, y, 5)
        np.testing.assert_array_equal(Y1, Y)
    Y0, s0 = sp.top_k(V[0], None, 2)
    np.testing.assert_array_equal(Y0[0], sp.decode(V[0]))
    with pytest.raises(StructpredError, match="K must be >= 1"):
        sp.top_k(V[0], None, 0)
    with pytest.raises(StructpredError, match="3 scores but 2 rankings"):
        sp.top_k(V, ys[:2], 2)
