"""Equal-frequency discretisation of a regression target into k ordinal labels.

The ordinal benchmarks of M4N Table 1 (Chu & Ghahramani 2005 protocol) are regression sets
whose target is cut into k bins holding about n/k samples each.
"""

from __future__ import annotations

import numpy as np

from structpred.errors import DataError


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
