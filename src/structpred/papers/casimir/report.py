"""Report hooks of Casimir's NER figures: the table of final values, the per-epoch curve table
(mean and std over seeds) and the paper's panels (train objective, log scale, and held-out F1
against oracle calls / n, with a +-1 std band)."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from structpred.papers.casimir.names import METHODS, NER_MEASURES, c_label
from structpred.tables.figures import MAX_WIDTH_IN, legend_outside, log_ticks, method_colour, save_figure, subplots
from structpred.tables.cells import fmt

RUN = ["figure", "c", "method", "variant"]
COLUMNS = {
    "train_objective": "train objective",
    "oracle_calls_per_n": "oracle calls / n",
    "testa_token_f1": "testa token F1",
    "testb_token_f1": "testb token F1",
    "testb_entity_f1": "testb entity F1",
}
PANEL_TITLES = {
    "fig2": "Fig. 2: convex methods",
    "fig5a": "Fig. 5a: level of smoothing",
    "fig5b": "Fig. 5b: smooth vs non-smooth",
    "fig5c": "Fig. 5c: warm start",
    "fig5d": "Fig. 5d: K of the top-K oracle",
}


def _variant(value) -> str:
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def _runs(frame: pd.DataFrame) -> list[tuple]:
    """``(c, method, variant)`` of a figure in the paper's order: c descending, methods as
    :data:`METHODS`, variants as configured."""
    order = {m: i for i, m in enumerate(METHODS)}
    runs = list(dict.fromkeys(zip(frame["c"], frame["method"], frame["variant"].map(_variant))))
    return sorted(runs, key=lambda r: (-float(r[0]), order.get(r[1], len(order))))


def render_table(table: pd.DataFrame) -> str:
    """One HTML table per figure: a row per (c, method, variant), mean ± std over seeds of the
    values at the end of the budget; the train objective at w = 0 beside the reference
    code's anchor."""
    out = []
    for figure, part in table.groupby("figure", sort=False):
        by = part.assign(variant=part["variant"].map(_variant)).set_index(["c", "method", "variant", "metric"])
        n = int(part["n_seeds"].max())
        out.append(f"<h3>{html.escape(PANEL_TITLES.get(figure, figure))} ({n} seeds)</h3><table><tr>"
                   "<th class=l>c (lam = c/n)</th><th class=l>method</th><th class=l>variant</th>"
                   + "".join(f"<th>{label}</th>" for label in COLUMNS.values()) + "</tr>")
        for c, method, variant in _runs(part):
            cells = []
            for metric in COLUMNS:
                key = (c, method, variant, metric)
                if key in by.index:
                    row = by.loc[key]
                    cells.append(f"<td>{fmt(row['mean'])} ± {fmt(row['std'])}</td>")
                else:
                    cells.append("<td>–</td>")
            out.append(f"<tr><td class=l>{c_label(c)}</td><td class=l>{html.escape(method)}</td>"
                       f"<td class=l>{html.escape(variant)}</td>{''.join(cells)}</tr>")
        out.append("</table>")
    out.append("<p>Token F1: the authors' code's score, scikit-learn's support-weighted F1 of the token "
               "tags over every tag but O; entity F1: conlleval's chunk-level F1, the 'official CoNLL "
               "metric: the F1 measure excluding the O tags' as §7.1.1 names it. The figures plot the "
               "token F1.</p>")
    start = table[table["metric"] == "initial_train_objective"]
    if len(start):
        ref = start["reference"].dropna()
        anchor = f" (reference code: {ref.iloc[0]:.2f}, the mean training sentence length)" if len(ref) else ""
        out.append(f"<p>Train objective at w = 0: {start['mean'].min():.4f} to {start['mean'].max():.4f}"
                   f"{anchor}.</p>")
    return "\n".join(out)


LINESTYLES = ("-", "--", ":", "-.")


def summary_figure(table: pd.DataFrame, path) -> None:
    """Bars of the final train objective and testb token F1 of each figure's runs, one colour per
    method (as in every figure), each bar's value written at its end; the F1 axis spans the values
    (they differ in the second decimal), the objective's starts at 0."""
    figures = list(dict.fromkeys(table["figure"]))
    heights = [0.23 * len(_runs(table[table["figure"] == f])) + 0.75 for f in figures]
    fig, axes = subplots(len(figures), 2, figsize=(MAX_WIDTH_IN, sum(heights)), squeeze=False,
                         layout="constrained", gridspec_kw={"height_ratios": heights})
    for row, figure in zip(axes, figures):
        part = table[table["figure"] == figure]
        runs = _runs(part)
        labels = [f"c={c_label(c)} {m} {v}".strip() for c, m, v in runs]
        for ax, metric in zip(row, ("train_objective", "testb_token_f1")):
            sel = part[part["metric"] == metric].assign(variant=lambda f: f["variant"].map(_variant))
            sel = sel.set_index(["c", "method", "variant"]).reindex(runs)
            ax.barh(np.arange(len(runs)), sel["mean"], xerr=sel["std"], capsize=2,
                    color=[method_colour(m) for _, m, _ in runs])
            for y, (value, spread) in enumerate(zip(sel["mean"], sel["std"].fillna(0.0))):
                if pd.notna(value):
                    ax.text(value + spread, y, f" {value:.3f}", va="center", fontsize=8)
            ax.set_yticks(np.arange(len(runs)), labels if ax is row[0] else [""] * len(runs), fontsize=8)
            ax.invert_yaxis()
            ax.set_title(f"{PANEL_TITLES.get(figure, figure)}: {COLUMNS[metric]}")
            values = sel["mean"].dropna()
            if metric != "train_objective" and not values.empty:
                ax.set_xlim(max(0.0, values.min() - 0.05), min(1.0, values.max() + 0.03))
            elif not values.empty:
                ax.set_xlim(0.0, 1.2 * (values + sel["std"].fillna(0)).max())
    save_figure(fig, path)


def curve_table(histories: pd.DataFrame) -> pd.DataFrame:
    """Per (figure, c, method, variant, pass): oracle calls / n and each measure's mean and
    sample std over seeds (long format; seconds are left out so that tables are byte-identical)."""
    if histories.empty:
        return pd.DataFrame(columns=RUN + ["pass", "oracle_calls_per_n", "measure", "mean", "std", "n_seeds"])
    frame = histories.assign(variant=histories["variant"].map(_variant))
    measures = [m for m in NER_MEASURES if m in frame]
    long = frame.melt(id_vars=RUN + ["seed", "pass", "oracle_calls_per_n"], value_vars=measures,
                      var_name="measure", value_name="value")
    grouped = long.groupby(RUN + ["pass", "measure"], sort=False)
    out = grouped.agg(oracle_calls_per_n=("oracle_calls_per_n", "mean"), mean=("value", "mean"),
                      std=("value", lambda v: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0),
                      n_seeds=("value", "count")).reset_index()
    out = out[RUN + ["pass", "oracle_calls_per_n", "measure", "mean", "std", "n_seeds"]]
    order = {m: i for i, m in enumerate(METHODS)}
    keys = out.assign(_c=-out["c"].astype(float), _m=out["method"].map(order),
                      _q=out["measure"].map({m: i for i, m in enumerate(NER_MEASURES)}))
    keys = keys.sort_values(["figure", "_c", "_m", "variant", "_q", "pass"], kind="stable")
    return keys[out.columns].reset_index(drop=True)


def band(ax, line: pd.DataFrame, name: str, colour: str, style: str = "-") -> None:
    """One run's curve: its mean over seeds against oracle calls / n, with a +-1 std band."""
    line = line.sort_values("pass")
    x, m, s = line["oracle_calls_per_n"], line["mean"], line["std"]
    ax.plot(x, m, label=name, lw=1.2, color=colour, ls=style)
    ax.fill_between(x, m - s, m + s, color=colour, alpha=0.2, lw=0)


def curve_figure(panel: str, curves: pd.DataFrame, path) -> None:
    """One of the paper's panels: a row per c, the train objective (log scale, a few round ticks)
    and the testb token F1 against oracle calls / n, mean over seeds with a +-1 std band; a
    method's colour is its colour in every figure, its variants (the panel's sweep) differ by line
    style; one legend above the panels.  The paper gives these panels as figures only, with no
    numbers to plot beside ours."""
    part = curves[curves["figure"] == panel].assign(variant=lambda f: f["variant"].map(_variant))
    cs = sorted(dict.fromkeys(part["c"]), key=lambda c: -float(c))
    fig, axes = subplots(max(len(cs), 1), 2, figsize=(MAX_WIDTH_IN, 2.6 * max(len(cs), 1) + 0.5),
                         squeeze=False, layout="constrained")
    for row, c in zip(axes, cs):
        sub = part[part["c"] == c]
        for ax, measure, label in ((row[0], "train_objective", "train objective"),
                                   (row[1], "testb_token_f1", "testb token F1")):
            seen: dict[str, int] = {}
            for (_, method, variant) in _runs(sub):
                line = sub[(sub["method"] == method) & (sub["variant"] == variant) & (sub["measure"] == measure)]
                style = LINESTYLES[seen.setdefault(method, 0) % len(LINESTYLES)]
                seen[method] += 1
                band(ax, line, f"{method} {variant}".strip(), method_colour(method), style)
            if measure == "train_objective":
                ax.set_yscale("log")
                log_ticks(ax)    # 1, 2, 5, 10: never a crowd of minor labels
            else:   # the final F1s differ in the second decimal: zoom on them, the first passes leave the axis
                last = sub[sub["measure"] == measure].sort_values("pass").groupby(["method", "variant"])["mean"].last()
                if not last.empty:
                    ax.set_ylim(max(0.0, last.min() - 0.1), min(1.0, last.max() + 0.03))
            ax.set_xlabel("oracle calls / n")
            ax.set_ylabel(label)
            ax.set_title(f"{PANEL_TITLES.get(panel, panel)}, lam = {c_label(c)}/n")
    legend_outside(fig, axes.flat[:2], ncol=min(5, len(_runs(part))))
    save_figure(fig, path)
