"""Solvers and estimators on the sequence output space (:class:`Chain` with the chain joint
feature map :class:`SequenceJoint`): joint map vs an explicit joint feature, CRF gradient by
finite differences, BCFW / SDCA / GBCFW / AdaGrad vs cvxpy and scipy optima computed by
enumerating all R^T label sequences, estimator API on sequences."""

import itertools
from functools import lru_cache

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp
from sklearn.base import clone

from structpred.errors import StructpredError
from structpred.estimators import AGM, CRF, M3N, M4N
from structpred.features.joint import SequenceJoint, joint_map
from structpred.features.sequences import Sequences
from structpred.outputs import Chain
from structpred.solvers import adagrad, bcfw, gbcfw, sdca
from structpred.solvers import primal_objective as primal
from structpred.surrogates import Hinge, LogLoss, MaxMinMargin

R = 3          # labels
D = 3          # features per position
N = 8          # training sequences
TMAX = 4       # longest sequence


# --- reference machinery (independent of the library's joint map) --------------------------

def all_seqs(R, T):
    return np.array(list(itertools.product(range(R), repeat=T)), dtype=np.int64).reshape(-1, T)


def psi(x, y, R, g=0, G=1):
    """Explicit joint feature ``Psi(x, y)`` of shape ``(G d + R, R)``: ``x_t`` added to column
    ``y_t`` of the weight block ``g``, plus the transition counts ``#{t: (y_t, y_{t+1}) = (a, b)}``
    in the last ``R`` rows, so ``<W, Psi> = sum_t <W_g[:, y_t], x_t> + sum_t T[y_t, y_{t+1}]``."""
    T, d = x.shape
    F = np.zeros((G * d + R, R))
    for t in range(T):
        F[g * d:(g + 1) * d, y[t]] += x[t]
    for t in range(T - 1):
        F[G * d + y[t], y[t + 1]] += 1.0
    return F


def chain_problem(n=N, R=R, d=D, Tmax=TMAX, seed=0, noise=1.0):
    """Sequences of lengths 1..Tmax (both ends present) with a bias feature; labels = the
    best-scoring sequence of a random chain model plus per-sequence noise (not separable)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, Tmax + 1, n)
    lengths[:2] = [1, Tmax]
    Wt = np.r_[rng.normal(size=(d, R)), rng.normal(size=(R, R))]
    X, Y = [], []
    for T in lengths:
        x = rng.normal(size=(T, d))
        x[:, -1] = 1.0
        ys = all_seqs(R, T)
        s = np.array([np.sum(psi(x, y, R) * Wt) for y in ys]) + noise * rng.normal(size=len(ys))
        X.append(x)
        Y.append(ys[np.argmax(s)])
    return X, Y


class Enum:
    """Every output of every training sequence, as rows ``vec Psi_i(y')`` (``F[i]``), with the
    truth's row ``Fy[i]`` and the losses ``L[i][y'] = L(y_i, y')``."""

    def __init__(self, space, X, y, groups=None, G=1):
        self.R = space.n_labels
        self.n = len(X)
        self.p = (G * X[0].shape[1] + self.R) * self.R
        self.F, self.Fy, self.L, self.Ys = [], [], [], []
        for i, (x, yi) in enumerate(zip(X, y)):
            g = 0 if groups is None else int(groups[i])
            ys = all_seqs(self.R, x.shape[0])
            self.Ys.append(ys)
            self.F.append(np.array([psi(x, s, self.R, g, G).ravel() for s in ys]))
            self.Fy.append(psi(x, yi, self.R, g, G).ravel())
            self.L.append(np.array([space.loss(yi, s) for s in ys]))

    def crf(self, w, lam):
        """CRF objective by enumeration of the partition function, and its gradient."""
        f, g = 0.5 * lam * w @ w, lam * w
        for F, Fy in zip(self.F, self.Fy):
            s = F @ w
            lz = logsumexp(s)
            f += (lz - Fy @ w) / self.n
            g = g + (np.exp(s - lz) @ F - Fy) / self.n
        return f, g

    def m3n(self, w, lam):
        return 0.5 * lam * w @ w + np.mean([np.max(L + (F - Fy) @ w) for F, Fy, L in zip(self.F, self.Fy, self.L)])


def cvx_m3n(E, lam):
    w = cp.Variable(E.p)
    obj = sum(cp.max(L + (F - Fy) @ w) for F, Fy, L in zip(E.F, E.Fy, E.L)) / E.n
    prob = cp.Problem(cp.Minimize(obj + lam / 2 * cp.sum_squares(w)))
    prob.solve(solver=cp.CLARABEL)
    return prob.value, w.value


def cvx_m4n(space, E, X, lam):
    """M4N primal.  Per sequence ``max_mu min_nu sum_t nu_t^T A_t mu_t + <v, mu>`` over the chain's
    marginal polytope (mu) and a product of simplices (nu) equals, by minimax and because
    the max of a linear function over the polytope is attained at a vertex,
    ``min_nu max_y' sum_t (A_t^T nu_t)[y'_t] + <v, phi(y')>`` (all R^T sequences y')."""
    w = cp.Variable(E.p)
    terms, cons = [], []
    for x, F, Fy, ys in zip(X, E.F, E.Fy, E.Ys):
        T = x.shape[0]
        A = space.weighted_loss(T)           # (T, R, R), row = the adversary's (true) label
        Q = np.zeros((len(ys), T * R))
        for k, s in enumerate(ys):
            for t in range(T):
                Q[k, t * R:(t + 1) * R] = A[t][:, s[t]]
        nu = cp.Variable(T * R, nonneg=True)
        cons += [cp.sum(nu[t * R:(t + 1) * R]) == 1 for t in range(T)]
        terms.append(cp.max(Q @ nu + (F - Fy) @ w))
    prob = cp.Problem(cp.Minimize(sum(terms) / E.n + lam / 2 * cp.sum_squares(w)), cons)
    prob.solve(solver=cp.CLARABEL)
    return prob.value, w.value


LAM = 1.0


@lru_cache(maxsize=None)
def problem(seed=0):
    X, Y = chain_problem(seed=seed)
    return X, Y, Enum(Chain(R), X, Y)


@lru_cache(maxsize=None)
def m3n_reference(seed=0):
    _, _, E = problem(seed)
    return cvx_m3n(E, LAM)


@lru_cache(maxsize=None)
def m4n_reference(seed=0):
    X, _, E = problem(seed)
    return cvx_m4n(Chain(R), E, X, LAM)


def check_marginals(space, mu, atol):
    """Dual blocks lie in the chain's marginal polytope (= local polytope for a chain)."""
    for m in mu:
        U, P = space.split(m)
        assert U.min() >= -atol and (P.size == 0 or P.min() >= -atol)
        np.testing.assert_allclose(U.sum(1), 1.0, atol=atol)
        np.testing.assert_allclose(P.sum(2), U[:-1], atol=atol)
        np.testing.assert_allclose(P.sum(1), U[1:], atol=atol)


def primal_dual_map(fmap, space, y, mu, lam):
    """``W(mu) = (1 / (lam n)) sum_i Psi_i (phi(y_i) - mu_i)``."""
    W = np.zeros(fmap.weight_shape)
    for i in range(fmap.n):
        fmap.add(i, W, (space.embed(y[i]) - mu[i]) / (lam * fmap.n))
    return W


# --- 1. joint map ------------------------------------------------------------------------------

def test_chain_joint_map_matches_explicit_features():
    sp = Chain(R)
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(T, D)) for T in (1, 2, 3, 4)]
    fm = joint_map(sp, X)
    assert isinstance(fm, SequenceJoint) and fm.n == 4 and fm.n_features == D and fm.G == 1
    assert fm.weight_shape == (D + R, R)
    W = rng.normal(size=fm.weight_shape)
    V = fm.scores(W)
    for i, x in enumerate(X):
        T = x.shape[0]
        v = fm.score(i, W)
        assert v.shape == (sp.dim(T),)
        np.testing.assert_array_equal(V[i], v)
        for y in all_seqs(R, T):
            explicit = sum(W[:D, y[t]] @ x[t] for t in range(T)) + sum(W[D + y[t], y[t + 1]] for t in range(T - 1))
            assert abs(sp.embed(y) @ v - explicit) < 1e-12
            assert abs(np.sum(W * psi(x, y, R)) - explicit) < 1e-12
            # add() of an embedding is the explicit joint feature
            Z = np.zeros(fm.weight_shape)
            fm.add(i, Z, sp.embed(y))
            np.testing.assert_allclose(Z, psi(x, y, R), atol=1e-14)
        # add is the adjoint of score, norm2 its squared norm; add accumulates
        for _ in range(3):
            g = rng.normal(size=sp.dim(T))
            Z = np.zeros(fm.weight_shape)
            fm.add(i, Z, g)
            assert abs(fm.score(i, W) @ g - np.sum(W * Z)) < 1e-11
            assert abs(fm.norm2(i, g) - np.sum(Z * Z)) < 1e-11 * max(1.0, np.sum(Z * Z))
            W0 = W.copy()
            fm.add(i, W0, g)
            np.testing.assert_allclose(W0, W + Z, atol=1e-14)


def test_chain_joint_map_groups_use_their_block():
    sp = Chain(R)
    rng = np.random.default_rng(1)
    lengths = [2, 1, 3, 4]
    groups = np.array([1, 0, 2, 1])
    G = 3
    frames = rng.normal(size=(sum(lengths), D))
    seq = Sequences(frames, np.r_[0, np.cumsum(lengths)], groups=groups)
    fm = joint_map(sp, seq)
    assert fm.G == G and fm.weight_shape == (G * D + R, R)
    W = rng.normal(size=fm.weight_shape)
    for i, T in enumerate(lengths):
        x = seq[i]
        g = groups[i]
        v = fm.score(i, W)
        for y in all_seqs(R, T):
            assert abs(sp.embed(y) @ v - np.sum(W * psi(x, y, R, g, G))) < 1e-12
        # only the sequence's own block (and the transitions) enter the score
        W2 = W.copy()
        other = [h for h in range(G) if h != g]
        for h in other:
            W2[h * D:(h + 1) * D] = rng.normal(size=(D, R))
        np.testing.assert_array_equal(fm.score(i, W2), v)
        # and only it receives gradient
        gvec = rng.normal(size=sp.dim(T))
        Z = np.zeros(fm.weight_shape)
        fm.add(i, Z, gvec)
        for h in other:
            assert np.all(Z[h * D:(h + 1) * D] == 0.0)
        assert np.any(Z[g * D:(g + 1) * D] != 0.0)
        if T > 1:
            assert np.any(Z[G * D:] != 0.0)
        else:
            assert np.all(Z[G * D:] == 0.0)
        assert abs(v @ gvec - np.sum(W * Z)) < 1e-11
        assert abs(fm.norm2(i, gvec) - np.sum(Z * Z)) < 1e-11 * max(1.0, np.sum(Z * Z))
    # a fitted map with more groups than the prediction data keeps its shape
    seq0 = Sequences(frames[:3], np.array([0, 2, 3]))
    fm0 = joint_map(sp, seq0, like=fm)
    assert fm0.weight_shape == fm.weight_shape
    np.testing.assert_array_equal(fm0.score(0, W)[:2 * R], (seq0[0] @ W[:D]).ravel())
    with pytest.raises(StructpredError):
        joint_map(sp, [rng.normal(size=(2, D + 1))], like=fm)
    with pytest.raises(StructpredError):
        SequenceJoint(seq, sp.n_labels, n_groups=2)


# --- 2. CRF gradient -------------------------------------------------------------------------

def test_crf_objective_gradient_finite_differences():
    sp = Chain(R)
    X, Y = chain_problem(n=6, seed=5)
    groups = np.array([0, 1, 1, 0, 1, 0])
    lengths = [x.shape[0] for x in X]
    seq = Sequences(np.concatenate(X), np.r_[0, np.cumsum(lengths)], groups=groups)
    fm = joint_map(sp, seq)
    lam = 0.3
    E = Enum(sp, X, Y, groups=groups, G=2)

    def f(W):
        val, _ = LogLoss(sp).value_grad(fm.scores(W), Y)
        return float(np.mean(val)) + 0.5 * lam * np.sum(W * W)

    def grad(W):
        _, gs = LogLoss(sp).value_grad(fm.scores(W), Y)
        G = lam * W
        for i, g in enumerate(gs):
            fm.add(i, G, g / fm.n)
        return G

    rng = np.random.default_rng(0)
    for scale in (0.0, 0.5, 2.0):
        W = scale * rng.normal(size=fm.weight_shape)
        # the objective and gradient agree with the enumeration
        fe, ge = E.crf(W.ravel(), lam)
        assert abs(f(W) - fe) < 1e-12 * max(1.0, abs(fe))
        np.testing.assert_allclose(grad(W).ravel(), ge, rtol=1e-10, atol=1e-13)
        # central differences
        h = 1e-5
        fd = np.zeros(W.size)
        for j in range(W.size):
            e = np.zeros(W.size)
            e[j] = h
            fd[j] = (f(W + e.reshape(W.shape)) - f(W - e.reshape(W.shape))) / (2 * h)
        np.testing.assert_allclose(grad(W).ravel(), fd, rtol=1e-6, atol=1e-9)
    # the shared primal of the tests is the same function
    W = rng.normal(size=fm.weight_shape)
    assert abs(primal(LogLoss(sp), seq, Y, W, lam) - f(W)) < 1e-12


# --- 3. BCFW / M3N ---------------------------------------------------------------------------

def test_bcfw_chain_matches_cvxpy():
    sp = Chain(R)
    X, Y, E = problem(0)
    ref, wref = m3n_reference(0)
    assert abs(E.m3n(wref, LAM) - ref) < 1e-6             # the cvxpy model is the M3N primal
    res = bcfw(Hinge(sp), X, Y, LAM, n_passes=1000, random_state=0, tol=5e-4 * ref)
    h = res.history
    assert len(h) < 1000                                  # measured: stops at pass 220
    last = h[-1]
    assert last["gap"] <= 5e-4 * ref
    assert abs(last["primal"] - ref) <= 1e-3 * ref
    assert abs(last["dual"] - ref) <= 1e-3 * ref
    # weak duality at every pass, and the exact line search never decreases the dual
    for r in h:
        assert r["dual"] <= ref + 1e-7 and r["primal"] >= ref - 1e-7
        assert abs(r["gap"] - (r["primal"] - r["dual"])) < 1e-12
    duals = np.array([r["dual"] for r in h])
    assert np.all(np.diff(duals) >= -1e-12)
    assert h[0]["gap"] > 10 * last["gap"]
    # the recorded primal is the M3N objective of the returned weights (library and enumeration)
    fm = joint_map(sp, X)
    assert abs(primal(Hinge(sp), X, Y, res.W, LAM) - last["primal"]) < 1e-12
    assert abs(E.m3n(res.W.ravel(), LAM) - last["primal"]) < 1e-12
    # strong convexity: lam/2 ||W - W*||^2 <= P(W) - P*
    assert np.linalg.norm(res.W.ravel() - wref) <= np.sqrt(2 * (last["primal"] - ref) / LAM) + 1e-4
    # dual blocks: marginals of the chain, mapped to the returned weights
    assert [len(m) for m in res.mu] == [sp.dim(len(y)) for y in Y]
    check_marginals(sp, res.mu, 1e-10)
    np.testing.assert_allclose(primal_dual_map(fm, sp, Y, res.mu, LAM), res.W, atol=1e-10)
    # dual = mean L(y_i, mu_i) - lam/2 ||W||^2
    ell = np.mean([sp.linear_loss(y, m)[0] for y, m in zip(Y, res.mu)])
    assert abs(ell - 0.5 * LAM * np.sum(res.W ** 2) - last["dual"]) < 1e-10


def test_bcfw_chain_deterministic_and_bad_input():
    sp = Chain(R)
    X, Y, _ = problem(0)
    r1 = bcfw(Hinge(sp), X, Y, 0.1, n_passes=3, random_state=7, X_val=X, y_val=Y)
    r2 = bcfw(Hinge(sp), X, Y, 0.1, n_passes=3, random_state=7)
    np.testing.assert_array_equal(r1.W, r2.W)
    assert r1.W.shape == (D + R, R)
    assert [r["oracle_calls"] for r in r1.history] == [N, 2 * N, 3 * N]
    assert 0.0 <= r1.history[-1]["val_loss"] <= 1.0
    with pytest.raises(StructpredError, match="different lengths"):
        bcfw(Hinge(sp), X, [np.r_[y, 0] for y in Y], 0.1)
    with pytest.raises(StructpredError):
        bcfw(Hinge(sp), X, Y[:-1], 0.1)
    with pytest.raises(StructpredError):
        bcfw(Hinge(sp), X, [y + R for y in Y], 0.1)
    with pytest.raises(StructpredError):
        sdca(LogLoss(sp), X, Y, 0.0)


# --- 4. SDCA / CRF -----------------------------------------------------------------------------

@pytest.mark.parametrize("grouped", [False, True])
def test_sdca_chain_matches_lbfgs(grouped):
    sp = Chain(R)
    X, Y, _ = problem(0)
    lam = 0.1
    if grouped:
        groups = np.arange(N) % 2
        data = Sequences(np.concatenate(X), np.r_[0, np.cumsum([x.shape[0] for x in X])], groups=groups)
        E = Enum(sp, X, Y, groups=groups, G=2)
    else:
        data = X
        E = Enum(sp, X, Y)
    opt = minimize(E.crf, np.zeros(E.p), args=(lam,), jac=True, method="L-BFGS-B",
                   options=dict(gtol=1e-12, ftol=1e-15, maxiter=5000))
    assert np.abs(opt.jac).max() < 1e-7
    res = sdca(LogLoss(sp), data, Y, lam, n_passes=300, random_state=0, tol=1e-9)
    h = res.history
    assert len(h) < 300                                   # measured: stops at pass 18 / 14
    last = h[-1]
    assert abs(last["primal"] - opt.fun) <= 1e-6 * abs(opt.fun)
    assert last["primal"] >= opt.fun - 1e-10
    assert last["dual"] <= opt.fun + 1e-10
    gaps = np.array([r["gap"] for r in h])
    assert np.all(gaps >= -1e-10)
    assert gaps[-1] < 1e-6 and gaps[0] > 1e-2
    # exact line search on the dual: the dual never decreases
    assert np.all(np.diff([r["dual"] for r in h]) >= -1e-12)
    # unique minimiser (strongly convex): ||W - W*||^2 <= 2 (P(W) - P*) / lam, and L-BFGS agrees
    np.testing.assert_allclose(res.W.ravel(), opt.x, atol=1e-4)
    fm = joint_map(sp, data)
    assert abs(E.crf(res.W.ravel(), lam)[0] - last["primal"]) < 1e-12
    # dual blocks: valid chain marginals, mapped to W, and at optimum the model's marginals
    check_marginals(sp, res.mu, 1e-12)
    np.testing.assert_allclose(primal_dual_map(fm, sp, Y, res.mu, lam), res.W, atol=1e-10)
    # with W = W(mu) the gap is (1/n) sum_i KL(p_{mu_i} || p_{v_i}) (tree distributions), so by
    # Pinsker every marginal is within sqrt(n gap / 2) of the model's (measured: 2.5e-5)
    q = sp.marginals(fm.scores(res.W))
    tv = np.sqrt(N * max(last["gap"], 0.0) / 2)
    for m, qi in zip(res.mu, q):
        np.testing.assert_allclose(m, qi, rtol=0, atol=tv + 1e-9)
    assert abs(primal(LogLoss(sp), data, Y, res.W, lam) - last["primal"]) < 1e-12
    assert abs(np.mean(sp.entropy(res.mu)) - 0.5 * lam * np.sum(res.W ** 2) - last["dual"]) < 1e-12


# --- 5. GBCFW / M4N and AdaGrad on the same objective ------------------------------------------

@lru_cache(maxsize=None)
def gbcfw_run():
    X, Y, _ = problem(0)
    return gbcfw(MaxMinMargin(Chain(R), n_iter=50), X, Y, LAM, n_passes=100, random_state=0)


def test_gbcfw_chain_bounds_and_cvxpy():
    sp = Chain(R)
    X, Y, _ = problem(0)
    ref, wref = m4n_reference(0)
    res = gbcfw_run()
    h = res.history
    assert [r["pass"] for r in h] == list(range(1, 101))
    for r in h:
        # certified: SP-MP upper bound >= exact primal >= optimum >= exact dual
        assert r["dual"] <= r["primal"] + 1e-12
        assert r["dual"] <= ref + 1e-7 and r["primal"] >= ref - 1e-7
        assert r["primal_lower"] <= r["primal"] + 1e-12
        assert r["oracle_gap"] >= 0.0
    # measured: gap 0.17 after pass 1, 0.0013 after pass 100 (plateau at the oracle error);
    # dual 0.19 % below the optimum
    assert h[-1]["gap"] < h[0]["gap"] / 50
    assert h[-1]["gap"] < 5e-3
    assert abs(h[-1]["dual"] - ref) < 5e-3 * ref
    assert np.linalg.norm(res.W.ravel() - wref) <= np.sqrt(2 * (h[-1]["primal"] - ref) / LAM) + 1e-4
    # dual blocks stay in the marginal polytope
    check_marginals(sp, res.mu, 1e-10)
    fm = joint_map(sp, X)
    np.testing.assert_allclose(primal_dual_map(fm, sp, Y, res.mu, LAM), res.W, atol=1e-10)
    # objectives recomputed: exact dual, and the upper bound tightens with more SP-MP iterations
    lower, upper, _ = MaxMinMargin(sp, n_iter=2000).bounds(fm.scores(res.W), Y)
    reg = 0.5 * LAM * np.sum(res.W ** 2)
    up, lo = float(np.mean(upper)) + reg, float(np.mean(lower)) + reg
    dual = float(np.mean(sp.min_loss(res.mu))) - reg
    assert abs(dual - h[-1]["dual"]) < 1e-12
    assert lo - 1e-9 <= up <= h[-1]["primal"] + 1e-4
    assert ref - 1e-7 <= up and lo <= h[-1]["primal"]


def test_gbcfw_line_search_on_chains():
    """GBCFW with the exact line search (the chain's min-loss lines, one block per node): the
    dual never decreases, the bounds stay certified, and it ends far closer than the fixed step
    with the same oracle (warm start mixed with 1% uniform: with 10% the oracle's error floors both)."""
    X, Y, _ = problem(0)
    ref, _ = m4n_reference(0)
    runs = {step: gbcfw(MaxMinMargin(Chain(R), n_iter=50, warm_mix=0.01), X, Y, LAM, n_passes=100, random_state=0,
                        step=step, eval_every=1 if step == "line_search" else 100)
            for step in ("line_search", "fixed")}
    h = runs["line_search"].history
    duals = [r["dual"] for r in h]
    assert all(b >= a - 1e-13 for a, b in zip(duals, duals[1:]))
    assert all(r["dual"] <= ref + 1e-7 and r["primal"] >= ref - 1e-7 for r in h)
    fixed = runs["fixed"].history[-1]
    # measured after 100 passes: gap 1.2e-4, dual 4.0e-5 below the optimum; fixed step 1.5e-3, 1.5e-4
    assert h[-1]["gap"] < fixed["gap"] / 5
    assert ref - h[-1]["dual"] < (ref - fixed["dual"]) / 2
    check_marginals(Chain(R), runs["line_search"].mu, 1e-10)


def test_adagrad_maxmin_minimises_the_m4n_objective():
    sp = Chain(R)
    X, Y, _ = problem(0)
    ref, _ = m4n_reference(0)
    g = gbcfw_run()
    dual = g.history[-1]["dual"]
    a = adagrad(MaxMinMargin(sp, n_iter=50), X, Y, LAM, n_passes=200, step=0.03, random_state=0, eval_every=50)
    assert [r["pass"] for r in a.history] == [50, 100, 150, 200]
    pa = a.history[-1]["primal"]
    # AdaGrad's primal (SP-MP upper bound) can never beat GBCFW's exact dual: same objective
    assert all(r["primal"] >= dual - 1e-6 for r in a.history)
    assert all(r["primal"] >= ref - 1e-7 for r in a.history)
    # measured: 0.3-0.8 % above the GBCFW dual after 50..200 passes
    assert pa <= dual * 1.03
    # both weights are near the unique minimiser: ||W - W*|| <= sqrt(2 (P(W) - D) / lam) each
    bound = np.sqrt(2 * (pa - dual) / LAM) + np.sqrt(2 * (g.history[-1]["primal"] - dual) / LAM)
    assert np.linalg.norm(a.W - g.W) <= bound
    assert a.mu is None and len(a.state["LMU"]) == N


@pytest.fixture
def numba_threads():
    """``numba.set_num_threads`` for one test (restored after it)."""
    import numba

    n = numba.get_num_threads()
    yield lambda k: numba.set_num_threads(min(k, numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(n)


@pytest.mark.parametrize("kernel", ["adagrad_update", "adagrad_update_threads"])
def test_adagrad_compiled_update_has_the_bits_of_the_numpy_step(kernel, numba_threads):
    from structpred.solvers import _dense

    numba_threads(2)   # the threaded kernel splits the 200 weights
    rng = np.random.default_rng(3)
    W = rng.normal(size=(4, 50))
    W[0, :5] = 0.0
    W[0, 5] = -0.0                           # a zero gradient's update keeps the sign of zero as numpy does
    S = rng.random((4, 50))
    S[0, :10] = 0.0                          # never stepped: sqrt(S) read as 1
    W[2, :4] = [0.0, -0.0, 0.0, -0.0]        # zero gradients of both signs on stepped (S > 0) weights
    lam, step = 0.3, 0.07
    d = rng.normal(size=6)                   # the sample's data gradient
    G = lam * W
    G[1, 3:9] += d
    G[2, 2] = -0.0                           # a negative zero where W is +0
    S_ref = S + G * G
    W_ref = W - step * G / np.sqrt(np.where(S_ref > 0, S_ref, 1.0))
    G2 = np.empty_like(W)
    _dense.scaled(G2, W, lam)
    G2[1, 3:9] += d
    G2[2, 2] = -0.0
    assert np.array_equal(G2, G)
    getattr(_dense, kernel)(W, S, G, step, lam)
    assert np.array_equal(W, W_ref) and np.array_equal(S, S_ref)
    assert np.array_equal(G, lam * W_ref)    # the next step's regulariser gradient, sign of zero included
    assert np.array_equal(np.signbit(G), np.signbit(lam * W_ref))
    assert np.array_equal(np.signbit(W), np.signbit(W_ref))


def test_adagrad_takes_the_threaded_update_at_hashed_sizes_only(numba_threads):
    import numba

    from structpred.solvers import _dense

    numba_threads(1)
    assert _dense.adagrad_update_for(2 ** 20) is _dense.adagrad_update
    if numba.config.NUMBA_NUM_THREADS > 1:
        numba_threads(2)
        assert _dense.adagrad_update_for(2 ** 20) is _dense.adagrad_update_threads
        assert _dense.adagrad_update_for(_dense.THREADS_FROM - 1) is _dense.adagrad_update


# --- 6. AdaGrad with the hinge and CRF surrogates ---------------------------------------------------

def test_adagrad_hinge_and_crf():
    sp = Chain(R)
    X, Y, E = problem(0)
    ref_m3n, _ = m3n_reference(0)
    hinge = adagrad(Hinge(sp), X, Y, LAM, n_passes=60, step=0.03, random_state=0)
    ph = [r["primal"] for r in hinge.history]
    assert len(ph) == 60 and ph[-1] < ph[0]
    assert abs(ph[-1] - E.m3n(hinge.W.ravel(), LAM)) < 1e-12
    assert min(ph) >= ref_m3n - 1e-7
    assert ph[-1] <= ref_m3n * 1.02                       # measured: 0.2 % above after 60 passes
    crf = adagrad(LogLoss(sp), X, Y, LAM, n_passes=100, step=0.1, random_state=0, eval_every=10)
    pc = [r["primal"] for r in crf.history]
    assert [r["pass"] for r in crf.history] == list(range(10, 101, 10)) and pc[-1] < pc[0]
    assert abs(pc[-1] - E.crf(crf.W.ravel(), LAM)[0]) < 1e-12
    opt = sdca(LogLoss(sp), X, Y, LAM, n_passes=100, random_state=0, tol=1e-10)
    p_opt = opt.history[-1]["primal"]
    assert pc[-1] >= p_opt - 1e-9
    # measured: 2e-6 relative, weights within 1.1e-3 after 100 passes
    assert pc[-1] - p_opt <= 1e-4 * p_opt
    np.testing.assert_allclose(crf.W, opt.W, atol=1e-2)
    with pytest.raises(StructpredError, match="surrogate"):
        adagrad("logistic", X, Y, LAM)
    for step in (0.0, -0.1):
        with pytest.raises(StructpredError, match="step"):
            adagrad(Hinge(sp), X, Y, LAM, step=step)


# --- 7. estimators ---------------------------------------------------------------------------------

def toy(n=10, R=R, seed=0, lengths=None):
    """Separable: x_t = 3 one-hot(y_t) + small noise."""
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for i in range(n):
        T = (1 + i % 4) if lengths is None else lengths[i]
        y = rng.integers(0, R, T)
        X.append(np.eye(R)[y] * 3 + 0.1 * rng.normal(size=(T, R)))
        Y.append(y)
    return X, Y


ESTIMATORS = {
    "M3N": lambda **kw: M3N(lam=0.1, n_passes=20, random_state=0, **kw),
    "CRF": lambda **kw: CRF(lam=0.1, n_passes=20, random_state=0, **kw),
    "M4N": lambda **kw: M4N(lam=0.1, n_passes=20, n_iter_oracle=10, random_state=0, **kw),
    "AGM": lambda **kw: AGM(lam=0.1, n_passes=20, random_state=0, **kw),
}


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_estimators_fit_separable_sequences(name):
    X, Y = toy()
    Xt, Yt = toy(n=8, seed=1)
    est = ESTIMATORS[name](loss=Chain(R))
    # the zero model decodes a constant label and errs: the problem is not trivial
    const = min(np.mean(Chain(R).loss(Y, [np.full(len(y), c) for y in Y])) for c in range(R))
    assert const > 0.3
    est.fit(X, Y)
    assert est.coef_.shape == (D + R, R) and est.n_labels_ == R and est.n_features_in_ == D
    assert len(est.history_) == 20
    assert est.task_loss(X, Y) == 0.0 and est.score(X, Y) == 0.0
    assert est.task_loss(Xt, Yt) == 0.0
    pred = est.predict(Xt)
    assert isinstance(pred, list) and len(pred) == len(Xt)
    for p, y in zip(pred, Yt):
        assert p.dtype == np.int64 and p.shape == y.shape
        np.testing.assert_array_equal(p, y)
    V = est.decision_function(Xt)
    assert [v.shape[0] for v in V] == [Chain(R).dim(len(y)) for y in Yt]
    # clone: same parameters, unfitted, same fit
    c = clone(est)
    pc, pe = c.get_params(), est.get_params()
    assert not hasattr(c, "coef_") and set(pc) == set(pe)
    assert all(pc[k] == pe[k] for k in pe if k != "loss")
    # clone deep-copies the (non-estimator) space: an equal, independent Chain
    assert isinstance(pc["loss"], Chain) and pc["loss"] is not pe["loss"] and repr(pc["loss"]) == repr(pe["loss"])
    np.testing.assert_array_equal(pc["loss"].node_loss, pe["loss"].node_loss)
    c.fit(X, Y)
    np.testing.assert_array_equal(c.coef_, est.coef_)
    # a named loss with the number of labels inferred from the sequences
    named = ESTIMATORS[name](loss="sequence_hamming").fit(X, Y)
    assert isinstance(named.space_, Chain) and named.n_labels_ == R
    np.testing.assert_allclose(named.coef_, est.coef_, atol=1e-12)
    assert named.get_params()["loss"] == "sequence_hamming"
    # mismatched sequence lengths / counts
    bad = [np.r_[y, 0] for y in Y]
    with pytest.raises(StructpredError):
        ESTIMATORS[name](loss=Chain(R)).fit(X, bad)
    with pytest.raises(StructpredError):
        ESTIMATORS[name](loss=Chain(R)).fit(X, Y[:-1])
    with pytest.raises(StructpredError):
        est.task_loss(Xt, Yt[:-1])


def test_crf_estimator_with_groups():
    """Group 1 sequences carry the features of the *next* label: only per-group weight blocks
    fit both groups."""
    X, Y = toy(n=12, seed=3)
    groups = np.arange(12) % 2
    Xg = [x if g == 0 else np.roll(x, 1, axis=1) for x, g in zip(X, groups)]
    lengths = [x.shape[0] for x in Xg]
    seq = Sequences(np.concatenate(Xg), np.r_[0, np.cumsum(lengths)], groups=groups)
    est = CRF(loss=Chain(R), lam=0.1, n_passes=30, random_state=0).fit(seq, Y)
    assert est.coef_.shape == (2 * D + R, R) and est.joint_map_.G == 2
    assert est.task_loss(seq, Y) == 0.0
    pred = est.predict(seq)
    for i, (p, y) in enumerate(zip(pred, Y)):
        # by hand: Bayes decoding of the marginals with the sequence's own block
        g = groups[i]
        Wi = np.r_[est.coef_[g * D:(g + 1) * D], est.coef_[2 * D:]]
        v = SequenceJoint([seq[i]], R).score(0, Wi)
        np.testing.assert_array_equal(p, Chain(R).bayes_decode(Chain(R).marginals(v)))
        np.testing.assert_array_equal(p, y)
    # swapping the groups changes the predictions (they use the other block)
    swapped = Sequences(seq.frames, seq.offsets, groups=1 - groups)
    assert est.task_loss(swapped, Y) > 0.3
    # without groups a single block cannot fit both
    flat = CRF(loss=Chain(R), lam=0.1, n_passes=30, random_state=0).fit(Xg, Y)
    assert flat.coef_.shape == (D + R, R)
    assert flat.task_loss(Xg, Y) > 0.1
