"""NystromGaussian: shapes, bias, determinism, kernel approximation."""

import numpy as np
import pytest
from sklearn.base import clone

from structpred.errors import StructpredError
from structpred.features import NystromGaussian


def data(n=120, p=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * np.arange(1, p + 1)
    X[:, 2] = 5.0  # constant column
    return X


def test_shapes_bias_standardised_and_sigma():
    X = data()
    nys = NystromGaussian(n_components=40, random_state=0).fit(X)
    F = nys.transform(X)
    assert F.shape == (120, nys.n_features_out_) and nys.n_features_out_ <= 41
    np.testing.assert_array_equal(F[:, -1], 1.0)
    np.testing.assert_allclose(F[:, :-1].mean(0), 0.0, atol=1e-10)
    np.testing.assert_allclose(F[:, :-1].std(0), 1.0, atol=1e-8)
    assert nys.sigma_ == pytest.approx(np.sqrt(5.0))  # 5 non-constant standardised features
    # more centres than rows: all rows become centres
    assert NystromGaussian(500, random_state=0).fit(X[:30]).centers_.shape[0] == 30


def test_determinism_and_seed():
    X = data()
    a = NystromGaussian(30, random_state=3).fit(X).transform(X)
    b = clone(NystromGaussian(30, random_state=3)).fit(X).transform(X)
    c = NystromGaussian(30, random_state=4).fit(X).transform(X)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a[:, :5], c[:, :5])


def test_kernel_approximation_on_span_of_centres():
    X = data(n=80)
    nys = NystromGaussian(80, random_state=0, eig_tol=1e-12).fit(X)
    Z = (X - nys.mean_) / nys.scale_
    # undo the final standardisation: raw Nystrom map
    F = (nys.transform(X)[:, :-1] * nys.feat_scale_) + nys.feat_mean_
    sq = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    K = np.exp(-sq / (2 * nys.sigma_ ** 2))
    # all rows are centres, so the Nystrom approximation is exact on them
    np.testing.assert_allclose(F @ F.T, K, atol=1e-5)
    # points outside the centres: K_nm K_mm^-1 K_mn <= K (psd error), small on-sample error
    nys2 = NystromGaussian(40, random_state=0).fit(X)
    F2 = (nys2.transform(X)[:, :-1] * nys2.feat_scale_) + nys2.feat_mean_
    idx = nys2.center_indices_
    np.testing.assert_allclose((F2 @ F2.T)[np.ix_(idx, idx)], K[np.ix_(idx, idx)], atol=1e-5)
    assert np.linalg.eigvalsh(K - F2 @ F2.T).min() > -1e-6


def test_reference_mode_and_errors():
    X = data()
    F = NystromGaussian(30, random_state=0, whiten=False).fit(X).transform(X)
    assert F.shape == (120, 31)
    nys = NystromGaussian(30, random_state=0).fit(X)
    with pytest.raises(ValueError, match="X has 3 features, but NystromGaussian is expecting 6 features as input"):
        nys.transform(X[:, :3])
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        NystromGaussian(10).fit(Xn)
    with pytest.raises(StructpredError, match=r"^X must be 2-d \(n_samples, n_features\), got 1-d\. Reshape"):
        NystromGaussian(10).fit(X[0])
    for bad, text in (({"n_components": 2.5}, "n_components must be a positive integer, got 2.5"),
                      ({"n_components": "a"}, "n_components must be a positive integer, got 'a'"),
                      ({"n_components": 0}, "n_components must be a positive integer, got 0"),
                      ({"eig_tol": -1}, r"eig_tol must be a number in \[0, 1\), got -1")):
        with pytest.raises(StructpredError, match=text):
            NystromGaussian(**bad).fit(X)
    assert NystromGaussian(n_components=10.0, random_state=0).fit(X).n_features_out_ == 11   # an integral float
    with pytest.raises(ValueError, match="0 feature"):
        NystromGaussian(10).fit(np.zeros((5, 0)))
    with pytest.raises(ValueError, match="Complex data not supported"):
        NystromGaussian(10).fit(X.astype(complex))
