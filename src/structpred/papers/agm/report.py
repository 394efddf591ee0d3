"""Report hooks of AGM Table 1 (emotion intensity): the paper's layout with bold cells, a figure."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from structpred.tables.figures import legend_outside, method_colour, paper_marker, save_figure, subplots
from structpred.tables.cells import bold_of, cell, convergence_note, fmt, paper_note

#: AGM Table 1's losses in the paper's row order: metric -> label
EMOTION_LOSSES = {
    "zero_one": "zero-one, unweighted",
    "absolute": "absolute, unweighted",
    "squared": "squared, unweighted",
    "weighted_zero_one": "zero-one, weighted",
    "weighted_absolute": "absolute, weighted",
    "weighted_squared": "squared, weighted",
}
EMOTION_METHODS = ("AGM", "CRF", "SSVM", "M4N", "AGM-SPMP")  # the paper's columns, then our extra ones
#: what each extra column is (printed below the table)
EXTRA_COLUMNS = {
    "M4N": "trained on the same max-min surrogate as AGM, by GBCFW",
    "AGM-SPMP": "AGM with each game solved approximately by SP-MP (warm started) instead of exactly",
}


#: the node-wise pooled variants (the reference code's second number): metric -> label
NODEWISE_LOSSES = {f"{m}_nodewise": label for m, label in EMOTION_LOSSES.items()}


def render_emotion(table: pd.DataFrame, tests: pd.DataFrame) -> str:
    """Paper layout of AGM Table 1: a row per loss, a column per method, then the average and
    the number of bold cells; bold = best or not significantly worse (the ``bold`` column of
    :func:`structpred.tables.significance.best_tests`).  The node-wise pooled losses, when
    recorded, follow in a second table of the same layout."""
    bolds = bold_of(tests)
    out = [_loss_table(table, bolds, EMOTION_LOSSES)]
    if table["metric"].isin(list(NODEWISE_LOSSES)).any():
        out.append("<p>The same losses pooled over all test frames, <i>sum_i sum_t w_t l_it / sum_i sum_t w_t</i> "
                   "(the reference code's node-wise number; the paper's table is the mean over sequences above):</p>")
        out.append(_loss_table(table, bolds, NODEWISE_LOSSES))
    methods = set(table["method"])
    for m, what in EXTRA_COLUMNS.items():
        if m in methods:
            out.append(f"<p>{html.escape(m)} is an extra column (not in the paper): {html.escape(what)}.</p>")
    return "\n".join(x for x in out if x)


def _loss_table(table: pd.DataFrame, bolds: dict, losses: dict) -> str:
    data = table[table["metric"].isin(list(losses))]
    out = []
    for (task, dataset), part in data.groupby(["task", "dataset"], sort=False):
        present = list(dict.fromkeys(part["method"]))
        methods = [m for m in EMOTION_METHODS if m in present] + [m for m in present if m not in EMOTION_METHODS]
        by = part.set_index(["metric", "method"])
        out.append(f"<table><tr><th class=l>loss ({html.escape(str(dataset))})</th>"
                   + "".join(f"<th>{html.escape(m)}</th>" for m in methods) + "</tr>")
        for metric, label in losses.items():
            cells = "".join(
                cell(by.loc[(metric, m)], bold=bolds.get((task, dataset, metric, m), False))
                if (metric, m) in by.index else "<td>–</td>" for m in methods)
            out.append(f"<tr><td class=l>{label}</td>{cells}</tr>")
        averages, counts = [], []
        for m in methods:
            rows = [by.loc[(metric, m)] for metric in losses if (metric, m) in by.index]
            if len(rows) < len(losses):
                averages.append("<td>–</td>")
            else:
                mean = float(np.mean([r["mean"] for r in rows]))
                refs = [r["reference"] for r in rows]
                paper = float(np.mean(refs)) if all(pd.notna(r) for r in refs) else None
                averages.append(f"<td>{fmt(mean)}{paper_note(mean, paper)}</td>")
            flags = [bolds[(task, dataset, metric, m)] for metric in losses if (task, dataset, metric, m) in bolds]
            counts.append(f"<td>{sum(flags)}</td>" if flags else "<td>–</td>")
        out.append(f"<tr><td class=l>average</td>{''.join(averages)}</tr>")
        out.append(f"<tr><td class=l># bold</td>{''.join(counts)}</tr>")
        out.append("</table>")
    return "\n".join(out)


def emotion_figure(table: pd.DataFrame, path) -> None:
    """AGM Table 1: grouped bars per loss (paper's row order), mean ± std over splits per method,
    the paper's value as an open diamond on the AGM / CRF / SSVM bars; the legend above."""
    losses = list(EMOTION_LOSSES)
    data = table[table["metric"].isin(losses)]
    present = list(dict.fromkeys(data["method"]))
    methods = [m for m in EMOTION_METHODS if m in present] + [m for m in present if m not in EMOTION_METHODS]
    fig, ax = subplots(figsize=(9.2, 4), layout="constrained")
    width = 0.8 / max(len(methods), 1)
    for j, method in enumerate(methods):
        rows = data[data["method"] == method].drop_duplicates("metric").set_index("metric").reindex(losses)
        x = np.arange(len(losses)) + (j - (len(methods) - 1) / 2) * width
        ax.bar(x, rows["mean"], width, yerr=rows["std"], label=method, capsize=2, color=method_colour(method, j),
               error_kw={"ecolor": "#333", "elinewidth": 0.9})
        if rows["reference"].notna().any():
            paper_marker(ax, x, rows["reference"], size=28)
    ax.set_xticks(np.arange(len(losses)), [EMOTION_LOSSES[m] for m in losses], rotation=15, ha="right")
    ax.set_ylabel("average test loss")
    datasets = ", ".join(str(d) for d in dict.fromkeys(data["dataset"]))
    ax.set_title(f"facial emotion intensity ({datasets}): mean ± std over splits")
    legend_outside(fig)
    save_figure(fig, path)


def render_emotion_converged(table: pd.DataFrame, tests: pd.DataFrame, budget: pd.DataFrame | None,
                             budget_tests: pd.DataFrame | None) -> str:
    """AGM Table 1 at certified convergence beside the paper's budget (``budget``: ``agm_emotion``'s
    table, ``None`` when the report lacks it): a row per loss, per method the test loss after the
    budget and after convergence (bold: best or not significantly worse, each under its own
    tests) with the selected fits' mean relative gap and passes."""
    def rows_of(t):
        return {} if t is None else {(r.metric, r.method): r for r in t.itertuples()}

    now, old = rows_of(table), rows_of(budget)
    bolds, old_bolds = bold_of(tests), bold_of(budget_tests) if budget_tests is not None else {}
    present = list(dict.fromkeys(table.loc[table["metric"].isin(list(EMOTION_LOSSES)), "method"]))
    methods = [m for m in EMOTION_METHODS if m in present] + [m for m in present if m not in EMOTION_METHODS]
    head = "".join(f"<th>{html.escape(m)}<br>budget</th><th>{html.escape(m)}<br>converged</th>" for m in methods)
    out = [f"<table><tr><th class=l>loss</th>{head}</tr>"]
    for metric, label in EMOTION_LOSSES.items():
        cells = []
        for m in methods:
            key = (metric, m)
            b = old.get(key)
            cells.append(f"<td>{fmt(b.mean)}</td>" if b is None or not old_bolds.get((b.task, b.dataset, metric, m))
                         else f"<td><b>{fmt(b.mean)}</b></td>")
            if key not in now:
                cells.append("<td>–</td>")
                continue
            r = now[key]
            gap, passes = (now.get((f"{metric}_{kind}", m)) for kind in ("rel_gap", "passes"))
            note = convergence_note(None if gap is None else gap.mean, None if passes is None else passes.mean)
            value = f"{fmt(r.mean)} ± {fmt(r.std)}"
            if bolds.get((r.task, r.dataset, metric, m)):
                value = f"<b>{value}</b>"
            cells.append(f"<td>{value}{note}</td>")
        out.append(f"<tr><td class=l>{label}</td>{''.join(cells)}</tr>")
    out.append("</table>")
    out.append("<p>AGM's objective is minimised here by GBCFW on its exact game (the dual gives the certified "
               "gap; AdaGrad, the budget column's solver, has none).</p>")
    return "\n".join(out)
