"""Equal-frequency discretisation."""

from __future__ import annotations

import numpy as np
import pytest

from structpred.data.discretize import equal_frequency_bins
from structpred.errors import DataError


def test_exact_counts_without_ties():
    rng = np.random.default_rng(0)
    t = rng.permutation(100).astype(float)
    y = equal_frequency_bins(t, 10)
    assert y.dtype == np.int64
    assert np.bincount(y).tolist() == [10] * 10
    assert np.array_equal(y, (t // 10).astype(np.int64))  # cuts at the quantiles


def test_roughly_n_over_k_monotone_deterministic():
    rng = np.random.default_rng(1)
    t = rng.normal(size=1003)
    y = equal_frequency_bins(t, 7)
    assert np.all(np.abs(np.bincount(y) - 1003 / 7) <= 1)
    order = np.argsort(t)
    assert np.all(np.diff(y[order]) >= 0)
    assert np.array_equal(y, equal_frequency_bins(t.copy(), 7))


def test_ties_kept_together_and_no_empty_bin():
    # heavy ties where quantile edges coincide (the abalone situation)
    t = np.array([1] * 40 + [2] * 5 + [3] * 5 + [4] * 50, dtype=float)
    y = equal_frequency_bins(t, 4)
    for v in np.unique(t):
        assert len(np.unique(y[t == v])) == 1
    assert np.bincount(y, minlength=4).tolist() == [40, 5, 5, 50]


def test_few_distinct_values_and_bad_input():
    with pytest.raises(DataError, match="3 distinct values, fewer than k=5"):
        equal_frequency_bins(np.array([1.0, 2, 3, 3, 2, 1]), 5)
    with pytest.raises(DataError, match="NaN"):
        equal_frequency_bins(np.array([1.0, np.nan, 3, 4]), 2)
    with pytest.raises(DataError, match="1-d"):
        equal_frequency_bins(np.ones((3, 3)), 2)
    with pytest.raises(DataError, match="k >= 2"):
        equal_frequency_bins(np.arange(5.0), 1)
