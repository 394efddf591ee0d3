"""Selected hyper-parameters against their grids: one generic grid-edge check for every table.

A value chosen at the edge of its search grid says the optimum may lie outside it, so the
table's number is a bound, not a result. Every job records what it selected: lambda in the
``lam`` column of its selected rows, any other hyper-parameter as a row whose ``metric`` is the
parameter's name (e.g. QS robust's ``sigma`` and ``cauchy_scale``). The grid of a parameter is
the one the experiment declares (:meth:`Experiment.grids`), else, for lambda, the lambdas the
job's rows hold (an M4N job writes a row per lambda of its grid).

:func:`selection_table` gives one row per (table group, parameter, scope): ``scope`` names the
metrics a lambda was chosen for when the choice differs between them (AGM picks one lambda per
loss), else it is empty. ``n_at_min`` / ``n_at_max`` count the runs (splits, repetitions; one
for an experiment whose ``single_selection`` reuses one choice for every split) whose choice is
the grid's smallest / largest value. A grid of one value selects nothing and gets no row.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

COLUMNS = ["param", "scope", "grid_min", "grid_max", "grid_size", "n_runs", "n_at_min", "n_at_max", "chosen"]
TIMING = {"seconds"}


def _chosen_text(values) -> str:
    """``value:count`` of each distinct choice, by value ("0.0009765625:14")."""
    counts = pd.Series(values).value_counts().sort_index()
    return " ".join(f"{v:.10g}:{n}" for v, n in counts.items())


def _row(param: str, scope: str, values, grid, single: bool) -> dict | None:
    grid = sorted({float(g) for g in grid})
    values = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if len(grid) < 2 or not values:
        return None
    if single:
        values = sorted(set(values))
    lo, hi = grid[0], grid[-1]
    at = lambda edge: sum(1 for v in values if math.isclose(v, edge, rel_tol=1e-9, abs_tol=1e-300))  # noqa: E731
    return {"param": param, "scope": scope, "grid_min": lo, "grid_max": hi, "grid_size": len(grid),
            "n_runs": len(values), "n_at_min": at(lo), "n_at_max": at(hi), "chosen": _chosen_text(values)}


def _lam_scopes(chosen: pd.DataFrame) -> list[tuple[str, list]]:
    """``[(scope, lambdas per run)]``: one scope ``""`` when every metric of a run has the same lambda,
    else the metrics grouped by identical choices (their names joined by spaces)."""
    by_split = chosen.groupby("split", sort=False)["lam"]
    if (by_split.nunique(dropna=True) <= 1).all():   # the common case, without the pivot's cost
        return [("", by_split.first().tolist())]
    per_metric = chosen.pivot_table(index="split", columns="metric", values="lam", aggfunc="first", sort=False)
    if per_metric.nunique(axis=1, dropna=True).max() <= 1:
        return [("", per_metric.bfill(axis=1).iloc[:, 0].tolist())]
    groups: dict[tuple, list[str]] = {}
    for metric in per_metric.columns:
        groups.setdefault(tuple(per_metric[metric].tolist()), []).append(str(metric))
    return [(" ".join(metrics), list(values)) for values, metrics in groups.items()]


def selection_table(results: pd.DataFrame, key, grids_of, single=False) -> pd.DataFrame:
    """Grid-edge counts per group of the table (``key`` without ``metric``), from every result row
    of the jobs; ``grids_of(dataset, method)`` is the experiment's ``{parameter: grid}``;
    ``single``: whether one selection serves every split, or ``single(dataset)`` saying it per dataset."""
    single_of = single if callable(single) else (lambda dataset: single)
    group = [k for k in key if k != "metric"]
    records = []
    if results.empty:
        return pd.DataFrame(columns=group + COLUMNS)
    frame = results.replace({k: {"": np.nan} for k in group})
    chosen_rows = frame[(frame["selected"].astype(str).str.lower() == "true") & ~frame["metric"].isin(TIMING)]
    for values, rows in frame.groupby(group, sort=False, dropna=False):
        values = values if isinstance(values, tuple) else (values,)
        ident = dict(zip(group, values))
        grids = dict(grids_of(str(rows["dataset"].iloc[0]), str(rows["method"].iloc[0])))
        single = single_of(str(rows["dataset"].iloc[0]))
        mine = chosen_rows.loc[chosen_rows.index.intersection(rows.index)]
        lam_grid = grids.pop("lam", None)
        if lam_grid is None:
            lam_grid = rows["lam"].dropna().unique().tolist()
        if mine["lam"].notna().any():
            for scope, lams in _lam_scopes(mine[mine["lam"].notna()]):
                rec = _row("lam", scope, lams, lam_grid, single)
                if rec:
                    records.append({**ident, **rec})
        for param, grid in grids.items():
            rec = _row(param, "", rows.loc[rows["metric"] == param, "value"].tolist(), grid, single)
            if rec:
                records.append({**ident, **rec})
    return pd.DataFrame.from_records(records, columns=group + COLUMNS)


def edge_notes(selection: pd.DataFrame, where: dict | None = None) -> list[str]:
    """One line per selection at a grid edge (restricted to the rows matching ``where``), e.g.
    ``letter CRF: lam at the grid's smallest value 0.0009765625 in 14 of 14 runs``."""
    if selection is None or selection.empty:
        return []
    rows = selection
    for k, v in (where or {}).items():
        if k in rows:
            rows = rows[rows[k].astype(str) == str(v)]
    notes = []
    ident_cols = [c for c in rows.columns if c not in COLUMNS and c not in ("task",)]
    for _, r in rows.iterrows():
        who = " ".join(str(r[c]) for c in ident_cols if pd.notna(r[c]) and str(r[c]) != "")
        scope = f" (for {r['scope']})" if pd.notna(r["scope"]) and str(r["scope"]) else ""
        for count, side, edge in ((r["n_at_min"], "smallest", r["grid_min"]), (r["n_at_max"], "largest", r["grid_max"])):
            if int(count) > 0:
                end = " (no regularisation: the grid's natural end)" if edge == 0 and r["param"] == "lam" else ""
                notes.append(f"{who}: {r['param']}{scope} at the grid's {side} value {edge:.4g}{end} "
                             f"in {int(count)} of {int(r['n_runs'])} runs")
    return notes
