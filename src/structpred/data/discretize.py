"""Discretisation of a regression target into k ordinal labels.

The ordinal benchmarks of M4N Table 1 are regression sets whose target is cut into k bins; the
paper does not say how.  :func:`bin_target` offers the standard schemes (:data:`BINNINGS`):
equal-frequency bins (about n/k samples each, :func:`equal_frequency_bins`), equal-width bins
of the target or of its logarithm, and 1-d k-means bins (:data:`SCHEMES` adds k-means on the
logarithm, a scheme of the sensitivity table ``m4n_ordinal_protocol`` that the data audit does
not list).
"""

from __future__ import annotations

import numpy as np
from sklearn.preprocessing import KBinsDiscretizer

from structpred.errors import ConfigError, DataError

#: the binning schemes the data audit lists for every ordinal view
BINNINGS = ("equal_frequency", "equal_width", "equal_width_log", "kmeans")
#: every scheme :func:`bin_target` knows
SCHEMES = BINNINGS + ("kmeans_log",)


def equal_frequency_bins(target: np.ndarray, k: int) -> np.ndarray:
    """Labels 0..k-1 (int64) of ``target`` cut into ``k`` equal-frequency ordinal bins.

    Exact rule. Let ``v_1 < ... < v_m`` be the distinct values of ``target`` (n samples)
    and ``c_i`` the number of samples ``<= v_i``. A cut "after ``v_i``" sends every value
    ``<= v_i`` below it. The cuts j = 1..k-1 are chosen in order: cut j goes after the
    ``v_i`` whose ``c_i`` is closest to the empirical quantile count ``j * n / k`` (the
    smallest such i on a tie), among the i strictly above cut j-1 and leaving at least
    ``k - j`` distinct values above it. A sample's label is the number of cuts below its
    value.

    Consequences: equal values always share a label (ties are never split), labels are
    monotone non-decreasing in the target, every one of the k bins is non-empty, and the
    result is deterministic. Without ties and with k dividing n every bin holds exactly
    n/k samples (the cuts sit at the quantiles j/k). Unlike ``searchsorted`` on
    ``np.unique(np.quantile(target, j/k))``, heavy ties (abalone rings) cannot merge two
    quantile edges and leave a bin empty.

    Raises DataError if ``target`` is not 1-d, holds NaN/inf, ``k < 2``, or has fewer
    than ``k`` distinct values.
    """
    t = np.asarray(target, dtype=np.float64)
    if t.ndim != 1:
        raise DataError(f"equal_frequency_bins: target must be 1-d, got shape {t.shape}")
    if not np.all(np.isfinite(t)):
        raise DataError("equal_frequency_bins: target contains NaN or infinite values")
    k = int(k)
    if k < 2:
        raise DataError(f"equal_frequency_bins: need k >= 2 bins, got {k}")
    vals, inverse, counts = np.unique(t, return_inverse=True, return_counts=True)
    m, n = len(vals), len(t)
    if m < k:
        raise DataError(
            f"equal_frequency_bins: target has {m} distinct values, fewer than k={k} bins"
        )
    cum = np.cumsum(counts)
    cuts = np.empty(k - 1, dtype=np.int64)
    prev = -1
    for j in range(1, k):
        lo, hi = prev + 1, m - 1 - (k - j)
        i = lo + int(np.argmin(np.abs(cum[lo : hi + 1] - j * n / k)))
        cuts[j - 1] = prev = i
    label_of_value = np.searchsorted(cuts, np.arange(m), side="left")
    return label_of_value[inverse].astype(np.int64)


def bin_target(target: np.ndarray, k: int, scheme: str = "equal_frequency") -> tuple[np.ndarray, np.ndarray]:
    """``(labels 0..k-1, edges (k + 1,))`` of ``target`` cut into ``k`` ordinal bins by ``scheme``.

    * ``equal_frequency``: :func:`equal_frequency_bins` (no bin empty, ties kept together); the
      inner edges are the midpoints between the largest value below and the smallest above a cut.
    * ``equal_width``: ``k`` intervals of equal width on ``[min, max]`` (bins may be empty).
    * ``equal_width_log``: the same on ``log(target)`` (a positive target), edges in target units.
    * ``kmeans``: 1-d k-means (scikit-learn's ``KBinsDiscretizer(strategy="kmeans")``: Lloyd's
      algorithm from equally spaced centres), edges the midpoints between sorted centres.
    * ``kmeans_log``: the same on ``log(target)`` (a positive target), edges in target units.

    Labels are monotone in the target; a value on an inner edge goes to the upper bin.
    """
    t = np.asarray(target, dtype=np.float64)
    if scheme not in SCHEMES:
        raise ConfigError(f"unknown binning {scheme!r}; known: {', '.join(SCHEMES)}")
    if scheme == "equal_frequency":
        y = equal_frequency_bins(t, k)
        inner = [(t[y < j].max() + t[y >= j].min()) / 2 for j in range(1, k)]
        return y, np.array([t.min(), *inner, t.max()])
    if t.ndim != 1 or not np.all(np.isfinite(t)):
        raise DataError(f"bin_target: target must be 1-d and finite (shape {t.shape})")
    k = int(k)
    if k < 2 or len(np.unique(t)) < k:
        raise DataError(f"bin_target: need k >= 2 bins and at least k distinct values, got k={k}, "
                        f"{len(np.unique(t))} distinct values")
    if scheme in ("kmeans", "kmeans_log"):
        if scheme == "kmeans_log" and t.min() <= 0:
            raise DataError("bin_target: kmeans_log needs a positive target")
        s = np.log(t) if scheme == "kmeans_log" else t
        disc = KBinsDiscretizer(n_bins=k, encode="ordinal", strategy="kmeans", subsample=None)
        disc.fit(s[:, None])
        edges = np.asarray(disc.bin_edges_[0], dtype=np.float64)
        if edges.shape[0] != k + 1:
            raise DataError(f"bin_target: k-means left {edges.shape[0] - 1} distinct bins of the {k} asked")
        if scheme == "kmeans_log":
            y = np.searchsorted(edges[1:-1], s, side="right").astype(np.int64)
            edges = np.exp(edges)
            edges[[0, -1]] = t.min(), t.max()
            return y, edges
    else:
        if scheme == "equal_width_log":
            if t.min() <= 0:
                raise DataError("bin_target: equal_width_log needs a positive target")
            edges = np.exp(np.linspace(np.log(t.min()), np.log(t.max()), k + 1))
            edges[[0, -1]] = t.min(), t.max()
        else:
            edges = np.linspace(t.min(), t.max(), k + 1)
    y = np.searchsorted(edges[1:-1], t, side="right").astype(np.int64)
    return y, edges
