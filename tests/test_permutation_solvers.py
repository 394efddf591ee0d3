"""BCFW and GBCFW on permutations against cvxpy and the exact LP; determinism, bad input."""

import cvxpy as cp
import numpy as np
import pytest

from structpred.errors import StructpredError
from structpred.outputs import Permutation
from structpred.solvers import bcfw, gbcfw, sdca
from structpred.solvers import primal_objective as primal
from structpred.surrogates import Hinge, LogLoss, MaxMinMargin
from tests.reference import all_perms, emb, perm_maxmin_lp

# --- solvers -----------------------------------------------------------------------------

def ranking_problem(n=20, M=4, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, -1] = 1.0
    Wt = rng.normal(size=(d, M * M))
    Y = Permutation(M).decode(X @ Wt + rng.normal(scale=1.5, size=(n, M * M)))
    return X, Y


def cvx_m3n_perm(X, Y, lam, M):
    ys = all_perms(M)
    E = np.array([emb(y, M) for y in ys])               # (M!, k)
    Lm = np.array([[np.mean(y != yp) for yp in ys] for y in Y])
    Phi = np.array([emb(y, M) for y in Y])
    n, d = X.shape
    W = cp.Variable((d, M * M))
    V = X @ W
    obj = cp.sum(cp.max(Lm + V @ E.T, axis=1) - cp.sum(cp.multiply(Phi, V), axis=1)) / n
    prob = cp.Problem(cp.Minimize(obj + lam / 2 * cp.sum_squares(W)))
    prob.solve(solver=cp.CLARABEL)
    return prob.value


def cvx_m4n_perm(X, Y, lam, M):
    """min_W mean_i min_{Q_i doubly stoch.} max_sigma <V_i - Q_i/M, P_sigma> + 1 - <V_i, P_{y_i}>."""
    ys = all_perms(M)
    E = np.array([emb(y, M) for y in ys])
    Phi = np.array([emb(y, M) for y in Y])
    n, d = X.shape
    W = cp.Variable((d, M * M))
    Q = cp.Variable((n, M * M), nonneg=True)
    V = X @ W
    cons = []
    for i in range(M):
        cons += [cp.sum(Q[:, i * M:(i + 1) * M], axis=1) == 1, cp.sum(Q[:, i::M], axis=1) == 1]
    obj = cp.sum(cp.max((V - Q / M) @ E.T, axis=1) + 1 - cp.sum(cp.multiply(Phi, V), axis=1)) / n
    prob = cp.Problem(cp.Minimize(obj + lam / 2 * cp.sum_squares(W)), cons)
    prob.solve(solver=cp.CLARABEL)
    return prob.value


@pytest.mark.parametrize("averaging", [False, True])
def test_bcfw_permutation_matches_cvxpy(averaging):
    M = 4
    X, Y = ranking_problem(M=M)
    sp = Permutation(M)
    lam = 1.0
    res = bcfw(Hinge(sp), X, Y, lam, n_passes=2000, averaging=averaging, random_state=0, tol=2e-4)
    h = res.history[-1]
    assert h["gap"] <= 2e-4
    ref = cvx_m3n_perm(X, Y, lam, M)
    assert abs(h["primal"] - ref) <= 1e-3 * abs(ref)
    assert all(r["dual"] <= ref + 1e-7 and r["primal"] >= ref - 1e-7 for r in res.history)
    assert abs(primal(Hinge(sp), X, Y, res.W, lam) - h["primal"]) < 1e-12
    # dual blocks stay in the Birkhoff polytope
    mu3 = res.mu.reshape(-1, M, M)
    np.testing.assert_allclose(mu3.sum(1), 1.0, atol=1e-10)
    np.testing.assert_allclose(mu3.sum(2), 1.0, atol=1e-10)
    assert mu3.min() >= -1e-12


def exact_m4n_primal_perm(X, Y, W, lam, M):
    V = X @ W
    vals = [perm_maxmin_lp(V[i], M) - V[i] @ emb(Y[i], M) for i in range(X.shape[0])]
    return float(np.mean(vals)) + lam / 2 * np.sum(W * W)


def test_gbcfw_permutation_matches_exact_lp_and_cvxpy():
    M = 4
    X, Y = ranking_problem(M=M, seed=1)
    sp = Permutation(M)
    lam = 1.0
    res = gbcfw(MaxMinMargin(sp, n_iter=20, warm_start=True, warm_mix=1e-9, n_iter_eval=1000), X, Y, lam,
                n_passes=600, random_state=0, eval_every=25, tol=1e-3)
    h = res.history[-1]
    assert h["gap"] <= 1e-3          # certified: SP-MP upper bound - exact dual
    ref = cvx_m4n_perm(X, Y, lam, M)
    exact = exact_m4n_primal_perm(X, Y, res.W, lam, M)
    assert ref - 1e-7 <= exact <= ref + 1e-3 * abs(ref)
    assert all(r["dual"] <= ref + 1e-7 and r["primal"] >= ref - 1e-7 for r in res.history)
    assert h["primal_lower"] <= exact + 1e-9 <= h["primal"] + 1e-9


def test_solver_determinism_and_bad_input():
    X, Y = ranking_problem(n=15)
    sp = Permutation(4)
    for f, sur in ((bcfw, Hinge), (gbcfw, MaxMinMargin)):
        r1 = f(sur(sp), X, Y, 0.1, n_passes=3, random_state=7, X_val=X, y_val=Y)
        r2 = f(sur(sp), X, Y, 0.1, n_passes=3, random_state=7)
        np.testing.assert_array_equal(r1.W, r2.W)
        assert r1.W.shape == (5, 16) and r1.history[-1]["oracle_calls"] == 45
        assert 0 <= r1.history[-1]["val_loss"] <= 1
    with pytest.raises(StructpredError, match="permanent"):
        sdca(LogLoss(sp), X, Y, 0.1)
    with pytest.raises(StructpredError):
        bcfw(Hinge(sp), X, Y[:, :3], 0.1)
    with pytest.raises(StructpredError):
        gbcfw(MaxMinMargin(sp), X, Y[:-1], 0.1)
    Yb = Y.copy()
    Yb[0] = [0, 0, 1, 2]
    with pytest.raises(StructpredError, match="not a permutation"):
        bcfw(Hinge(sp), X, Yb, 0.1)
