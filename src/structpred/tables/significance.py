"""Paired comparisons over splits (Wilcoxon signed-rank), e.g. M4N vs M3N per dataset.

Two test tables: :func:`paired_tests` (the method pairs an experiment names) and
:func:`best_tests` (every method against the best one, AGM's "best or not significantly worse"
bold rule, then every other pair of methods, so that any ordering a paper claims can be read
from the table: :mod:`structpred.report.claims`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import wilcoxon

COLUMNS = ["task", "dataset", "metric", "method_a", "method_b", "n_splits",
           "mean_diff", "statistic", "p_value"]
BEST_COLUMNS = COLUMNS + ["bold"]
ALPHA = 0.05  # AGM Table 1: bold = best or not significantly worse at this level


def wilcoxon_pvalue(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Two-sided Wilcoxon signed-rank test of a - b; (nan, 1.0) when all differences are zero."""
    diff = np.asarray(a, float) - np.asarray(b, float)
    if np.allclose(diff, 0.0):
        return float("nan"), 1.0
    res = wilcoxon(a, b, zero_method="zsplit")
    return float(res.statistic), float(res.pvalue)


def _pair_row(by_method: pd.DataFrame, a: str, b: str) -> dict:
    """The test of ``a`` against ``b`` over the splits both have (columns: methods)."""
    both = by_method[[a, b]].dropna()
    stat, p = wilcoxon_pvalue(both[a].to_numpy(), both[b].to_numpy())
    return {"method_a": a, "method_b": b, "n_splits": len(both), "mean_diff": float((both[a] - both[b]).mean()),
            "statistic": stat, "p_value": p}


def paired_tests(selected: pd.DataFrame, method_pairs, metric: str = "test_loss") -> pd.DataFrame:
    """Wilcoxon tests over splits for every (task, dataset) and each pair that
    ``method_pairs(methods)`` names among the methods present, on ``metric``."""
    rows = []
    sel = selected[selected["metric"] == metric]
    for (task, dataset), group in sel.groupby(["task", "dataset"], sort=False):
        by_method = group.pivot_table(index="split", columns="method", values="value")
        for a, b in method_pairs(group["method"]):
            rows.append({"task": task, "dataset": dataset, "metric": metric, **_pair_row(by_method, a, b)})
    return pd.DataFrame.from_records(rows, columns=COLUMNS)


def best_tests(selected: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """Every method against the best one, per (task, dataset, metric).

    The best method has the lowest mean over its splits (ties: the first in the data's
    order). Each other method ``method_a`` is compared with the best ``method_b`` by the
    two-sided Wilcoxon signed-rank test over the splits both have; the best itself gets a
    row against itself with p = 1. ``bold`` = best, or p >= ``alpha`` (not significantly
    worse; AGM's rule). ``mean_diff`` = mean of (method - best) over the paired splits.
    The rows of the remaining pairs (neither one the best; ``method_a`` first in the data's
    order) follow each group's, with ``bold`` empty.
    """
    rows = []
    for (task, dataset, metric), group in selected.groupby(["task", "dataset", "metric"], sort=False):
        table = group.pivot_table(index="split", columns="method", values="value")
        methods = [m for m in dict.fromkeys(group["method"]) if m in table.columns]
        by_method = table[methods]
        best = by_method.mean().idxmin()  # first of equal minima, in the data's method order
        for method in methods:
            both = by_method[list(dict.fromkeys([method, best]))].dropna()
            if method == best:
                stat, p, diff = float("nan"), 1.0, 0.0
            else:
                stat, p = wilcoxon_pvalue(both[method].to_numpy(), both[best].to_numpy())
                diff = float((both[method] - both[best]).mean())
            rows.append({"task": task, "dataset": dataset, "metric": metric, "method_a": method,
                         "method_b": best, "n_splits": len(both), "mean_diff": diff,
                         "statistic": stat, "p_value": p,
                         "bold": bool(method == best or p >= alpha)})
        others = [m for m in methods if m != best]
        for i, a in enumerate(others):
            for b in others[i + 1:]:
                rows.append({**_pair_row(by_method, a, b), "task": task, "dataset": dataset, "metric": metric,
                             "bold": None})
    return pd.DataFrame.from_records(rows, columns=BEST_COLUMNS)
