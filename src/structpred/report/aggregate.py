"""Per-split result files -> the tidy table ``task,dataset,method,metric,mean,std,n_splits,reference``
(an experiment may name another key and count column: ``Experiment.key``, ``Experiment.count``).

Only the rows of the selected lambda enter the table. Timing metrics are left out so that
the same config and seed give byte-identical tables; the HTML report shows run times.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from structpred.experiments.registry import get
from structpred.experiments.results import read_results, write_csv
from structpred.report.references import KEY, load_references

log = logging.getLogger(__name__)

TIMING_METRICS = {"seconds"}


def _selected(results: pd.DataFrame) -> pd.DataFrame:
    chosen = results["selected"].astype(str).str.lower() == "true"
    return results[chosen & ~results["metric"].isin(TIMING_METRICS)]


def aggregate(results: pd.DataFrame, references: pd.DataFrame, key=KEY, count: str = "n_splits") -> pd.DataFrame:
    """Mean and sample std (ddof=1; 0 for one run) over splits (or seeds), per row of ``key``,
    with the paper's number beside."""
    key = list(key)
    # an empty key field (Casimir's variant of a plain run) reads back from CSV as NaN: the same
    sel = _selected(results).replace({k: {"": np.nan} for k in key})
    references = references.replace({k: {"": np.nan} for k in key})
    grouped = sel.groupby(key, sort=False, dropna=False)
    table = grouped["value"].agg(
        mean="mean",
        std=lambda v: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0,
        **{count: "count"},
    ).reset_index()
    own_ref = grouped["reference"].first().reset_index()  # e.g. the paper's (d, n, k) in the audit
    table = table.merge(own_ref, on=key, how="left")
    if not references.empty:
        table = table.merge(references, on=key, how="left", suffixes=("", "_paper"))
        table["reference"] = table["reference_paper"].combine_first(table["reference"])
        table = table.drop(columns="reference_paper")
    extra = []
    if sel["detail"].notna().any():
        table = table.merge(grouped["detail"].first().reset_index(), on=key, how="left")
        extra = ["detail"]
    return table[key + ["mean", "std", count, "reference"] + extra]


def aggregate_files(result_paths, references_path, table_path, tests_path) -> pd.DataFrame:
    """Read per-split files, write the tidy table and the test table (both atomically).

    The test table is the experiment's ``tests`` hook applied to the selected rows.
    """
    results = read_results(result_paths)
    experiment = str(results["experiment"].iloc[0]) if len(results) else Path(table_path).stem
    spec = get(experiment)
    refs = load_references(references_path, spec.references_of or experiment, spec.key)
    table = aggregate(results, refs, spec.key, spec.count)
    write_csv(table, table_path)
    write_csv(spec.tests(_selected(results)), tests_path)
    log.info("%s: %d table rows from %d result files", experiment, len(table), len(result_paths))
    return table
