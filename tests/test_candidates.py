"""The Candidates space (Casimir §7.2): oracles against enumeration, its joint map, and the
library's solvers on it against cvxpy."""

import cvxpy as cp
import numpy as np
import pytest
from scipy.special import logsumexp

from structpred.errors import StructpredError
from structpred.features.joint import joint_map
from structpred.outputs import Candidates, Pick, capabilities
from structpred.solvers import bcfw, casimir_svrg, sgd
from structpred.surrogates import EntropySmoothedHinge, Hinge, TopKSmoothedHinge

SP = Candidates()


def toy(n=25, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(int(m), d)) for m in rng.integers(2, 7, size=n)]
    w = rng.normal(size=d)
    Y = [np.clip(1 - np.exp(x @ w) / np.exp(x @ w).max() + rng.uniform(0, 0.3, len(x)), 0, 1) for x in X]
    return X, Y


def test_capabilities_and_picks():
    assert {"loss-augmented decoding", "top-K", "marginals", "affine loss"} <= set(capabilities(SP))
    assert not any("max-min" in c for c in capabilities(SP))
    p = Pick(2, 5)
    assert p == 2 and p.m == 5 and isinstance(p, int)
    np.testing.assert_array_equal(SP.embed(p), [0, 0, 1, 0, 0])
    np.testing.assert_array_equal(SP.embed(np.array([0.4, 0.1, 0.9])), [0, 1, 0])   # a truth: its best candidate


def test_oracles_match_enumeration():
    rng = np.random.default_rng(1)
    for _ in range(50):
        m = int(rng.integers(1, 8))
        v, t = rng.normal(size=m), rng.uniform(size=m)
        vals = [v[j] + t[j] for j in range(m)]
        assert SP.loss_augmented(v, t) == int(np.argmax(vals)) and SP.decode(v) == int(np.argmax(v))
        for K in (1, 3, 10):
            picks, scores = SP.top_k(v, t, K)
            want = sorted(range(m), key=lambda j: -vals[j])[:K]
            assert [int(p) for p in picks] == want and all(p.m == m for p in picks)
            np.testing.assert_allclose(scores, [vals[j] for j in want])
        p = np.exp(v) / np.exp(v).sum()
        np.testing.assert_allclose(SP.marginals(v), p, rtol=1e-12)
        assert abs(SP.log_partition(v) - logsumexp(v)) < 1e-12
        assert abs(SP.entropy(p) + np.sum(p * np.log(p))) < 1e-12
        j = int(rng.integers(m))
        assert SP.loss(t, j) == t[j] and SP.loss(t, t) == t.min()
        assert abs(SP.linear_loss(t, p)[0] - t @ p) < 1e-12
        np.testing.assert_allclose(SP.mean_embedding(picks, np.ones(len(picks))), np.isin(np.arange(m), want))
    # batches are lists
    V, T = [rng.normal(size=3), rng.normal(size=5)], [rng.uniform(size=3), rng.uniform(size=5)]
    assert [p.m for p in SP.loss_augmented(V, T)] == [3, 5]
    np.testing.assert_allclose(SP.loss(T, SP.decode(V)), [T[0][np.argmax(V[0])], T[1][np.argmax(V[1])]])


def test_joint_map_adjoint():
    X, _ = toy()
    fm = joint_map(SP, X)
    rng = np.random.default_rng(2)
    w = rng.normal(size=fm.weight_shape)
    for i in range(fm.n):
        g = rng.normal(size=len(X[i]))
        np.testing.assert_allclose(fm.score(i, w), X[i] @ w)
        W = np.zeros(fm.weight_shape)
        fm.add(i, W, g)
        assert abs(W @ w - g @ fm.score(i, w)) < 1e-12          # <Psi g, w> = <g, Psi^T w>
        assert abs(fm.norm2(i, g) - W @ W) < 1e-12


def cvx_m3n(X, Y, lam):
    w = cp.Variable(X[0].shape[1])
    terms = [cp.max(t + x @ w) - x[int(np.argmin(t))] @ w for x, t in zip(X, Y)]
    prob = cp.Problem(cp.Minimize(sum(terms) / len(X) + lam / 2 * cp.sum_squares(w)))
    prob.solve(solver=cp.CLARABEL)
    return prob.value


@pytest.mark.parametrize("options", [{}, {"steps": "pairwise", "sampling": "gap", "block_steps": 3}])
def test_bcfw_on_candidates_matches_cvxpy(options):
    X, Y = toy()
    ref = cvx_m3n(X, Y, 0.1)
    res = bcfw(Hinge(SP), X, Y, 0.1, n_passes=3000, random_state=0, rtol=1e-4, **options)
    last = res.history[-1]
    assert last["gap"] <= 1e-4 * last["primal"] and abs(last["primal"] - ref) <= 2e-4 * ref
    assert all(r["dual"] <= ref + 1e-8 <= r["primal"] + 2e-8 for r in res.history)
    for mu in res.mu:                                    # dual blocks: distributions over candidates
        assert np.all(mu >= -1e-15) and abs(mu.sum() - 1) < 1e-12


def test_smoothed_surrogates_and_primal_solvers():
    X, Y = toy()
    rng = np.random.default_rng(3)
    v, t = rng.normal(size=6), rng.uniform(size=6)
    for sur in (TopKSmoothedHinge(SP, mu=0.5, K=6), EntropySmoothedHinge(SP, mu=0.5)):
        val, grad = sur.value_grad([v], [t])
        for j in range(6):                                # finite differences of the value in v
            e = np.zeros(6)
            e[j] = 1e-6
            fd = (sur.value_grad([v + e], [t])[0][0] - sur.value_grad([v - e], [t])[0][0]) / 2e-6
            assert abs(fd - grad[0][j]) < 1e-6
    # the top-K smoothing with K = m is the exact l2 smoothing: max_u u.(v + t) - mu/2 |u|^2 - v_y
    u = cp.Variable(6)
    prob = cp.Problem(cp.Maximize(u @ (v + t) - 0.25 * cp.sum_squares(u)), [u >= 0, cp.sum(u) == 1])
    prob.solve(solver=cp.CLARABEL)
    assert abs(TopKSmoothedHinge(SP, mu=0.5, K=6).value_grad([v], [t])[0][0] - (prob.value - v[np.argmin(t)])) < 1e-6
    ref = cvx_m3n(X, Y, 0.1)
    # measured: SGD 0.2873, Casimir-SVRG 0.2870 against the optimum 0.2862
    for res in (sgd(TopKSmoothedHinge(SP, mu=0.1, K=3), X, Y, 0.1, n_passes=100, eta0=0.1, t0=100.0, random_state=0),
                casimir_svrg(TopKSmoothedHinge(SP, mu=0.1, K=3), X, Y, 0.1, n_passes=30, mu0=0.1, lr=0.1,
                             random_state=0)):
        assert ref <= res.history[-1]["primal"] <= 1.005 * ref


def test_bad_input():
    with pytest.raises(StructpredError, match="list of per-example candidate-loss vectors"):
        SP.check_labels(np.zeros((3, 4)))
    with pytest.raises(StructpredError, match="finite candidate losses"):
        SP.check_labels([np.array([0.1, np.nan])])
    with pytest.raises(StructpredError, match="over 3 candidates but a truth over 2"):
        SP.loss_augmented(np.zeros(3), np.zeros(2))
    with pytest.raises(StructpredError, match="out of range"):
        SP.loss(np.zeros(2), 5)
    with pytest.raises(StructpredError, match="NaN"):
        SP.decode(np.array([0.0, np.nan]))
