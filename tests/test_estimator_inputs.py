"""What an estimator refuses rather than get wrong (issue 41): labels that are not 0..k-1, loss
matrices the surrogates do not assume, inputs whose norms overflow, sequence labels that are not
integers or empty, empty grids; and what it documents instead (QSCV's random_state)."""

from __future__ import annotations

import numpy as np
import pytest

from structpred.errors import StructpredError
from structpred.estimators import AGM, CRF, M3N, QS, QSCV
from structpred.outputs import Multiclass, make_space

rng = np.random.default_rng(0)
X = rng.normal(size=(30, 3))


@pytest.mark.parametrize("estimator", [M3N(n_passes=2), CRF(n_passes=2), AGM(n_passes=2), QS()],
                         ids=lambda e: type(e).__name__)
def test_labels_must_be_0_to_k_minus_1(estimator):
    for y, text in (([0, 5, 9] * 10, r"7 of 0\.\.9 never occur \(1, 2, 3, 4, 6, \.\.\.\).*pass n_labels=10"),
                    ([2] * 30, r"2 of 0\.\.2 never occur \(0, 1\)"),                 # one class, not the first
                    ([0] * 29 + [10**6], r"most of 0\.\.1000000 never occur"),     # not a 7 TiB allocation
                    ([-1, 0, 1] * 10, "integer labels 0..k-1, got -1"),
                    ([0.5, 1, 2] * 10, "integer labels 0..k-1, got 0.5")):
        with pytest.raises(StructpredError, match=text) as info:
            estimator.fit(X, np.asarray(y))
        assert "\n" not in str(info.value)
    # a training split lacking one class (or the top ones) is fine; n_labels covers absent classes
    assert M3N(n_passes=2).fit(X, np.arange(30) % 3 + 1).n_labels_ == 4
    assert M3N(n_passes=2, n_labels=10).fit(X, np.array([0, 5, 9] * 10)).n_labels_ == 10


def test_loss_matrices_must_be_nonnegative_with_a_zero_diagonal():
    for matrix in ([[0, 1], [-1, 0]], [[0.5, 1], [1, 0]]):
        with pytest.raises(StructpredError, match="nonnegative with a zero diagonal"):
            M3N(loss=np.array(matrix, dtype=float)).fit(X, np.arange(30) % 2)
    assert make_space(np.array([[0, 2.0], [1, 0]])).k == 2            # asymmetric is fine
    own = Multiclass(np.array([[0.5, 1.0], [1.0, 0.0]]))                # the space itself: taken as given
    assert make_space(own) is own


def test_inputs_whose_squares_overflow_are_refused():
    for estimator in (M3N(n_passes=2), AGM(n_passes=2), QS()):
        with pytest.raises(StructpredError, match="values are too large.*rescale X"):
            estimator.fit(X * 1e200, np.arange(30) % 3)
    assert np.abs(M3N(n_passes=2).fit(X * 1e100, np.arange(30) % 3).coef_).max() > 0   # large but fine


def test_sequence_labels_are_integer_and_non_empty():
    seqs = [rng.normal(size=(4, 3)) for _ in range(6)]
    with pytest.raises(StructpredError, match=r"y\[0\] must hold integer labels 0\.\.k-1, got dtype <U1"):
        M3N(loss="sequence_hamming", n_passes=2).fit(seqs, [np.array(list("abab"))] * 6)
    labels = [np.array([0, 1, 0, 1])] * 5 + [np.array([], dtype=int)]
    with pytest.raises(StructpredError, match=r"y\[5\] must be a non-empty 1-d sequence of labels, got shape \(0,\)"):
        M3N(loss="sequence_hamming", n_passes=2).fit(seqs, labels)


def test_qscv_grids_and_random_state():
    y = np.arange(30) % 3
    for kw in ({"lams": ()}, {"sigmas": []}):
        with pytest.raises(StructpredError, match="must each hold at least one value"):
            QSCV(**kw).fit(X, y)
    grid = {"sigmas": (0.5, 1.0, 2.0), "lams": (1e-1, 1e-3)}
    a, b = (QSCV(**grid, random_state=np.random.default_rng(4)).fit(X, y) for _ in range(2))
    assert (a.sigma_, a.lam_) == (b.sigma_, b.lam_)                     # a Generator: one seed drawn per fit
    again = [QSCV(**grid, random_state=7).fit(X, y) for _ in range(3)]
    assert len({(m.sigma_, m.lam_) for m in again}) == 1               # an int: the same folds every fit


def test_classifier_conventions_for_single_label_losses():
    import warnings

    from sklearn.base import is_classifier
    from sklearn.exceptions import DataConversionWarning

    y = np.arange(30) % 3
    assert is_classifier(M3N()) and is_classifier(QS(loss="ordinal")) and is_classifier(CRF(loss=np.ones((3, 3)) - np.eye(3)))
    assert not is_classifier(M3N(loss="sequence_hamming")) and not is_classifier(M3N(loss="permutation_hamming"))
    rows = M3N(n_passes=2, random_state=0).fit(X.tolist(), y)          # a list of rows is a matrix
    np.testing.assert_array_equal(rows.predict(X.tolist()), M3N(n_passes=2, random_state=0).fit(X, y).predict(X))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        column = M3N(n_passes=2, random_state=0).fit(X, y[:, None])
    assert any(issubclass(w.category, DataConversionWarning) for w in caught)
    np.testing.assert_array_equal(column.coef_, M3N(n_passes=2, random_state=0).fit(X, y).coef_)
    assert list(QS().fit(X, y).classes_) == [0, 1, 2]
    with pytest.raises(StructpredError, match="Unknown label type: .*LabelEncoder"):
        M3N().fit(X, np.array(["a", "b", "c"] * 10))
    with pytest.raises(StructpredError, match="not sequences of per-position features"):
        M3N().fit([rng.normal(size=(3, 3))] * 30, y)


def test_counts_are_integers_not_truncated():
    y = np.arange(30) % 3
    for kw in ({"n_components": 2.5}, {"n_components": "a"}, {"batch_size": 0.5}):
        with pytest.raises(StructpredError, match="must be a positive integer"):
            QS(**kw).fit(X, y).predict(X)
    assert QS(n_components=10.0, random_state=0).fit(X, y).centers_.shape == (10, 3)
