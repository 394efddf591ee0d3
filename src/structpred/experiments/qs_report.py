"""Report hooks of the QS (NeurIPS 2016) tables: a grid of cells (rows x methods) and the
robust-regression figure."""

from __future__ import annotations

import html

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from structpred.report.figures import method_colour, save_figure
from structpred.report.cells import bold_of, cell


def render_grid(table: pd.DataFrame, tests: pd.DataFrame, *, rows: str, metric: str | None = None,
                note: str = "") -> str:
    """A row per value of the column ``rows`` (in the table's order), a column per method, cells
    ``mean ± std`` with the paper's number beneath; bold = best or not significantly worse
    (paired Wilcoxon over splits, :func:`structpred.report.significance.best_tests`).
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
    values dashed with the same colour."""
    data = table[table["metric"] == "test_error"].copy()
    data["n"] = data["dataset"].str.removeprefix("n").astype(int)
    fig, ax = plt.subplots(figsize=(6, 4))
    for j, (method, part) in enumerate(data.groupby("method", sort=False)):
        part = part.sort_values("n")
        colour = method_colour(method, j)
        ax.plot(part["n"], part["mean"], "o-", color=colour, label=method)
        lo = np.maximum(part["mean"] - part["std"], part["mean"] * 1e-2)
        ax.fill_between(part["n"], lo, part["mean"] + part["std"], color=colour, alpha=0.2)
        if part["reference"].notna().any():
            ax.plot(part["n"], part["reference"], "x--", color=colour, alpha=0.8, label=f"{method} (paper)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (training points)")
    ax.set_ylabel("test error (MSE against f)")
    ax.set_title("robust regression: mean ± std over repetitions")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1))   # beside the bands, not over them
    save_figure(fig, path)


def metric_bars(table: pd.DataFrame, path, *, title: str) -> None:
    """One panel per metric: a bar per method (mean ± std over splits), the paper's value as a
    black tick."""
    metrics = list(dict.fromkeys(table["metric"]))
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.2 * len(metrics), 3.2), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        part = table[table["metric"] == metric]
        x = np.arange(len(part))
        ax.bar(x, part["mean"], yerr=part["std"], capsize=3,
               color=[method_colour(m, j) for j, m in enumerate(part["method"])])
        ax.scatter(x, part["reference"], marker="_", s=300, linewidths=2, color="black", zorder=3, label="paper")
        ax.set_xticks(x, part["method"], rotation=30, ha="right")
        ax.set_title(metric)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(title, y=1.04)
    save_figure(fig, path)


def digit_grid(digits: pd.DataFrame, path, side: int = 16) -> None:
    """Test digits in columns; rows: the truth, then each method's reconstruction (the upper half
    is the input; each lower half, a histogram, is drawn scaled to its own maximum)."""
    half = side * side // 2
    upper = digits[[f"u{j}" for j in range(half)]].to_numpy()
    lower = digits[[f"p{j}" for j in range(half)]].to_numpy()
    kinds = list(dict.fromkeys(digits["kind"]))
    n = int(digits["image"].max()) + 1
    fig, axes = plt.subplots(len(kinds), n, figsize=(0.9 * n, 1.0 * len(kinds)), squeeze=False)
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
