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


# ---- bin_target: every scheme ------------------------------------------------------------

from structpred.data.discretize import BINNINGS, bin_target  # noqa: E402
from structpred.errors import ConfigError  # noqa: E402


def test_equal_width_bins_and_edges():
    t = np.array([0.0, 0.9, 1.0, 2.5, 3.99, 4.0, 10.0])
    y, edges = bin_target(t, 5, "equal_width")
    np.testing.assert_allclose(edges, [0, 2, 4, 6, 8, 10])
    assert y.tolist() == [0, 0, 0, 1, 1, 2, 4]          # 4.0 sits on an edge: upper bin; bin 3 empty
    y, edges = bin_target(np.array([1.0, 10, 100, 1000, 999]), 3, "equal_width_log")
    np.testing.assert_allclose(edges, [1, 10, 100, 1000])
    assert y.tolist() == [0, 1, 2, 2, 2]
    with pytest.raises(DataError, match="positive target"):
        bin_target(np.array([0.0, 1, 2, 3]), 2, "equal_width_log")


def test_kmeans_bins_separate_clusters_and_equal_frequency_keeps_its_labels():
    rng = np.random.default_rng(0)
    centres = np.array([0.0, 10.0, 30.0])
    t = np.concatenate([c + rng.normal(scale=0.5, size=n) for c, n in zip(centres, (50, 20, 5))])
    y, edges = bin_target(t, 3, "kmeans")
    assert np.bincount(y).tolist() == [50, 20, 5]
    assert edges[0] == t.min() and edges[-1] == t.max() and 0 < edges[1] < 10 < edges[2] < 30
    y, edges = bin_target(t, 4, "equal_frequency")
    np.testing.assert_array_equal(y, equal_frequency_bins(t, 4))
    for j in range(1, 4):  # each inner edge separates the bins
        assert t[y < j].max() < edges[j] < t[y >= j].min()


@pytest.mark.parametrize("scheme", BINNINGS)
def test_every_scheme_is_monotone_in_range_and_deterministic(scheme):
    t = np.exp(np.random.default_rng(2).normal(size=300))
    y, edges = bin_target(t, 6, scheme)
    assert y.dtype == np.int64 and y.min() >= 0 and y.max() <= 5 and edges.shape == (7,)
    assert np.all(np.diff(y[np.argsort(t)]) >= 0) and np.all(np.diff(edges) > 0)
    np.testing.assert_array_equal(y, bin_target(t.copy(), 6, scheme)[0])


def test_bin_target_bad_input():
    with pytest.raises(ConfigError, match="unknown binning 'quantile'; known: equal_frequency"):
        bin_target(np.arange(10.0), 2, "quantile")
    with pytest.raises(DataError, match="distinct values"):
        bin_target(np.array([1.0, 1, 2]), 3, "kmeans")
    with pytest.raises(DataError, match="finite"):
        bin_target(np.array([1.0, np.nan, 2]), 2, "equal_width")
