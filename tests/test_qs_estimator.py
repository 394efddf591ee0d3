"""QS (Ciliberto et al. 2016): kernel-ridge weights against direct solves, loss-trick decoding
of affine losses against enumeration, cross-validation against explicit refits, errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.model_selection import KFold

from structpred.errors import StructpredError
from structpred.estimators import QS, QSCV
from structpred.features.kernels import kernel_matrix, median_distance
from structpred.outputs import Cauchy as _Cauchy
from structpred.outputs import Chain, LossSpace, Multiclass, Permutation
from structpred.solvers.kernel_ridge import NystromRidgeWeights, RidgePath, RidgeWeights


def _data(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, rng


@pytest.mark.parametrize("kernel", ["linear", "gaussian"])
def test_weights_match_a_direct_solve(kernel):
    X, rng = _data()
    Xq = rng.normal(size=(7, 3))
    lam = 0.03
    K = kernel_matrix(kernel, X, X, 1.5)
    Kx = kernel_matrix(kernel, X, Xq, 1.5)
    direct = np.linalg.solve(K + len(X) * lam * np.eye(len(X)), Kx).T
    np.testing.assert_allclose(RidgeWeights(K, lam)(Kx), direct, rtol=1e-9, atol=1e-12)
    path = RidgePath(K)
    np.testing.assert_allclose(path.weights(path.project(Kx), lam), direct, rtol=1e-7, atol=1e-10)
    model = QS(kernel=kernel, sigma=1.5, lam=lam).fit(X, rng.integers(0, 3, len(X)))
    np.testing.assert_allclose(model.weights(Xq), direct, rtol=1e-9, atol=1e-12)


def test_kernels_match_their_formulas():
    X, rng = _data(n=5)
    B = rng.normal(size=(4, 3))
    G = kernel_matrix("gaussian", X, B, 0.7)
    ref = np.exp(-((X[:, None, :] - B[None, :, :]) ** 2).sum(-1) / (2 * 0.7 ** 2))
    np.testing.assert_allclose(G, ref, rtol=1e-12)
    np.testing.assert_allclose(kernel_matrix("linear", X, B), X @ B.T)
    d = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))[np.triu_indices(5, 1)]
    assert median_distance(X) == pytest.approx(np.median(d))


def test_nystrom_with_every_centre_is_exact_and_with_fewer_close():
    X, rng = _data(n=30)
    Xq = rng.normal(size=(5, 3))
    lam = 1e-2
    K = kernel_matrix("gaussian", X, X, 2.0)
    Kx = kernel_matrix("gaussian", X, Xq, 2.0)
    exact = RidgeWeights(K, lam)(Kx)
    np.testing.assert_allclose(NystromRidgeWeights(K, K, lam)(Kx), exact, rtol=1e-6, atol=1e-8)
    y = rng.integers(0, 2, 30)

    def error(m):
        model = QS(sigma=2.0, lam=lam, n_components=m, random_state=0).fit(X, y)
        assert model.centers_.shape == (m, 3)
        return np.linalg.norm(model.weights(Xq) - exact) / np.linalg.norm(exact)

    assert error(5) > 0.3 and 1e-4 < error(25) < 0.05  # an approximation that improves with m


def _brute_force(space, outputs, alpha, Y):
    """``argmin_y sum_i alpha_i L(Y_i, y)`` over an enumerated output set."""
    cost = [sum(a * float(space.loss(t, y)) for a, t in zip(alpha, Y)) for y in outputs]
    return outputs[int(np.argmin(cost))], float(np.min(cost))


def _check_affine(space, outputs, Y, seed):
    X, rng = _data(n=len(Y), seed=seed)
    model = QS(loss=space, sigma=1.0, lam=0.05).fit(X, Y)
    Xq = rng.normal(size=(6, 3))
    pred = model.predict(Xq)
    for alpha, p in zip(model.weights(Xq), pred):
        best, best_cost = _brute_force(space, outputs, alpha, Y)
        ours = sum(a * float(space.loss(t, p)) for a, t in zip(alpha, Y))
        assert ours == pytest.approx(best_cost, abs=1e-9)
    assert (np.asarray(alpha) < 0).any()  # the weights do take both signs


def test_qs_on_affine_losses_equals_enumeration():
    rng = np.random.default_rng(3)
    mc = Multiclass.ordinal(4)
    _check_affine(mc, [np.int64(c) for c in range(4)], rng.integers(0, 4, 25), seed=1)
    perm = Permutation(4)
    outs = [np.array(p) for p in itertools.permutations(range(4))]
    _check_affine(perm, outs, np.array([outs[i] for i in rng.integers(0, 24, 25)]), seed=2)
    chain = Chain(3, "absolute")
    seqs = [np.array(s) for s in itertools.product(range(3), repeat=3)]
    _check_affine(chain, seqs, [seqs[i] for i in rng.integers(0, 27, 25)], seed=3)


def test_chain_needs_training_sequences_of_one_length():
    X, _ = _data(n=3)
    with pytest.raises(StructpredError, match="one size"):
        QS(loss=Chain(2), lam=0.1).fit(X, [np.array([0, 1]), np.array([1]), np.array([0, 0])])


def test_cross_validation_matches_explicit_refits():
    X, rng = _data(n=45, seed=5)
    y = (X[:, 0] + 0.3 * rng.normal(size=45) > 0).astype(int) + (X[:, 1] > 1)
    sigmas, lams = [0.5, 2.0], [1e-1, 1e-3]
    cv = QSCV(sigmas=sigmas, lams=lams, n_folds=3, random_state=0).fit(X, y)
    folds = list(KFold(3, shuffle=True, random_state=0).split(X))
    table = {}
    for s in sigmas:
        for lam in lams:
            table[s, lam] = np.mean([QS(sigma=s, lam=lam).fit(X[tr], y[tr]).task_loss(X[va], y[va])
                                     for tr, va in folds])
    got = cv.cv_results_.groupby(["sigma", "lam"], sort=False)["loss"].mean()
    for key, val in table.items():
        assert got[key] == pytest.approx(val, abs=1e-12)
    keys = list(table)
    assert (cv.sigma_, cv.lam_) == keys[int(np.argmin([table[k] for k in keys]))]
    refit = QS(sigma=cv.sigma_, lam=cv.lam_).fit(X, y)
    np.testing.assert_array_equal(cv.predict(X), refit.predict(X))


@pytest.mark.parametrize("n_components", [None, 25])
def test_kernel_ridge_coefficients_give_the_weighted_decoding(n_components):
    """The statistic path (K_x^T (K + n lam I)^-1 psi(Y)) predicts what decoding the weights does."""
    from structpred.outputs import Hellinger

    X, rng = _data(n=60, seed=8)
    Y = rng.random((60, 7)) + X[:, :1] ** 2
    Y /= Y.sum(axis=1, keepdims=True)
    Xq = rng.normal(size=(9, 3))
    for space, y in ((Hellinger(7), Y), (Multiclass.ordinal(4), rng.integers(0, 4, 60))):
        model = QS(loss=space, sigma=1.0, lam=1e-3, n_components=n_components, random_state=0).fit(X, y)
        assert model.dual_coef_ is not None
        direct = space.weighted_decode(model.weights(Xq), model.y_fit_)
        np.testing.assert_allclose(model.predict(Xq), direct, atol=1e-10)
    assert QS(loss=_Cauchy(), lam=1e-2).fit(X, X[:, 0]).dual_coef_ is None  # no finite statistic


def test_predictions_are_deterministic_and_batched_alike():
    X, rng = _data(n=50, seed=7)
    y = rng.integers(0, 3, 50)
    a = QS(lam=1e-2, n_components=20, random_state=4, batch_size=7).fit(X, y).predict(X)
    b = QS(lam=1e-2, n_components=20, random_state=4).fit(X, y).predict(X)
    np.testing.assert_array_equal(a, b)


class _NoDecoder(LossSpace):
    def check_labels(self, y):
        return np.asarray(y)

    def loss(self, y, y2):
        return np.zeros(np.shape(y)[:1])


def test_clear_errors():
    X, rng = _data(n=10)
    y = rng.integers(0, 2, 10)
    with pytest.raises(StructpredError, match="needs loss-trick decoding"):
        QS(loss=_NoDecoder()).fit(X, y)
    with pytest.raises(StructpredError, match="unknown kernel"):
        QS(kernel="poly").fit(X, y)
    with pytest.raises(StructpredError, match="NaN"):
        QS().fit(np.where(X > 1, np.nan, X), y)
    with pytest.raises(StructpredError, match="sparse"):
        from scipy.sparse import csr_matrix
        QS().fit(csr_matrix(X), y)
    with pytest.raises(StructpredError, match="lam"):
        QS(lam=0).fit(X, y)
    model = QS().fit(X, y)
    with pytest.raises(StructpredError, match="expecting 3 features"):
        model.predict(X[:, :2])
    with pytest.raises(StructpredError, match="n_folds"):
        QSCV(n_folds=20).fit(X, y)
