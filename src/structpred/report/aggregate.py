"""Per-split result files -> the tidy table ``task,dataset,method,metric,mean,std,n_splits,reference``
(an experiment may name another key and count column: ``Experiment.key``, ``Experiment.count``).

Only the rows of the selected lambda enter the table. Timing metrics are left out so that
the same config and seed give byte-identical tables; the HTML report shows run times.

:func:`update_files` recomputes some (task, dataset) groups of a committed table from their
result files (e.g. a rerun archived in ``runs/``) and leaves every other row's bytes alone.
"""

from __future__ import annotations

import io
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from structpred.errors import ConfigError
from structpred.papers.registry import get
from structpred.tables.results import csv_text, read_results, write_csv
from structpred.report.references import KEY, load_references
from structpred.report.selection import selection_table

log = logging.getLogger(__name__)

TIMING_METRICS = {"seconds"}


def _selected(results: pd.DataFrame) -> pd.DataFrame:
    chosen = results["selected"].astype(str).str.lower() == "true"
    return results[chosen & ~results["metric"].isin(TIMING_METRICS)]


def optimistic_rows(results: pd.DataFrame, metric: str) -> pd.DataFrame:
    """``metric``'s rows under the selection rule of selecting on it (the M4N authors' table rule,
    ``plot/plot_multiclass_cv2.py:44,97-111``): per (task, dataset, method), the lambda with the lowest
    mean of ``metric`` over the runs that have every lambda of the group (ties: the first in grid
    order), each run's row at that lambda relabelled ``<metric>_optimistic`` and marked selected.
    Selecting on test data is optimistic: these rows sit beside the validation selection, never in
    its place."""
    rows = results[results["metric"] == metric]
    out = []
    for _, group in rows.groupby(["task", "dataset", "method"], sort=False):
        lams = list(dict.fromkeys(group["lam"]))
        runs = group.groupby("split")["lam"].agg(set)
        complete = runs[runs.map(lambda s: s >= set(lams))].index
        kept = group[group["split"].isin(complete)]
        if kept.empty:
            continue
        means = kept.groupby("lam", sort=False)["value"].mean()
        best = min(lams, key=lambda lam: (means[lam], lams.index(lam)))
        out.append(kept[kept["lam"] == best].assign(metric=f"{metric}_optimistic", selected=True))
    return pd.concat(out, ignore_index=True) if out else rows.iloc[:0]


def aggregate(results: pd.DataFrame, references: pd.DataFrame, key=KEY, count: str = "n_splits") -> pd.DataFrame:
    """Mean and sample std (ddof=1; 0 for one run) over splits (or seeds), per row of ``key``,
    with the paper's number beside (matched on the columns of ``key`` the references have:
    ``Experiment.reference_key``)."""
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
        on = [k for k in key if k in references.columns]
        table = table.merge(references, on=on, how="left", suffixes=("", "_paper"))
        table["reference"] = table["reference_paper"].combine_first(table["reference"])
        table = table.drop(columns="reference_paper")
    extra = []
    if sel["detail"].notna().any():
        table = table.merge(grouped["detail"].first().reset_index(), on=key, how="left")
        extra = ["detail"]
    return table[key + ["mean", "std", count, "reference"] + extra]


def _table_and_tests(experiment: str, results: pd.DataFrame, references_path,
                     config: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The tidy table (paper numbers beside) and the test table of ``experiment``'s results."""
    spec = get(experiment)
    refs = load_references(references_path, spec.references_of or experiment, spec.reference_key or spec.key)
    tests = spec.tests(_selected(results), config)
    metric = spec.optimistic_metric
    if metric is None:
        return aggregate(results, refs, spec.key, spec.count), tests
    results = pd.concat([results, optimistic_rows(results, metric)], ignore_index=True)
    table = aggregate(results, refs, spec.key, spec.count)
    # the optimistic rows sit beside the paper's number of their metric
    other = [k for k in spec.key if k != "metric"]
    paper = table[table["metric"] == metric].set_index(other)["reference"]
    opt = table["metric"] == f"{metric}_optimistic"
    table.loc[opt, "reference"] = [paper.get(tuple(r), np.nan) for r in table.loc[opt, other].itertuples(index=False)]
    return table, tests


def selections(experiment: str, results: pd.DataFrame, config: dict) -> pd.DataFrame:
    """The grid-edge table of ``experiment``'s results (:mod:`structpred.report.selection`), its
    grids from ``config``."""
    spec = get(experiment)
    return selection_table(results, spec.key, lambda dataset, method: spec.grids(config, dataset, method),
                           lambda dataset: spec.selects_once(config, dataset))


def aggregate_files(result_paths, references_path, table_path, tests_path, selection_path=None,
                    config: dict | None = None) -> pd.DataFrame:
    """Read per-split files, write the tidy table and the test table (both atomically), and, with
    ``selection_path``, the grid-edge table of the selected hyper-parameters (grids and the
    methods' settings from ``config``).

    The test table is the experiment's ``tests`` hook applied to the selected rows.
    """
    results = read_results(result_paths)
    experiment = str(results["experiment"].iloc[0]) if len(results) else Path(table_path).stem
    config = config or {}
    table, tests = _table_and_tests(experiment, results, references_path, config)
    write_csv(table, table_path)
    write_csv(tests, tests_path)
    if selection_path is not None:
        write_csv(selections(experiment, results, config), selection_path)
    log.info("%s: %d table rows from %d result files", experiment, len(table), len(result_paths))
    return table


GROUP = ["task", "dataset"]  # the unit update_files recomputes: every method, row and test of it


def _as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as the strings :func:`write_csv` writes (so old and new rows concatenate as text)."""
    return pd.read_csv(io.StringIO(csv_text(frame)), dtype=str, keep_default_na=False)


def _splice(old: pd.DataFrame, new: pd.DataFrame, groups: set) -> pd.DataFrame:
    """``old`` with the rows of ``groups`` replaced by ``new`` (all text), put where the first
    replaced row was (at the end if ``old`` had none)."""
    hit = [tuple(r) in groups for r in old[GROUP].itertuples(index=False)]
    at = hit.index(True) if any(hit) else len(old)
    keep = old[[not h for h in hit]]
    before = int(sum(1 for h in hit[:at] if not h))
    return pd.concat([keep.iloc[:before], new[old.columns], keep.iloc[before:]], ignore_index=True)


def update_files(experiment: str, jobs, result_paths, references_path, table_path, tests_path,
                 selection_path=None, config: dict | None = None) -> list[tuple]:
    """Recompute, in ``experiment``'s table and test table (and, with ``selection_path``, its
    grid-edge table, created if absent), every (task, dataset) group that ``result_paths``
    hold; the other rows keep their bytes.  The files must hold every method
    the table has for each such group (a test compares methods).  Rows are taken in the order
    of ``jobs``, the experiment's ``(dataset, method, split)`` list, as the workflow aggregates
    them, whatever the order of the files: each file's job is read from its path, the workflow's
    ``.../<dataset>/<method>/split<k>.csv`` (the run archive keeps it).  Returns the groups."""
    rank = {(str(d), str(m), int(k)): i for i, (d, m, k) in enumerate(jobs)}
    ranked = []
    for path in map(Path, result_paths):
        split = path.name.removesuffix(".csv").removeprefix("split")
        if not (path.name.startswith("split") and split.isdigit()):
            raise ConfigError(f"{path}: not a result file <dataset>/<method>/split<k>.csv")
        job = (path.parent.parent.name, path.parent.name, int(split))
        if job not in rank:
            raise ConfigError(f"{job[0]} {job[1]} split {job[2]} is not a job of {experiment} in this configuration")
        ranked.append((rank[job], path))
    results = read_results([p for _, p in sorted(ranked, key=lambda t: t[0])])
    if results.empty:
        raise ConfigError("no result rows in the files given")
    names = sorted(set(results["experiment"].astype(str)) - {experiment})
    if names:
        raise ConfigError(f"result files of {', '.join(names)} given to update {experiment}")
    spec = get(experiment)
    if list(spec.key) != ["task", "dataset", "method", "metric"]:
        raise ConfigError(f"{experiment}: update works on tables keyed by task, dataset, method, metric "
                          f"(this one: {', '.join(spec.key)}); rebuild it with the workflow")
    for path in (table_path, tests_path):
        if not Path(path).is_file():
            raise ConfigError(f"no table {path} to update (build it with the workflow first)")
    old = pd.read_csv(table_path, dtype=str, keep_default_na=False)
    old_tests = pd.read_csv(tests_path, dtype=str, keep_default_na=False)
    results[GROUP] = results[GROUP].astype(str)
    groups = list(dict.fromkeys(results[GROUP].itertuples(index=False, name=None)))
    given = results.astype({"method": str}).groupby(GROUP)["method"].agg(set)
    have = old.groupby(GROUP)["method"].agg(set)
    for group in groups:
        lacking = have.get(group, set()) - given[group]
        if lacking:
            raise ConfigError(f"{'/'.join(group)}: the table also has {', '.join(sorted(lacking))}: "
                              f"give those methods' result files too")
    table, tests = (_as_text(f) for f in _table_and_tests(experiment, results, references_path, config or {}))
    for new, before, path in ((table, old, table_path), (tests, old_tests, tests_path)):
        if list(new.columns) != list(before.columns):
            raise ConfigError(f"{path}: its columns ({', '.join(before.columns)}) are not those the results "
                              f"give ({', '.join(new.columns)}); rebuild it with the workflow")
    write_csv(_splice(old, table, set(groups)), table_path)
    write_csv(_splice(old_tests, tests, set(groups)), tests_path)
    if selection_path is not None:
        chosen = _as_text(selections(experiment, results, config or {}))
        before = (pd.read_csv(selection_path, dtype=str, keep_default_na=False) if Path(selection_path).is_file()
                  else chosen.iloc[:0])
        write_csv(_splice(before, chosen, set(groups)), selection_path)
    log.info("%s: %d groups recomputed from %d result files (%s)", experiment, len(groups), len(result_paths),
             ", ".join("/".join(g) for g in groups))
    return groups
