"""The adversarial bipartite matching game (``Permutation.max_min_exact``) against the brute-force
game: every permutation a pure strategy, the max player's mixed strategy by a linear program over
the ``M!``-simplex (M <= 5); bounds that bracket it; AGM trained on rankings with it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from structpred.estimators import AGM
from structpred.outputs import Permutation


def _brute_game(V):
    """``max_p min_tau sum_sigma p_sigma (-<P_tau, P_sigma>/M + <V, P_sigma>)`` over distributions
    ``p`` on all ``M!`` permutations (an LP in ``(p, z)``)."""
    M = V.shape[0]
    perms = [np.array(s) for s in itertools.permutations(range(M))]
    n = len(perms)
    G = np.array([[-np.sum(t == s) / M + V[np.arange(M), s].sum() for s in perms] for t in perms])
    c = np.append(np.zeros(n), -1.0)                       # maximise z
    A_ub = np.hstack([-G, np.ones((n, 1))])                # z <= sum_sigma p_sigma G[tau, sigma]
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(n), A_eq=[np.append(np.ones(n), 0.0)], b_eq=[1.0],
                  bounds=[(0, None)] * n + [(None, None)], method="highs")
    assert res.status == 0
    return res.x[-1]


def _doubly_stochastic(Q, atol=1e-12):
    return Q.min() >= -atol and np.allclose(Q.sum(0), 1, atol=atol) and np.allclose(Q.sum(1), 1, atol=atol)


@pytest.mark.parametrize("M", [2, 3, 4, 5])
@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0])
def test_the_exact_game_equals_the_brute_force_game(M, scale):
    sp = Permutation(M)
    rng = np.random.default_rng(10 * M + int(scale))
    for _ in range(3):
        v = scale * rng.normal(size=M * M)
        res = sp.max_min_exact(v, tol=1e-10)
        truth = _brute_game(v.reshape(M, M))
        assert res.value <= truth + 1e-9 and truth <= res.upper + 1e-9     # true bounds
        assert res.upper - res.value < 1e-8 and abs(res.value - truth) < 1e-8
        Q, N = res.mu.reshape(M, M), res.nu.reshape(M, M)
        assert _doubly_stochastic(Q) and _doubly_stochastic(N)
        # the reported bounds are the named matrices' own values (Hungarian best responses)
        perms = [np.array(s) for s in itertools.permutations(range(M))]
        lower_q = min(-np.sum(Q[np.arange(M), t]) / M for t in perms) + np.sum(v.reshape(M, M) * Q)
        upper_n = max(np.sum((v.reshape(M, M) - N / M)[np.arange(M), s]) for s in perms)
        assert abs(lower_q - res.value) < 1e-12 and abs(upper_n - res.upper) < 1e-12
        # SP-MP's certified interval contains it too
        spmp = sp.max_min(v, n_iter=200)
        assert spmp.value <= truth + 1e-9 <= spmp.upper + 2e-9


def test_warm_state_and_batch():
    sp = Permutation(4)
    rng = np.random.default_rng(0)
    V = rng.normal(size=(3, 16))
    batch = sp.max_min_exact(V)
    for i in range(3):
        one = sp.max_min_exact(V[i])
        assert abs(one.value - batch.value[i]) < 1e-12
        again = sp.max_min_exact(V[i] + 1e-3, warm=batch.state[i])
        cold = sp.max_min_exact(V[i] + 1e-3)
        assert abs(again.value - cold.value) < 1e-8 and again.gap < 1e-8


def test_agm_learns_rankings_with_the_exact_game():
    rng = np.random.default_rng(1)
    sp = Permutation(4)
    X = rng.normal(size=(60, 5))
    y = sp.decode(X @ rng.normal(size=(5, 16)))
    est = AGM(loss=sp, game="exact", lam=1e-3, n_passes=15, random_state=0).fit(X, y)
    assert est.task_loss(X, y) < 0.15       # chance is 1 - 1/M = 0.75
    primal = est.history_["primal"].to_numpy()      # the game's upper values: a true objective
    assert primal[-1] < 0.6 * primal[0]
