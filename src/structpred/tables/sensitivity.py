"""Report hooks shared by the sensitivity tables whose key adds a column of their own to the
paper's (``variant``, ``definition``, ``normalisation``, ...): each row of the paper's table
repeated under every value of that column, the paper's number beside each (the table's
``reference_key``), so that the reader sees which value, if any, brings the cells near the
paper, and none is picked for them."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from structpred.tables.cells import cell
from structpred.tables.figures import method_colour, save_figure, subplots
from structpred.tables.significance import BEST_COLUMNS, best_tests


def tests_by(selected: pd.DataFrame, column: str) -> pd.DataFrame:
    """:func:`~structpred.tables.significance.best_tests` among the methods, separately for each
    value of ``column`` (its value added as a column of the test table)."""
    frames = [best_tests(part).assign(**{column: value})
              for value, part in selected.groupby(column, sort=False, dropna=False)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=BEST_COLUMNS + [column])


def render_by(table: pd.DataFrame, *, rows: list[str], metric: str | None = None, note: str = "",
              percent: bool = False) -> str:
    """A row per combination of the columns ``rows`` (in the table's order), a column per method,
    cells ``mean ± std`` with the paper's number and Δ beneath; ``metric`` keeps only that metric's
    rows; ``note`` is printed under the table."""
    data = table if metric is None else table[table["metric"] == metric]
    methods = list(dict.fromkeys(data["method"]))
    head = "".join(f"<th class=l>{html.escape(r)}</th>" for r in rows)
    out = [f"<table><tr>{head}" + "".join(f"<th>{html.escape(str(m))}</th>" for m in methods) + "</tr>"]
    for values, part in data.groupby(rows, sort=False, dropna=False):
        values = values if isinstance(values, tuple) else (values,)
        by = part.set_index("method")
        cells = [cell(by.loc[m], percent) if m in by.index else "<td>–</td>" for m in methods]
        label = "".join(f"<td class=l>{html.escape(str(v))}</td>" for v in values)
        out.append(f"<tr>{label}{''.join(cells)}</tr>")
    out.append("</table>")
    if note:
        out.append(f"<p>{html.escape(note)}</p>")
    return "\n".join(out)


def figure_by(table: pd.DataFrame, path, *, panel: str, column: str, title: str, ylabel: str,
              metric: str | None = None, log: bool = False, ncols: int = 4) -> None:
    """One panel per value of ``panel`` (``ncols`` a row): each method's mean ± std per value of
    ``column`` (points), the paper's number of the same cell as a cross of the method's colour."""
    data = table if metric is None else table[table["metric"] == metric]
    panels = list(dict.fromkeys(data[panel]))
    cols = min(ncols, len(panels))
    nrows = -(-len(panels) // cols)
    width = max(3.6, 0.45 * data[column].nunique() + 1.6)
    fig, axes = subplots(nrows, cols, figsize=(width * cols, 3.4 * nrows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, name in zip(axes.flat, panels):
        part = data[data[panel] == name]
        values = list(dict.fromkeys(part[column].astype(str)))
        methods = list(dict.fromkeys(part["method"]))
        step = 0.8 / max(len(methods), 1)
        for j, method in enumerate(methods):
            rows = part[part["method"] == method]
            rows = rows.set_index(rows[column].astype(str)).reindex(values)
            x = np.arange(len(values)) + (j - (len(methods) - 1) / 2) * step
            colour = method_colour(method, j)
            ax.errorbar(x, rows["mean"], yerr=rows["std"], fmt="o", color=colour, capsize=2, label=method)
            ax.scatter(x, rows["reference"], marker="x", color=colour, zorder=3)
        ax.set_xticks(np.arange(len(values)), values, rotation=35, ha="right", fontsize=7)
        if log:
            ax.set_yscale("log")
        ax.set_title(str(name), fontsize=9)
        ax.set_ylabel(ylabel, fontsize=8)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(title + " (x: the paper)", fontsize=9)
    save_figure(fig, path)
