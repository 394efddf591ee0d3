"""Estimators: scikit-learn API, determinism, prediction rules, bad input."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from structpred.errors import StructpredError
from structpred.estimators import CRF, M3N, M4N
from structpred.features import NystromGaussian


def data(n=150, p=4, k=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = np.clip(np.round(X[:, 0] * 1.2 + 1.5 + 0.3 * rng.normal(size=n)), 0, k - 1).astype(int)
    return X, y


EST = [lambda **kw: M3N(lam=0.01, n_passes=15, **kw), lambda **kw: CRF(lam=0.01, n_passes=15, **kw),
       lambda **kw: M4N(lam=0.01, n_passes=15, n_iter_oracle=10, **kw)]


@pytest.mark.parametrize("make", EST)
@pytest.mark.parametrize("loss", ["zero_one", "ordinal"])
def test_fit_predict_score_determinism(make, loss):
    X, y = data()
    F = NystromGaussian(50, random_state=0).fit(X).transform(X)
    est = make(loss=loss, random_state=0)
    params = est.get_params()
    assert params["loss"] == loss and "random_state" in params
    c = clone(est)
    est.fit(F[:100], y[:100], F[100:], y[100:])
    c.fit(F[:100], y[:100])
    np.testing.assert_array_equal(est.coef_, c.coef_)
    np.testing.assert_array_equal(est.predict(F[100:]), c.predict(F[100:]))
    assert est.coef_.shape == (F.shape[1], 4) and est.n_labels_ == 4
    np.testing.assert_array_equal(est.classes_, np.arange(4))
    h = est.history_
    assert len(h) == 15 and {"pass", "primal", "dual", "gap", "oracle_calls", "seconds", "val_loss"} <= set(h.columns)
    tl = est.task_loss(F[100:], y[100:])
    assert est.score(F[100:], y[100:]) == -tl
    assert tl == pytest.approx(h["val_loss"].iloc[-1])
    # a learnable 1-d ordinal problem: far better than predicting a constant
    assert tl < 0.8 * np.min([np.mean(est.space_.loss(y[100:], np.full(50, j))) for j in range(4)])


def test_crf_bayes_decoding_and_set_params():
    X, y = data()
    est = CRF(loss="ordinal", lam=0.01, n_passes=10, random_state=1).fit(X, y)
    P = est.predict_proba(X)
    np.testing.assert_allclose(P.sum(1), 1.0)
    cum = np.cumsum(P, axis=1)
    median = np.argmax(cum >= 0.5, axis=1)
    np.testing.assert_array_equal(est.predict(X), median)
    est.set_params(lam=0.5)
    assert est.lam == 0.5
    m4n = M4N().set_params(n_iter_oracle=5, warm_start_oracle=False)
    assert m4n.get_params()["n_iter_oracle"] == 5


def test_pipeline_and_explicit_loss_matrix():
    X, y = data()
    A = np.abs(np.subtract.outer(np.arange(4), np.arange(4))) ** 2.0
    pipe = make_pipeline(NystromGaussian(30, random_state=0), M3N(loss=A, lam=0.05, n_passes=5, random_state=0))
    pipe.fit(X, y)
    assert pipe.predict(X).shape == (150,)
    assert pipe.score(X, y) <= 0


def test_bad_input():
    X, y = data()
    with pytest.raises(StructpredError):
        M3N().fit(X, y[:-1])
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(StructpredError):
        CRF().fit(Xn, y)
    with pytest.raises(StructpredError):
        M4N(loss="hamming").fit(X, y)
    with pytest.raises(StructpredError):
        M3N(n_labels=2).fit(X, y)  # labels outside 0..1
    with pytest.raises(StructpredError):
        M3N(lam=0).fit(X, y)
    with pytest.raises(StructpredError):
        M3N().fit(X, y + 0.5)
    est = M3N(n_passes=2).fit(X, y)
    with pytest.raises(StructpredError):
        est.predict(X[:, :2])
    with pytest.raises(StructpredError):
        M3N().fit(X, y, X_val=X)


def test_method_names_map_to_one_estimator_each():
    from structpred.errors import ConfigError
    from structpred.estimators import AGM, M3N
    from structpred.estimators.methods import make_estimator

    ssvm = make_estimator("SSVM", loss="zero_one", n_labels=3, lam=0.1)
    assert type(ssvm) is M3N and ssvm.get_params() == M3N(loss="zero_one", n_labels=3, lam=0.1).get_params()
    spmp = make_estimator("AGM-SPMP", loss="zero_one", n_labels=3, game="exact")
    assert type(spmp) is AGM and spmp.game == "spmp"  # the name fixes the game
    with pytest.raises(ConfigError, match="unknown method 'SVM'; known: M3N, SSVM, CRF, M4N, AGM, AGM-SPMP"):
        make_estimator("SVM")
