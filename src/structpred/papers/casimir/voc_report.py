"""Report hooks of Casimir's VOC localisation figure: the table of final values per class, the
per-epoch curve table (mean and std over seeds) and one panel per class (train objective, log
scale, and held-out CorLoc and AP against oracle calls / n, +-1 std band).  Everything drawn
from the synthetic VOC folder says so in its title."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from structpred.papers.casimir.names import METHODS, VOC_MEASURES
from structpred.papers.casimir.report import band
from structpred.tables.figures import method_colour, save_figure, subplots
from structpred.tables.cells import fmt

#: a run of the curve table: the devkit (voc2007 or synthetic), the class, the method
RUN = ["data", "dataset", "method"]
COLUMNS = {
    "train_objective": "train objective",
    "oracle_calls_per_n": "oracle calls / n",
    "held_objective": "held-out objective",
    "held_corloc": "held-out CorLoc",
    "held_ap": "held-out AP",
    "held_mean_iou": "held-out mean IoU",
    "train_corloc": "train CorLoc",
}
PANELS = (("train_objective", "train objective"), ("held_corloc", "held-out CorLoc"), ("held_ap", "held-out AP"))
SYNTHETIC_NOTE = ("These numbers come from the synthetic VOC-format folder (drawn shapes on random backgrounds, "
                  "AlexNet with random weights): they exercise the pipeline and say nothing about the paper's claims.")


def _synthetic(frame: pd.DataFrame) -> bool:
    return "task" in frame and frame["task"].astype(str).str.contains("synthetic").any()


def _methods(frame: pd.DataFrame) -> list[str]:
    order = {m: i for i, m in enumerate(METHODS)}
    return sorted(dict.fromkeys(frame["method"]), key=lambda m: order.get(m, len(order)))


def render_table(table: pd.DataFrame) -> str:
    """One HTML table per class: a row per method, mean ± std over seeds of the values at the
    end of the budget."""
    out = [f"<p><b>{html.escape(SYNTHETIC_NOTE)}</b></p>"] if _synthetic(table) else []
    for cls, part in table.groupby("dataset", sort=False):
        by = part.set_index(["method", "metric"])
        n = int(part["n_seeds"].max())
        out.append(f"<h3>{html.escape(cls)} ({n} seeds)</h3><table><tr><th class=l>method</th>"
                   + "".join(f"<th>{label}</th>" for label in COLUMNS.values()) + "</tr>")
        for method in _methods(part):
            cells = [f"<td>{fmt(by.loc[(method, m), 'mean'])} ± {fmt(by.loc[(method, m), 'std'])}</td>"
                     if (method, m) in by.index else "<td>–</td>" for m in COLUMNS]
            out.append(f"<tr><td class=l>{html.escape(method)}</td>{''.join(cells)}</tr>")
        out.append("</table>")
    return "\n".join(out)


def summary_figure(table: pd.DataFrame, path) -> None:
    """Bars of the final train objective and held-out CorLoc of each class's methods."""
    classes = list(dict.fromkeys(table["dataset"]))
    fig, axes = subplots(len(classes), 2, figsize=(11, 2.8 * len(classes)), squeeze=False)
    tag = " (synthetic data)" if _synthetic(table) else ""
    for row, cls in zip(axes, classes):
        part = table[table["dataset"] == cls]
        methods = _methods(part)
        for ax, metric in zip(row, ("train_objective", "held_corloc")):
            sel = part[part["metric"] == metric].set_index("method").reindex(methods)
            ax.barh(np.arange(len(methods)), sel["mean"], xerr=sel["std"], capsize=2)
            ax.set_yticks(np.arange(len(methods)), methods, fontsize=8)
            ax.invert_yaxis()
            ax.set_title(f"{cls}: {COLUMNS[metric]}{tag}", fontsize=9)
    fig.tight_layout()  # no title over the panel above's axis label
    save_figure(fig, path)


def curve_table(histories: pd.DataFrame) -> pd.DataFrame:
    """Per (class, method, pass): oracle calls / n and each measure's mean and sample std over
    seeds (long format; seconds left out so that tables are byte-identical)."""
    cols = RUN + ["pass", "oracle_calls_per_n", "measure", "mean", "std", "n_seeds"]
    if histories.empty:
        return pd.DataFrame(columns=cols)
    measures = [m for m in VOC_MEASURES if m in histories]
    long = histories.melt(id_vars=RUN + ["seed", "pass", "oracle_calls_per_n"], value_vars=measures,
                          var_name="measure", value_name="value")
    out = long.groupby(RUN + ["pass", "measure"], sort=False).agg(
        oracle_calls_per_n=("oracle_calls_per_n", "mean"), mean=("value", "mean"),
        std=("value", lambda v: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0),
        n_seeds=("value", "count")).reset_index()[cols]
    keys = out.assign(_m=out["method"].map({m: i for i, m in enumerate(METHODS)}),
                      _q=out["measure"].map({m: i for i, m in enumerate(VOC_MEASURES)}))
    return keys.sort_values(["dataset", "_m", "_q", "pass"], kind="stable")[cols].reset_index(drop=True)


def curve_figure(panel: str, curves: pd.DataFrame, path) -> None:
    """The panels of ``panel`` (a class: Figure 3; ``<figure>_<class>``: the non-convex figures):
    train objective (log scale), held-out CorLoc and AP against oracle calls / n, mean over seeds
    with a +-1 std band."""
    part = curves[curves["dataset"] == panel]
    tag = " (synthetic data)" if (part["data"] != "voc2007").any() else ""
    figure, _, cls = panel.partition("_") if panel.startswith("fig") else ("fig3", "", panel)
    fig, axes = subplots(1, 3, figsize=(15, 3.6))
    for ax, (measure, label) in zip(axes, PANELS):
        for i, method in enumerate(_methods(part)):
            band(ax, part[(part["method"] == method) & (part["measure"] == measure)], method, method_colour(method, i))
        if measure == "train_objective":
            ax.set_yscale("log")
        ax.set_xlabel("oracle calls / n")
        ax.set_ylabel(label)
        ax.set_title(f"Fig. {figure[3:]}, {cls}: {label}{tag}", fontsize=9)
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()  # no title over the panel above's axis label
    save_figure(fig, path)
