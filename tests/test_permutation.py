"""Permutation output space (label ranking, M4N Example 2.2 / App. G.3): oracles vs brute
force, SP-MP vs an exact LP over the Birkhoff polytope, Sinkhorn vs cvxpy / POT, BCFW and
GBCFW vs cvxpy, estimator API."""

import itertools

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import linprog
from sklearn.base import clone

from structpred.errors import StructpredError
from structpred.estimators import CRF, M3N, M4N
from structpred.outputs import Multiclass, Permutation, make_space
from structpred.outputs import _permutation_kernels as PK
from structpred.outputs.base import Marginals, require
from structpred.solvers import bcfw, gbcfw, sdca
from structpred.surrogates import Hinge, LogLoss, MaxMinMargin
from structpred.solvers import primal_objective as primal


def all_perms(M):
    return np.array(list(itertools.permutations(range(M))), dtype=np.int64)


def emb(y, M):
    P = np.zeros((M, M))
    P[np.arange(M), y] = 1.0
    return P.ravel()


def maxmin_lp(v, M):
    """Exact ``max_P min_Q -<Q, P>/M + <v, P> + 1`` over doubly stochastic P, Q.

    The inner min is ``-(1/M) max_Q <Q, P>``, an assignment LP whose dual is
    ``min sum(u) + sum(w) s.t. u_i + w_j >= P_ij``; variables ``[P (M^2), u (M), w (M)]``.
    """
    k = M * M
    c = -np.r_[v, -np.ones(2 * M) / M]
    A_ub = np.zeros((k, k + 2 * M))
    for i in range(M):
        for j in range(M):
            r = i * M + j
            A_ub[r, r] = 1.0
            A_ub[r, k + i] = -1.0
            A_ub[r, k + M + j] = -1.0
    A_eq = np.zeros((2 * M, k + 2 * M))
    for i in range(M):
        A_eq[i, i * M:(i + 1) * M] = 1.0
        A_eq[M + i, i:k:M] = 1.0
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(k), A_eq=A_eq, b_eq=np.ones(2 * M),
                  bounds=[(0, None)] * k + [(None, None)] * (2 * M), method="highs")
    assert res.status == 0
    return -res.fun + 1.0


# --- oracles ---------------------------------------------------------------------------

def test_embedding_and_loss_values():
    sp = Permutation(4)
    assert sp.embedding_dim == 16 and sp.n_labels == 4 and sp.loss_offset == 1.0
    y = np.array([2, 0, 3, 1])
    P = sp.embed(y).reshape(4, 4)
    np.testing.assert_array_equal(np.argmax(P, axis=1), y)
    np.testing.assert_array_equal(P.sum(0), 1.0)
    assert sp.loss(y, y) == 0.0
    assert sp.loss(y, [0, 2, 3, 1]) == 0.5
    assert sp.loss(y, [0, 1, 2, 3]) == 1.0
    np.testing.assert_allclose(sp.loss([[0, 1, 2, 3], [3, 2, 1, 0]], [[0, 1, 3, 2], [3, 2, 1, 0]]), [0.5, 0.0])
    # affine decomposition L(y, y') = phi(y)^T A phi(y') + a with A = -I/M, a = 1
    ys = all_perms(4)
    E = sp.embed(ys)
    Lmat = np.array([[sp.loss(a, b) for b in ys] for a in ys])
    np.testing.assert_allclose(Lmat, E @ sp.loss_matrix @ E.T + sp.loss_offset, atol=1e-15)
    np.testing.assert_allclose(sp.linear_loss(ys[:5], E[7:12]) + 1.0, Lmat[np.arange(5), np.arange(7, 12)])


@pytest.mark.parametrize("M", [2, 3, 4, 5])
def test_decode_and_loss_augmented_brute_force(M):
    sp = Permutation(M)
    rng = np.random.default_rng(M)
    ys = all_perms(M)
    E = np.array([emb(y, M) for y in ys])
    n = 40
    V = rng.normal(scale=0.5, size=(n, M * M))
    Y = ys[rng.integers(0, len(ys), n)]
    dec = sp.decode(V)
    aug = sp.loss_augmented(V, Y)
    assert dec.shape == (n, M) and dec.dtype == np.int64
    for i in range(n):
        np.testing.assert_array_equal(dec[i], ys[np.argmax(E @ V[i])])
        obj = np.array([np.mean(Y[i] != yp) for yp in ys]) + E @ V[i]
        np.testing.assert_array_equal(aug[i], ys[np.argmax(obj)])
        np.testing.assert_array_equal(sp.decode(V[i]), dec[i])
        np.testing.assert_array_equal(sp.loss_augmented(V[i], Y[i]), aug[i])
        # Bayes decoding from marginals = argmin expected loss = assignment on m
        m = rng.dirichlet(np.ones(len(ys)))
        mu = m @ E
        risk = [m @ np.array([np.mean(yt != yp) for yt in ys]) for yp in ys]
        np.testing.assert_array_equal(sp.bayes_decode(mu), ys[np.argmin(risk)])
    # hinge surrogate = brute-force max over all permutations
    h, _ = Hinge(sp).value_grad(V, Y)
    ref = [max(np.mean(Y[i] != yp) + (emb(yp, M) - emb(Y[i], M)) @ V[i] for yp in ys) for i in range(n)]
    np.testing.assert_allclose(h, ref, atol=1e-12)
    # min_loss = min over permutations of phi(y')^T A mu
    mu = rng.dirichlet(np.ones(len(ys)), size=5) @ E
    np.testing.assert_allclose(sp.min_loss(mu), np.min(-(mu @ E.T) / M, axis=1), atol=1e-12)


def test_no_marginals_clear_error():
    sp = Permutation(4)
    assert not hasattr(sp, "marginals") and not hasattr(sp, "log_partition")
    with pytest.raises(StructpredError, match="CRF needs marginals.*#P-hard"):
        require(sp, Marginals, "CRF")
    with pytest.raises(StructpredError, match="permanent"):
        LogLoss(sp)


def test_check_labels_and_factory():
    sp = Permutation(4)
    with pytest.raises(StructpredError, match="not a permutation"):
        sp.check_labels([[0, 1, 2, 3], [0, 0, 2, 3]])
    with pytest.raises(StructpredError):
        sp.check_labels([0, 1, 2])
    with pytest.raises(StructpredError):
        sp.check_labels([0.5, 1, 2, 3])
    with pytest.raises(StructpredError):
        Permutation(1)
    assert isinstance(make_space("permutation_hamming", 5), Permutation) and make_space("permutation_hamming", 5).M == 5
    np.testing.assert_array_equal(make_space("zero_one", 3).loss_matrix, 1 - np.eye(3))
    np.testing.assert_array_equal(make_space("ordinal", 3).loss_matrix, [[0, 1, 2], [1, 0, 1], [2, 1, 0]])
    with pytest.raises(StructpredError):
        make_space("kendall", 4)


# --- Sinkhorn --------------------------------------------------------------------------

def test_sinkhorn_kl_projection_vs_cvxpy_and_pot():
    import ot

    rng = np.random.default_rng(0)
    for M in (3, 4, 5):
        Z = rng.normal(scale=1.5, size=(M, M))
        f, g, L = np.zeros(M), np.zeros(M), np.empty((M, M))
        it, err = PK.sinkhorn_log(Z, f, g, 10000, 1e-13, L)
        assert err <= 1e-13 and it < 10000
        P = np.exp(L)
        np.testing.assert_allclose(P.sum(0), 1.0, atol=1e-14)
        np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-12)
        # generic convex solver: argmin_{P doubly stochastic} KL(P || exp(Z))
        X = cp.Variable((M, M), nonneg=True)
        prob = cp.Problem(cp.Minimize(cp.sum(cp.kl_div(X, np.exp(Z)))),
                          [cp.sum(X, axis=0) == 1, cp.sum(X, axis=1) == 1])
        prob.solve(solver=cp.CLARABEL)
        np.testing.assert_allclose(P, X.value, atol=5e-5)   # interior-point accuracy on exp cones
        kl = float(np.sum(P * (L - Z) - P + np.exp(Z)))
        assert kl <= prob.value + 1e-7 and kl >= prob.value - 1e-4
        # POT's log-domain Sinkhorn with uniform (unit) marginals, cost -Z, reg 1
        T = ot.sinkhorn(np.ones(M), np.ones(M), -Z, 1.0, method="sinkhorn_log", numItermax=10000, stopThr=1e-14)
        np.testing.assert_allclose(P, T, atol=1e-10)
        # warm start from the solution: converges in one sweep
        it2, _ = PK.sinkhorn_log(Z, f, g, 100, 1e-12, L)
        assert it2 == 1
    # rounding lands exactly on the polytope
    F = rng.random((5, 5)) + 0.1
    PK.round_birkhoff(F)
    np.testing.assert_allclose(F.sum(0), 1.0, atol=1e-14)
    np.testing.assert_allclose(F.sum(1), 1.0, atol=1e-14)
    assert F.min() >= 0


# --- max-min oracle --------------------------------------------------------------------

@pytest.mark.parametrize("M", [3, 4, 5])
def test_maxmin_vs_exact_lp(M):
    sp = Permutation(M, sinkhorn_max_iter=50, sinkhorn_tol=1e-12)
    rng = np.random.default_rng(10 + M)
    V = rng.normal(scale=0.5, size=(4, M * M))
    lp = np.array([maxmin_lp(v, M) for v in V])
    res = sp.max_min(V, n_iter=3000)
    a = sp.loss_offset
    # certified bracket and convergence to the LP value
    assert np.all(res.value + a <= lp + 1e-9) and np.all(lp <= res.upper + a + 1e-9)
    assert np.all(res.gap < 3e-3)
    np.testing.assert_allclose(res.value + a, lp, atol=3e-3)
    # averaged pair doubly stochastic
    for Pm in (res.mu, res.nu):
        P3 = Pm.reshape(-1, M, M)
        np.testing.assert_allclose(P3.sum(1), 1.0, atol=1e-12)
        np.testing.assert_allclose(P3.sum(2), 1.0, atol=1e-12)
    # the gap is exact: recompute both inner problems by enumerating permutations
    E = np.array([emb(y, M) for y in all_perms(M)])
    up = np.max((V - res.nu / M) @ E.T, axis=1)
    lo = np.min(-(res.mu @ E.T) / M, axis=1) + np.sum(V * res.mu, axis=1)
    np.testing.assert_allclose(res.upper, up, atol=1e-12)
    np.testing.assert_allclose(res.value, lo, atol=1e-12)
    # the M4N surrogate adds the loss constant
    y = all_perms(M)[:4]
    val, grad, _ = MaxMinMargin(sp, n_iter=3000).bounds(V, y)
    np.testing.assert_allclose(val, lp - np.sum(V * sp.embed(y), axis=1), atol=3e-3)


def test_spmp_gap_decreases_with_K_and_warm_start_helps():
    M = 5
    sp = Permutation(M, sinkhorn_max_iter=100, sinkhorn_tol=1e-12)
    V = np.random.default_rng(1).normal(size=(30, M * M))
    gaps = [float(np.mean(sp.max_min(V, n_iter=K).gap)) for K in (5, 10, 20, 40, 80, 160)]
    assert all(g2 < g1 for g1, g2 in zip(gaps, gaps[1:]))
    assert gaps[-1] < gaps[0] / 10
    # Theorem G.1 with eta = M/2: gap <= 4 log(M) / K (exact projections)
    for K, g in zip((5, 10, 20, 40, 80, 160), gaps):
        assert g <= 4 * np.log(M) / K
    # warm start: 20 more iterations from the previous state beat 20 from scratch
    r1 = sp.max_min(V, n_iter=20)
    warm = sp.max_min(V, warm=r1.state, n_iter=20)
    assert np.mean(warm.gap) < 0.5 * np.mean(r1.gap)
    # warm start after a small change of the scores (as in GBCFW) still helps
    V2 = V + 0.05 * np.random.default_rng(2).normal(size=V.shape)
    assert np.mean(sp.max_min(V2, warm=r1.state, n_iter=20).gap) < np.mean(sp.max_min(V2, n_iter=20).gap)
    # the caller's state is not modified
    s0 = r1.state[0].copy()
    sp.max_min(V, warm=r1.state, n_iter=5)
    np.testing.assert_array_equal(r1.state[0], s0)
    # default (rate-driven Sinkhorn tolerance) stays close to exact projections
    g_def = float(np.mean(Permutation(M).max_min(V, n_iter=20).gap))
    assert g_def <= 1.1 * gaps[2]


@pytest.mark.parametrize("M,K,scale", [(5, 1000, 1.0), (5, 1000, 30.0), (5, 1000, 500.0),
                                       (5, 20, 30.0), (11, 20, 1.0), (11, 20, 30.0)])
def test_spmp_gap_follows_the_rate_at_every_scale(M, K, scale):
    """Theorem G.1: gap <= 4 log(M) / K whatever the score scale, with the Sinkhorn
    tolerance derived from the rate.  With a fixed 10 sweeps per projection (the reference
    code's) the gap grows with the scale (M = 5, scale 500, K = 1000: about 50)."""
    V = scale * np.random.default_rng(int(scale) + M).normal(size=(6, M * M))
    rate = 4 * np.log(M) / K
    # the default cap (1000 sweeps) binds only on very peaked iterates: 1.18 x the rate at scale 500
    assert np.max(Permutation(M).max_min(V, n_iter=K).gap) <= (1.25 if scale > 100 else 1.0) * rate
    assert np.max(Permutation(M, sinkhorn_max_iter=10_000).max_min(V, n_iter=K).gap) <= rate
    if scale >= 30:  # the defect this guards against
        fixed = Permutation(M, sinkhorn_max_iter=10, sinkhorn_tol=1e-9).max_min(V, n_iter=K).gap
        assert np.max(fixed) > rate


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
    vals = [maxmin_lp(V[i], M) - V[i] @ emb(Y[i], M) for i in range(X.shape[0])]
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


# --- estimators ------------------------------------------------------------------------

def ranking_data(n=160, p=4, M=4, seed=0):
    """Rankings driven by a linear score per label: learnable by a linear model."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    B = rng.normal(size=(p, M))
    s = X @ B + 0.3 * rng.normal(size=(n, M))
    Y = np.argsort(np.argsort(-s, axis=1), axis=1).astype(np.int64)  # rank positions
    return X, Y


@pytest.mark.parametrize("make", [lambda **kw: M3N(lam=0.01, n_passes=10, **kw),
                                  lambda **kw: M4N(lam=0.01, n_passes=10, n_iter_oracle=10, **kw)])
@pytest.mark.parametrize("loss", ["permutation_hamming", "space"])
def test_estimators_on_rankings(make, loss):
    X, Y = ranking_data()
    M = 4
    est = make(loss=Permutation(M) if loss == "space" else loss, random_state=0)
    c = clone(est)
    est.fit(X[:120], Y[:120], X[120:], Y[120:])
    c.fit(X[:120], Y[:120])
    np.testing.assert_array_equal(est.coef_, c.coef_)
    pred = est.predict(X[120:])
    np.testing.assert_array_equal(pred, c.predict(X[120:]))
    assert pred.shape == (40, M) and pred.dtype == np.int64
    np.testing.assert_array_equal(np.sort(pred, axis=1), np.tile(np.arange(M), (40, 1)))
    assert est.coef_.shape == (4, M * M) and est.n_labels_ == M
    tl = est.task_loss(X[120:], Y[120:])
    assert tl == pytest.approx(np.mean(pred != Y[120:]))
    assert tl == pytest.approx(est.history_["val_loss"].iloc[-1])
    assert est.score(X[120:], Y[120:]) == -tl
    # far better than the best constant ranking (brute force over the 24 permutations)
    best_const = min(np.mean(Y[120:] != y) for y in all_perms(M))
    assert tl < 0.6 * best_const


def test_estimator_errors_on_rankings():
    X, Y = ranking_data(n=40)
    with pytest.raises(StructpredError, match="permanent"):
        CRF(loss="permutation_hamming").fit(X, Y)
    with pytest.raises(StructpredError, match="permanent"):
        CRF(loss=Permutation(4)).fit(X, Y)
    Yb = Y.copy()
    Yb[3] = [0, 1, 1, 3]
    with pytest.raises(StructpredError, match="not a permutation"):
        M3N(loss="permutation_hamming").fit(X, Yb)
    with pytest.raises(StructpredError, match="not a permutation"):
        M4N(loss="permutation_hamming", n_labels=4).fit(X, Y + 1)
    with pytest.raises(StructpredError):
        M3N(loss="permutation_hamming").fit(X, Y[:, 0])
    with pytest.raises(StructpredError):
        M3N(loss=Permutation(5)).fit(X, Y)
    with pytest.raises(StructpredError):
        M3N(loss=Permutation(4), n_labels=3).fit(X, Y)
    with pytest.raises(StructpredError):
        M3N(loss="permutation_hamming").fit(X, Y[:-1])
    est = M3N(loss="permutation_hamming", n_passes=2).fit(X, Y)
    with pytest.raises(StructpredError):
        est.task_loss(X, Y[:, :3])
    # an OutputSpace also works for the multiclass case
    y = np.argmax(X[:, :3], axis=1)
    e1 = M3N(loss=Multiclass.zero_one(3), n_passes=3, random_state=0).fit(X, y)
    e2 = M3N(loss="zero_one", n_passes=3, random_state=0).fit(X, y)
    np.testing.assert_array_equal(e1.coef_, e2.coef_)
