"""A fit resumed from its per-pass checkpoint gives the uninterrupted fit's result, bit for bit."""

import numpy as np
import pandas as pd
import pytest

from structpred.errors import StructpredError
from structpred.estimators import AGM, CRF, M3N, M4N
from structpred.outputs import Chain


def _chains(seed=0, n=30):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(rng.integers(3, 6), 4)) for _ in range(n)]
    y = [rng.integers(0, 3, size=len(x)) for x in X]
    return X, y


def _multiclass(seed=0, n=60):
    rng = np.random.default_rng(seed)
    X = np.c_[rng.normal(size=(n, 3)), np.ones(n)]
    return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int) + (X[:, 1] > 0.5)


ESTIMATORS = [
    ("AGM chain", lambda: AGM(loss=Chain(3, "absolute"), lam=0.1, n_passes=5, random_state=0), _chains),
    ("M3N chain", lambda: M3N(loss=Chain(3, "hamming"), lam=0.1, n_passes=5, random_state=0), _chains),
    ("CRF chain", lambda: CRF(loss=Chain(3, "hamming"), lam=0.1, n_passes=5, random_state=0), _chains),
    ("M4N chain", lambda: M4N(loss=Chain(3, "hamming"), lam=0.1, n_passes=5, random_state=0), _chains),
    ("M3N ordinal", lambda: M3N(loss="ordinal", lam=0.1, n_passes=5, averaging=True, random_state=0), _multiclass),
    ("M4N ordinal", lambda: M4N(loss="ordinal", lam=0.1, n_passes=5, random_state=0), _multiclass),
]


@pytest.mark.parametrize("name, make, data", ESTIMATORS, ids=[e[0] for e in ESTIMATORS])
def test_two_passes_then_three_more_equal_five(name, make, data, tmp_path):
    X, y = data()
    full = make().fit(X, y)
    path = tmp_path / "fit.ckpt"
    first = make().set_params(n_passes=2).fit(X, y, checkpoint=path)
    assert len(first.history_) == 2 and path.is_file()
    resumed = make().fit(X, y, checkpoint=path)   # a new estimator, as a new process would have
    np.testing.assert_array_equal(resumed.coef_, full.coef_)
    pd.testing.assert_frame_equal(resumed.history_.drop(columns="seconds"), full.history_.drop(columns="seconds"))
    assert resumed.history_["seconds"].is_monotonic_increasing
    np.testing.assert_array_equal(resumed.predict(X[:5]) if not isinstance(X, list) else
                                  np.concatenate(resumed.predict(X[:5])),
                                  full.predict(X[:5]) if not isinstance(X, list) else np.concatenate(full.predict(X[:5])))
    again = make().fit(X, y, checkpoint=path)      # nothing left to do: the same result
    np.testing.assert_array_equal(again.coef_, full.coef_)


def test_a_converged_fit_is_not_trained_further(tmp_path):
    X, y = _multiclass()
    path = tmp_path / "fit.ckpt"
    done = CRF(loss="ordinal", lam=0.5, n_passes=200, rtol=1e-3, random_state=0).fit(X, y, checkpoint=path)
    assert len(done.history_) < 200   # stopped on its certified gap
    more = CRF(loss="ordinal", lam=0.5, n_passes=400, rtol=1e-3, random_state=0).fit(X, y, checkpoint=path)
    assert len(more.history_) == len(done.history_)
    np.testing.assert_array_equal(more.coef_, done.coef_)


def test_a_checkpoint_of_another_fit_or_a_broken_file_is_one_clear_error(tmp_path):
    X, y = _multiclass()
    path = tmp_path / "fit.ckpt"
    M3N(loss="ordinal", lam=0.1, n_passes=2, random_state=0).fit(X, y, checkpoint=path)
    with pytest.raises(StructpredError, match=r"belongs to another fit .*'lam': 0\.1.*'lam': 0\.2"):
        M3N(loss="ordinal", lam=0.2, n_passes=2, random_state=0).fit(X, y, checkpoint=path)
    with pytest.raises(StructpredError, match="belongs to another fit"):
        CRF(loss="ordinal", lam=0.1, n_passes=2, random_state=0).fit(X, y, checkpoint=path)
    path.write_bytes(b"not a pickle")
    with pytest.raises(StructpredError, match="cannot be read .*delete it to start the fit afresh"):
        M3N(loss="ordinal", lam=0.1, n_passes=2, random_state=0).fit(X, y, checkpoint=path)
