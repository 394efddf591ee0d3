"""Multiclass output space: oracles vs brute force, SP-MP vs an exact LP."""


import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.special import logsumexp

from structpred.errors import StructpredError
from structpred.outputs import Multiclass, make_space

SPACES = {
    "zero_one": lambda: Multiclass.zero_one(5),
    "ordinal": lambda: Multiclass.ordinal(6),
    "dense": lambda: Multiclass(np.random.default_rng(3).random((4, 4))),
}


def maxmin_lp(A, v):
    """Exact ``max_mu min_i (A mu)_i + v.mu`` over the simplex (variables [mu, t])."""
    k = A.shape[0]
    res = linprog(-np.r_[v, 1.0], A_ub=np.c_[-A, np.ones(k)], b_ub=np.zeros(k),
                  A_eq=np.r_[np.ones(k), 0.0][None], b_eq=[1.0],
                  bounds=[(0, None)] * k + [(None, None)], method="highs")
    assert res.status == 0
    return -res.fun, res.x[:k]


@pytest.mark.parametrize("name", list(SPACES))
def test_oracles_brute_force(name):
    sp = SPACES[name]()
    k = sp.k
    rng = np.random.default_rng(0)
    V = rng.normal(scale=2.0, size=(50, k))
    y = rng.integers(0, k, 50)
    E = np.eye(k)
    for i in range(50):
        v = V[i]
        scores = [E[j] @ v for j in range(k)]
        assert sp.decode(v) == int(np.argmax(scores))
        aug = [sp.loss_matrix[y[i], j] + E[j] @ v for j in range(k)]
        assert sp.loss_augmented(v, y[i]) == int(np.argmax(aug))
        Z = sum(np.exp(E[j] @ v) for j in range(k))
        assert abs(sp.log_partition(v) - np.log(Z)) < 1e-10
        m = sum(np.exp(E[j] @ v) / Z * E[j] for j in range(k))
        np.testing.assert_allclose(sp.marginals(v), m, atol=1e-10)
        risk = [sum(m[t] * sp.loss(t, j) for t in range(k)) for j in range(k)]
        assert sp.bayes_decode(m) == int(np.argmin(risk))
    # batch versions agree with the per-row ones
    np.testing.assert_array_equal(sp.decode(V), [sp.decode(v) for v in V])
    np.testing.assert_array_equal(sp.loss_augmented(V, y), [sp.loss_augmented(V[i], y[i]) for i in range(50)])
    np.testing.assert_allclose(sp.log_partition(V), logsumexp(V, axis=1), atol=1e-10)


def test_loss_values_and_median():
    sp = Multiclass.ordinal(5)
    assert sp.loss(1, 4) == 3.0
    np.testing.assert_array_equal(sp.loss([0, 2], [4, 2]), [4.0, 0.0])
    # Bayes decoding under |y - y'| is the median bin
    m = np.array([0.1, 0.15, 0.3, 0.05, 0.4])
    assert sp.bayes_decode(m) == 2
    assert Multiclass.zero_one(3).loss(0, 0) == 0.0 and Multiclass.zero_one(3).loss(0, 2) == 1.0


@pytest.mark.parametrize("name", list(SPACES))
def test_fast_matvec_kinds(name):
    from structpred.outputs import _multiclass_kernels as K

    sp = SPACES[name]()
    x = np.random.default_rng(1).random(sp.k)
    out = np.empty(sp.k)
    K.matvec(sp.loss_matrix, sp.kind, x, out)
    np.testing.assert_allclose(out, sp.loss_matrix @ x, atol=1e-12)
    K.rmatvec(sp.loss_matrix, sp.kind, x, out)
    np.testing.assert_allclose(out, sp.loss_matrix.T @ x, atol=1e-12)


@pytest.mark.parametrize("name", list(SPACES))
def test_maxmin_vs_lp_and_rate(name):
    sp = SPACES[name]()
    rng = np.random.default_rng(2)
    for _ in range(5):
        v = rng.normal(size=sp.k)
        val, _ = maxmin_lp(sp.loss_matrix, v)
        gaps = []
        for K in (25, 100, 400):
            r = sp.max_min(v, n_iter=K)
            # certified bracket of the exact value
            assert r.value <= val + 1e-9 <= r.upper + 2e-9
            assert abs(r.gap - (r.upper - r.value)) < 1e-12
            assert r.gap <= 4 * sp.lipschitz / K + 1e-12  # Theorem G.1
            np.testing.assert_allclose(r.mu.sum(), 1.0, atol=1e-12)
            gaps.append(r.gap)
        # ~1/K: four times the iterations cut the gap by at least 2.5
        assert gaps[1] <= gaps[0] / 2.5 and gaps[2] <= gaps[1] / 2.5
        r = sp.max_min(v, n_iter=4000)
        assert abs(r.value - val) < 5e-3 and r.gap < 1e-2


def test_maxmin_warm_start_from_solution():
    sp = Multiclass.ordinal(5)
    v = np.random.default_rng(4).normal(size=5)
    long = sp.max_min(v, n_iter=3000)
    cold = sp.max_min(v, n_iter=5)
    warm = sp.max_min(v, warm=long.state, n_iter=5)
    assert warm.gap < 0.2 * cold.gap
    assert warm.gap < 0.05


def test_maxmin_batch_and_errors():
    sp = Multiclass.zero_one(4)
    V = np.random.default_rng(5).normal(size=(7, 4))
    r = sp.max_min(V, n_iter=30)
    assert r.mu.shape == (7, 4) and r.gap.shape == (7,)
    r0 = sp.max_min(V[3], n_iter=30)
    np.testing.assert_allclose(r.mu[3], r0.mu, atol=1e-14)
    with pytest.raises(StructpredError):
        sp.max_min(np.ones(3))
    with pytest.raises(StructpredError):
        sp.decode(np.array([1.0, np.nan, 0.0, 0.0]))
    with pytest.raises(StructpredError):
        sp.loss_augmented(np.zeros(4), 7)
    with pytest.raises(StructpredError):
        make_space("hamming", 3)
    with pytest.raises(StructpredError):
        Multiclass(np.ones((2, 3)))


def test_surrogate_gradients_finite_differences():
    from structpred.surrogates import Hinge, LogLoss, MaxMinMargin

    rng = np.random.default_rng(6)
    for sp in (Multiclass.zero_one(4), Multiclass.ordinal(5)):
        k = sp.k
        v = rng.normal(size=(1, k))
        y = np.array([1])
        h = 1e-6
        # CRF: smooth, exact gradient
        crf_loss = LogLoss(sp).value_grad
        f0, g = crf_loss(v, y)
        num = np.array([(crf_loss(v + h * np.eye(k)[j], y)[0][0] - crf_loss(v - h * np.eye(k)[j], y)[0][0]) / (2 * h) for j in range(k)])
        np.testing.assert_allclose(g[0], num, atol=1e-7)
        # hinge: piecewise linear, generic point
        hinge_loss = Hinge(sp).value_grad
        _, g = hinge_loss(v, y)
        num = np.array([(hinge_loss(v + h * np.eye(k)[j], y)[0][0] - hinge_loss(v - h * np.eye(k)[j], y)[0][0]) / (2 * h) for j in range(k)])
        np.testing.assert_allclose(g[0], num, atol=1e-6)
        # max-min: exact value by LP, gradient mu* - e_y (Danskin) at a generic point
        def S(vv):
            return maxmin_lp(sp.loss_matrix, vv)[0] - vv[y[0]]

        val, _, g = MaxMinMargin(sp, n_iter=20000).bounds(v, y)
        hh = 1e-5
        num = np.array([(S(v[0] + hh * np.eye(k)[j]) - S(v[0] - hh * np.eye(k)[j])) / (2 * hh) for j in range(k)])
        np.testing.assert_allclose(g[0], num, atol=2e-2)
        assert abs(val[0] - S(v[0])) < 1e-3
