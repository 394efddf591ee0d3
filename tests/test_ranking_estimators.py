"""M3N / M4N estimators on label rankings; CRF refused (no marginals on permutations)."""

import numpy as np
import pytest
from sklearn.base import clone

from structpred.errors import StructpredError
from structpred.estimators import CRF, M3N, M4N
from structpred.outputs import Multiclass, Permutation
from tests.reference import all_perms

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
