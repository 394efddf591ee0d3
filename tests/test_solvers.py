"""Solvers: duality gaps, agreement with cvxpy / scikit-learn optima, determinism."""

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import linprog

from structpred.errors import StructpredError
from structpred.outputs import Multiclass, make_space
from structpred.solvers import bcfw, gbcfw, sdca
from structpred.solvers import primal_objective as primal
from structpred.surrogates import Hinge, LogLoss, MaxMinMargin


def small_problem(n=30, d=5, k=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, -1] = 1.0
    Wt = rng.normal(size=(d, k))
    y = np.argmax(X @ Wt + rng.normal(scale=1.5, size=(n, k)), axis=1)
    return X, y


def cvx_m3n(space, X, y, lam):
    n, d = X.shape
    k = space.k
    W = cp.Variable((d, k))
    V = X @ W
    Y = np.eye(k)[y]
    obj = cp.sum(cp.max(space.loss_matrix[y] + V, axis=1) - cp.sum(cp.multiply(Y, V), axis=1)) / n
    prob = cp.Problem(cp.Minimize(obj + lam / 2 * cp.sum_squares(W)))
    prob.solve(solver=cp.CLARABEL)
    return prob.value


def cvx_m4n(space, X, y, lam):
    """M4N primal: max_mu min_nu nu^T A mu + v.mu = min_nu max_j (A^T nu + v)_j (LP duality)."""
    n, d = X.shape
    k = space.k
    W = cp.Variable((d, k))
    N = cp.Variable((n, k), nonneg=True)
    V = X @ W
    Y = np.eye(k)[y]
    obj = cp.sum(cp.max(N @ space.loss_matrix + V, axis=1) - cp.sum(cp.multiply(Y, V), axis=1)) / n
    prob = cp.Problem(cp.Minimize(obj + lam / 2 * cp.sum_squares(W)), [cp.sum(N, axis=1) == 1])
    prob.solve(solver=cp.CLARABEL)
    return prob.value


def exact_m4n_primal(space, X, y, W, lam):
    A = space.loss_matrix
    k = space.k
    V = X @ W
    tot = 0.0
    for i in range(X.shape[0]):
        v = V[i]
        r = linprog(-np.r_[v, 1.0], A_ub=np.c_[-A, np.ones(k)], b_ub=np.zeros(k),
                    A_eq=np.r_[np.ones(k), 0.0][None], b_eq=[1.0],
                    bounds=[(0, None)] * k + [(None, None)], method="highs")
        tot += -r.fun - v[y[i]]
    return tot / X.shape[0] + lam / 2 * np.sum(W * W)


@pytest.mark.parametrize("loss", ["zero_one", "ordinal"])
@pytest.mark.parametrize("averaging", [False, True])
def test_bcfw_matches_cvxpy(loss, averaging):
    X, y = small_problem()
    sp = make_space(loss, 4)
    lam = 0.1
    res = bcfw(Hinge(sp), X, y, lam, n_passes=3000 if averaging else 2000, averaging=averaging, random_state=0, tol=1e-4)
    h = res.history[-1]
    assert h["gap"] < 1e-3
    ref = cvx_m3n(sp, X, y, lam)
    assert abs(h["primal"] - ref) <= 1e-3 * abs(ref)
    assert abs(primal(Hinge(sp), X, y, res.W, lam) - h["primal"]) < 1e-12
    # weak duality along the way
    assert all(r["dual"] <= ref + 1e-9 and r["primal"] >= ref - 1e-9 for r in res.history)


@pytest.mark.parametrize("loss", ["zero_one", "ordinal"])
def test_gbcfw_matches_cvxpy(loss):
    X, y = small_problem(seed=1)
    sp = make_space(loss, 4)
    lam = 0.1
    res = gbcfw(MaxMinMargin(sp, n_iter=100, warm_start=True, warm_mix=1e-9, n_iter_eval=1000), X, y, lam,
                n_passes=2000, random_state=0, eval_every=50, tol=5e-4)
    h = res.history[-1]
    assert h["gap"] < 1e-3 + 1e-12  # certified (SP-MP upper bound) - exact dual
    ref = cvx_m4n(sp, X, y, lam)
    exact = exact_m4n_primal(sp, X, y, res.W, lam)
    assert ref - 1e-7 <= exact <= ref + 1e-3 * abs(ref)
    assert h["dual"] <= ref + 1e-7


def test_gbcfw_oracle_gap_recorded_and_warm_start_helps():
    X, y = small_problem(n=60, seed=2)
    sp = Multiclass.ordinal(4)
    warm = gbcfw(MaxMinMargin(sp, n_iter=10, warm_start=True), X, y, 0.01, n_passes=30, random_state=0)
    cold = gbcfw(MaxMinMargin(sp, n_iter=10, warm_start=False), X, y, 0.01, n_passes=30, random_state=0)
    gw = np.mean([r["oracle_gap"] for r in warm.history[-5:]])
    gc = np.mean([r["oracle_gap"] for r in cold.history[-5:]])
    assert gw < gc
    assert gc <= 4 * sp.lipschitz / 10 + 1e-12  # cold start obeys Theorem G.1


@pytest.mark.parametrize("loss", ["zero_one", "ordinal"])
def test_sdca_matches_sklearn_logreg(loss):
    from sklearn.linear_model import LogisticRegression

    X, y = small_problem(n=80, d=6, k=4, seed=3)
    sp = make_space(loss, 4)  # the CRF objective does not depend on the task loss
    n = X.shape[0]
    lam = 0.05
    res = sdca(LogLoss(sp), X, y, lam, n_passes=300, random_state=0, tol=1e-9)
    assert res.history[-1]["gap"] < 1e-8
    clf = LogisticRegression(C=1.0 / (lam * n), fit_intercept=False, tol=1e-12, max_iter=100000).fit(X, y)
    ref = primal(LogLoss(sp), X, y, clf.coef_.T, lam)
    assert abs(res.history[-1]["primal"] - ref) <= 1e-4 * abs(ref)
    np.testing.assert_allclose(res.W - res.W.mean(1, keepdims=True), clf.coef_.T - clf.coef_.T.mean(1, keepdims=True), atol=1e-3)


def test_history_keys_and_determinism():
    X, y = small_problem()
    sp = Multiclass.zero_one(4)
    for f, sur, keys in ((bcfw, Hinge, {"primal", "dual", "gap"}), (sdca, LogLoss, {"primal", "dual", "gap"}),
                         (gbcfw, MaxMinMargin, {"oracle_gap", "primal_lower"})):
        r1 = f(sur(sp), X, y, 0.1, n_passes=3, random_state=7, X_val=X, y_val=y)
        r2 = f(sur(sp), X, y, 0.1, n_passes=3, random_state=7)
        np.testing.assert_array_equal(r1.W, r2.W)
        h = r1.history
        assert [r["pass"] for r in h] == [1, 2, 3]
        assert keys | {"pass", "oracle_calls", "seconds", "val_loss"} <= set(h[0])
        assert h[-1]["oracle_calls"] == 3 * X.shape[0]


def test_solver_bad_input():
    X, y = small_problem()
    sp = Multiclass.zero_one(4)
    with pytest.raises(StructpredError):
        bcfw(Hinge(sp), X, y[:-1], 0.1)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(StructpredError):
        sdca(LogLoss(sp), Xn, y, 0.1)
    with pytest.raises(StructpredError):
        gbcfw(MaxMinMargin(sp), X, y + 10, 0.1)
    with pytest.raises(StructpredError):
        bcfw(Hinge(sp), X, y, -1.0)


def test_driver_schedule_stopping_and_hooks():
    """The one driver: evaluation schedule, oracle-call count, epoch hooks (SVRG's full gradient,
    Casimir's smoothing), tol on a recorded gap, time budget, extra evaluation."""
    import time

    from structpred.solvers import StepRule, check_problem, run

    class Counting(StepRule):
        name = "counting"

        def init(self, problem):
            super().init(problem)
            self.calls = []

        def start_epoch(self, p):
            self.calls.append(("start", p))

        def step(self, i):
            self.oracle_calls += 1

        def end_epoch(self, p):
            self.calls.append(("end", p))

        def objectives(self):
            return {"primal": 1.0, "gap": 1.0 / len(self.calls)}

    class Slow(Counting):
        def epoch(self, order):
            time.sleep(0.05)

    X, y = small_problem()
    pb = check_problem(Multiclass.zero_one(4), X, y, 0.1)
    rule = Counting(Hinge(pb.space))
    res = run(rule, pb, n_passes=7, eval_every=3, random_state=0)
    assert [r["pass"] for r in res.history] == [3, 6, 7]
    assert [r["oracle_calls"] for r in res.history] == [90, 180, 210]
    assert rule.calls[:4] == [("start", 1), ("end", 1), ("start", 2), ("end", 2)]
    # gap = 1 / (2 p) <= 0.1 first at pass 5
    assert [r["pass"] for r in run(Counting(Hinge(pb.space)), pb, n_passes=50, tol=0.1).history] == [1, 2, 3, 4, 5]
    # the time budget stops after the pass that exceeds it, and that pass is recorded
    hist = run(Slow(Hinge(pb.space)), pb, n_passes=50, eval_every=10, time_budget=0.12).history
    # passes of at least 0.05 s: by the third the budget is spent (a loaded machine may spend it sooner)
    assert len(hist) == 1 and hist[0]["pass"] <= 3 and hist[0]["seconds"] >= 0.12
    # evaluate(W): more measures in each record, its time not counted as training
    seen = []

    def evaluate(W):
        seen.append(W.shape)
        time.sleep(0.05)
        return {"held_out": 2.0}

    hist = run(Counting(Hinge(pb.space)), pb, n_passes=4, eval_every=2, evaluate=evaluate).history
    assert [r["held_out"] for r in hist] == [2.0, 2.0] and seen == [(5, 4), (5, 4)]
    assert hist[-1]["seconds"] < 0.1     # the two evaluations slept 0.1 s: not training time
    for bad in ({"n_passes": 0}, {"eval_every": 1.5}, {"time_budget": -1}):
        with pytest.raises(StructpredError):
            run(Counting(Hinge(pb.space)), pb, **bad)
