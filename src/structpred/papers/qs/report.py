"""Report hooks of the QS (NeurIPS 2016) tables: a grid of cells (rows x methods) and the
robust-regression figure."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from structpred.tables.figures import legend_outside, log_ticks, method_colour, method_colours, paper_marker, save_figure, subplots
from structpred.tables.cells import bold_of, cell


def render_grid(table: pd.DataFrame, tests: pd.DataFrame, *, rows: str, metric: str | None = None,
                note: str = "") -> str:
    """A row per value of the column ``rows`` (in the table's order), a column per method, cells
    ``mean ± std`` with the paper's number beneath; bold = best or not significantly worse
    (paired Wilcoxon over splits, :func:`structpred.tables.significance.best_tests`).
    ``metric`` keeps only that metric's rows; ``note`` is printed under the table."""
    bolds = bold_of(tests)
    data = table if metric is None else table[table["metric"] == metric]
    methods = list(dict.fromkeys(data["method"]))
    by = data.set_index([rows, "method"], drop=False)
    out = [f"<table><tr><th class=l>{html.escape(rows)}</th>"
           + "".join(f"<th>{html.escape(str(m))}</th>" for m in methods) + "</tr>"]
    for value, part in data.groupby(rows, sort=False):
        cells = []
        for m in methods:
            if (value, m) not in by.index:
                cells.append("<td>–</td>")
                continue
            row = by.loc[(value, m)]
            row = row.iloc[0] if isinstance(row, pd.DataFrame) else row
            cells.append(cell(row, bold=bolds.get((row["task"], row["dataset"], row["metric"], m), False)))
        out.append(f"<tr><td class=l>{html.escape(str(value))}</td>{''.join(cells)}</tr>")
    out.append("</table>")
    if note:
        out.append(f"<p>{html.escape(note)}</p>")
    return "\n".join(out)


def robust_figure(table: pd.DataFrame, path) -> None:
    """Test error against n (log-log), mean ± std band over repetitions per method, the paper's
    values as open diamonds on a dashed line of the method's colour; the legend beside."""
    data = table[table["metric"] == "test_error"].copy()
    data["n"] = data["dataset"].str.removeprefix("n").astype(int)
    fig, ax = subplots(figsize=(6.4, 3.9), layout="constrained")
    for j, (method, part) in enumerate(data.groupby("method", sort=False)):
        part = part.sort_values("n")
        colour = method_colour(method, j)
        ax.plot(part["n"], part["mean"], "o-", color=colour, label=method, ms=4)
        lo = np.maximum(part["mean"] - part["std"], part["mean"] * 1e-2)
        ax.fill_between(part["n"], lo, part["mean"] + part["std"], color=colour, alpha=0.2)
        if part["reference"].notna().any():
            ax.plot(part["n"], part["reference"], "--", color=colour, alpha=0.8, lw=1)
            paper_marker(ax, part["n"], part["reference"], label=f"{method}, paper", edgecolor=colour, size=26)
    ax.set_xscale("log")
    ax.set_yscale("log")
    log_ticks(ax, "x")   # at the sample sizes 50, 100, 200, 500, 1000
    ax.set_xlabel("n (training points)")
    ax.set_ylabel("test error (MSE against f)")
    ax.set_title("robust regression: mean ± std over repetitions")
    legend_outside(fig, where="right center", ncol=1)   # beside the bands, not over them
    save_figure(fig, path)


def metric_bars(table: pd.DataFrame, path, *, title: str, spread: str = "std") -> None:
    """One panel per metric: a bar per method (its mean, with ± the std over splits, or with
    ``spread="sem"`` ± its standard error std / sqrt(n), for rows whose splits are test examples;
    no bar where one value stands), the paper's value as an open diamond; the legend below."""
    metrics = list(dict.fromkeys(table["metric"]))
    fig, axes = subplots(1, len(metrics), figsize=(min(2.9 * len(metrics) + 0.6, 10.2), 3.4), squeeze=False,
                         layout="constrained")
    for ax, metric in zip(axes[0], metrics):
        part = table[table["metric"] == metric]
        x = np.arange(len(part))
        err = part["std"] / np.sqrt(part["n_splits"]) if spread == "sem" else part["std"]
        ax.bar(x, part["mean"], yerr=err.where(part["n_splits"] > 1), capsize=3, color=method_colours(part["method"]),
               error_kw={"ecolor": "#333", "elinewidth": 0.9})
        if part["reference"].notna().any():
            paper_marker(ax, x, part["reference"])
        ax.set_xticks(x, part["method"], rotation=30, ha="right")
        ax.set_title(metric.replace("_", " "))
    legend_outside(fig, where="lower center")
    fig.suptitle(title)
    save_figure(fig, path)


def digit_grid(digits: pd.DataFrame, path, side: int = 16) -> None:
    """Test digits in columns; rows: the truth, then each method's reconstruction (the upper half
    is the input; each lower half, a histogram, is drawn scaled to its own maximum)."""
    half = side * side // 2
    upper = digits[[f"u{j}" for j in range(half)]].to_numpy()
    lower = digits[[f"p{j}" for j in range(half)]].to_numpy()
    kinds = list(dict.fromkeys(digits["kind"]))
    n = int(digits["image"].max()) + 1
    fig, axes = subplots(len(kinds), n, figsize=(0.9 * n, 1.0 * len(kinds)), squeeze=False)
    for r, kind in enumerate(kinds):
        for i, image in enumerate(np.flatnonzero((digits["kind"] == kind).to_numpy())):
            low = lower[image] / max(lower[image].max(), 1e-300)
            ax = axes[r][i]
            ax.imshow(np.concatenate([upper[image], low]).reshape(side, side), cmap="gray_r", vmin=0, vmax=1)
            ax.axhline(side / 2 - 0.5, color="C3", linewidth=0.6)
            ax.set_xticks([])
            ax.set_yticks([])
        axes[r][0].set_ylabel(kind, rotation=0, ha="right", va="center", fontsize=9)
    save_figure(fig, path)
