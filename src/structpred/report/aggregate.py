"""Per-split result files -> the tidy table ``task,dataset,method,metric,mean,std,n_splits,reference``.

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

TABLE_COLUMNS = KEY + ["mean", "std", "n_splits", "reference"]
TIMING_METRICS = {"seconds"}


def _selected(results: pd.DataFrame) -> pd.DataFrame:
    chosen = results["selected"].astype(str).str.lower() == "true"
    return results[chosen & ~results["metric"].isin(TIMING_METRICS)]


def aggregate(results: pd.DataFrame, references: pd.DataFrame) -> pd.DataFrame:
    """Mean and sample std (ddof=1; 0 for one split) over splits, with the paper's number beside."""
    sel = _selected(results)
    grouped = sel.groupby(KEY, sort=False)
    table = grouped["value"].agg(
        mean="mean",
        std=lambda v: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0,
        n_splits="count",
    ).reset_index()
    own_ref = grouped["reference"].first().reset_index()  # e.g. the paper's (d, n, k) in the audit
    table = table.merge(own_ref, on=KEY, how="left")
    if not references.empty:
        table = table.merge(references, on=KEY, how="left", suffixes=("", "_paper"))
        table["reference"] = table["reference_paper"].combine_first(table["reference"])
        table = table.drop(columns="reference_paper")
    extra = []
    if sel["detail"].notna().any():
        table = table.merge(grouped["detail"].first().reset_index(), on=KEY, how="left")
        extra = ["detail"]
    return table[TABLE_COLUMNS + extra]


def aggregate_files(result_paths, references_path, table_path, tests_path) -> pd.DataFrame:
    """Read per-split files, write the tidy table and the test table (both atomically).

    The test table is the experiment's ``tests`` hook applied to the selected rows.
    """
    results = read_results(result_paths)
    experiment = str(results["experiment"].iloc[0]) if len(results) else Path(table_path).stem
    table = aggregate(results, load_references(references_path, experiment))
    write_csv(table, table_path)
    write_csv(get(experiment).tests(_selected(results)), tests_path)
    log.info("%s: %d table rows from %d result files", experiment, len(table), len(result_paths))
    return table
