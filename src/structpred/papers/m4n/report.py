"""Report hooks of M4N Tables 1 and 2: HTML tables in the paper's layout, figures, test pairs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from structpred.errors import ConfigError
from structpred.tables.figures import MAX_WIDTH_IN, legend_outside, log_ticks, method_colour, paper_marker, save_figure, subplots
from structpred.tables.cells import cell, convergence_note, fmt


def m4n_pairs(methods) -> list[tuple[str, str]]:
    """Table 1's tests: M4N against M3N and against the CRF, where present."""
    methods = set(methods)
    return [("M4N", other) for other in ("M3N", "CRF") if "M4N" in methods and other in methods]


def warm_cold_pairs(configurations: dict[str, tuple[int, bool]]):
    """Table 2's tests: each warm-started configuration against its cold twin (the same K), as a
    function of the methods present; ``configurations`` maps a method to its (K, warm start)."""
    cold = {k: m for m, (k, warm) in configurations.items() if not warm}

    def pairs(methods) -> list[tuple[str, str]]:
        methods = list(dict.fromkeys(methods))
        return [(m, cold[configurations[m][0]]) for m in methods
                if m in configurations and configurations[m][1] and cold.get(configurations[m][0]) in methods]
    return pairs


def _with_k_and_start(table: pd.DataFrame, configurations: dict[str, tuple[int, bool]]) -> pd.DataFrame:
    """``table`` with each method's K and warm start (``configurations``) as columns."""
    unknown = sorted(set(table["method"]) - set(configurations))
    if unknown:
        raise ConfigError(f"Table 2 rows of methods the config does not define: {', '.join(unknown)}")
    return table.assign(K=[configurations[m][0] for m in table["method"]],
                        start=["warm" if configurations[m][1] else "cold" for m in table["method"]])


def render_losses(table: pd.DataFrame, tests: pd.DataFrame, percent_tasks=frozenset()) -> str:
    """Paper layout of M4N Table 1: a row per dataset, a column per method; lower of M3N/M4N bold."""
    data = table[table["metric"] == "test_loss"]
    methods = list(dict.fromkeys(data["method"]))
    head = "".join(f"<th>{m}</th>" for m in methods)
    out = [f"<table><tr><th class=l>task</th><th class=l>dataset</th>{head}"
           "<th>M4N vs M3N<br>Wilcoxon p</th></tr>"]
    for (task, dataset), part in data.groupby(["task", "dataset"], sort=False):
        by = part.set_index("method")
        pair = [m for m in ("M3N", "M4N") if m in by.index]
        best = by.loc[pair, "mean"].idxmin() if pair else None
        cells = "".join(cell(by.loc[m], task in percent_tasks, bold=m == best) if m in by.index else "<td>–</td>"
                        for m in methods)
        out.append(f"<tr><td class=l>{task}</td><td class=l>{dataset}</td>{cells}"
                   f"<td>{_p_value(tests, task, dataset)}</td></tr>")
    return "\n".join(out + ["</table>"])


def _p_value(tests: pd.DataFrame | None, task: str, dataset: str) -> str:
    """M4N vs M3N's Wilcoxon p of one row of a Table 1 test table (``–`` if absent)."""
    if tests is None or tests.empty:
        return "–"
    row = tests[(tests["task"] == task) & (tests["dataset"] == dataset)
                & (tests["method_a"] == "M4N") & (tests["method_b"] == "M3N")]
    return f"{row['p_value'].iloc[0]:.3f}" if len(row) else "–"


def render_converged(table: pd.DataFrame, tests: pd.DataFrame, budget: pd.DataFrame | None,
                     budget_tests: pd.DataFrame | None, percent_tasks=frozenset()) -> str:
    """Table 1 at certified convergence beside the paper's budget (``budget``: ``m4n_table1``'s
    table, ``None`` when the report lacks it): per dataset and method the test loss after the
    budget and after convergence, with the selected fits' mean relative gap and passes; M4N vs
    M3N's Wilcoxon p under each."""
    def rows_of(t, metric):
        return {} if t is None else {(r.task, r.dataset, r.method): r for r in t[t["metric"] == metric].itertuples()}

    loss, old = rows_of(table, "test_loss"), rows_of(budget, "test_loss")
    rel, passes = rows_of(table, "rel_gap"), rows_of(table, "passes")
    methods = list(dict.fromkeys(table.loc[table["metric"] == "test_loss", "method"]))
    head = "".join(f"<th>{m}<br>budget</th><th>{m}<br>converged</th>" for m in methods)
    out = [f"<table><tr><th class=l>task</th><th class=l>dataset</th>{head}"
           "<th>M4N vs M3N p<br>budget</th><th>M4N vs M3N p<br>converged</th></tr>"]
    for task, dataset in dict.fromkeys((k[0], k[1]) for k in loss):
        percent = task in percent_tasks
        cells = []
        for m in methods:
            key = (task, dataset, m)
            before = old.get(key)
            cells.append(f"<td>{fmt(before.mean, percent)}</td>" if before is not None else "<td>–</td>")
            if key not in loss:
                cells.append("<td>–</td>")
                continue
            note = convergence_note(rel[key].mean if key in rel else None, passes[key].mean if key in passes else None)
            cells.append(f"<td>{fmt(loss[key].mean, percent)} ± {fmt(loss[key].std, percent)}{note}</td>")
        out.append(f"<tr><td class=l>{task}</td><td class=l>{dataset}</td>{''.join(cells)}"
                   f"<td>{_p_value(budget_tests, task, dataset)}</td><td>{_p_value(tests, task, dataset)}</td></tr>")
    return "\n".join(out + ["</table>"])


def render_warm_start(table: pd.DataFrame, tests: pd.DataFrame, configurations: dict[str, tuple[int, bool]]) -> str:
    """Paper layout of M4N Table 2: rows (dataset, warm start), columns K, cells loss / gap."""
    t = _with_k_and_start(table, configurations)
    ks = sorted(t["K"].unique())
    out = ["<table><tr><th class=l>dataset</th><th class=l>warm start</th>"
           + "".join(f"<th>K={k}</th>" for k in ks) + "</tr>"]
    for (dataset, start), part in t.groupby(["dataset", "start"], sort=False):
        cells = []
        for k in ks:
            rows = part[part["K"] == k].set_index("metric")
            if rows.empty:
                cells.append("<td>–</td>")
                continue
            loss, gap = rows.loc["test_loss"], rows.loc["oracle_gap"]
            paper = ""
            if pd.notna(loss["reference"]):
                paper = f"<br><span class=paper>paper {loss['reference']:.2f} / {gap['reference']:.2f}</span>"
            cells.append(f"<td>{loss['mean']:.3f} / {gap['mean']:.3f}{paper}</td>")
        label = "yes" if start == "warm" else "no"
        out.append(f"<tr><td class=l>{dataset}</td><td class=l>{label}</td>{''.join(cells)}</tr>")
    return "\n".join(out + ["</table>"])


def losses_figure(table: pd.DataFrame, path) -> None:
    """Grouped bars: mean test loss ± std per dataset and method, the paper's value as an open
    diamond; a panel per task, two to a row, one legend above them."""
    data = table[table["metric"] == "test_loss"]
    tasks = list(dict.fromkeys(data["task"]))
    cols = min(2, len(tasks))
    rows = -(-len(tasks) // cols)
    fig, axes = subplots(rows, cols, figsize=(MAX_WIDTH_IN if cols > 1 else 5.6, 3.0 * rows + 0.4),
                         squeeze=False, layout="constrained")
    for ax, task in zip(axes.flat, tasks):
        part = data[data["task"] == task]
        datasets, methods = list(dict.fromkeys(part["dataset"])), list(dict.fromkeys(part["method"]))
        width = 0.8 / len(methods)
        for j, method in enumerate(methods):
            rows_ = part[part["method"] == method].set_index("dataset").reindex(datasets)
            x = np.arange(len(datasets)) + (j - (len(methods) - 1) / 2) * width
            ax.bar(x, rows_["mean"], width, yerr=rows_["std"], label=method, capsize=2,
                   color=method_colour(method, j), error_kw={"ecolor": "#333", "elinewidth": 0.9})
            if rows_["reference"].notna().any():
                paper_marker(ax, x, rows_["reference"])
        ax.set_xticks(np.arange(len(datasets)), datasets, rotation=25 if len(datasets) > 3 else 0,
                      ha="right" if len(datasets) > 3 else "center")
        ax.set_title(f"task {task}: test loss, mean ± std over splits")
    for ax in axes.flat[len(tasks):]:
        ax.set_visible(False)
    legend_outside(fig, axes.flat[:len(tasks)])
    save_figure(fig, path)


def warm_start_figure(table: pd.DataFrame, path, configurations: dict[str, tuple[int, bool]]) -> None:
    """Table 2: test loss and average oracle gap against SP-MP iterations K, warm vs cold (mean ±
    std over splits), the paper's values as open diamonds on a dotted line; one legend above."""
    rows = _with_k_and_start(table, configurations)
    datasets = list(dict.fromkeys(rows["dataset"]))
    fig, axes = subplots(2, len(datasets), figsize=(min(4.4 * len(datasets), MAX_WIDTH_IN), 5.8),
                         squeeze=False, layout="constrained")
    ks = sorted(rows["K"].unique())
    for j, dataset in enumerate(datasets):
        for i, metric in enumerate(["test_loss", "oracle_gap"]):
            ax = axes[i, j]
            for start, style in [("warm", "-o"), ("cold", "-s")]:
                part = rows[(rows["dataset"] == dataset) & (rows["metric"] == metric)
                            & (rows["start"] == start)].sort_values("K")
                line = ax.errorbar(part["K"], part["mean"], yerr=part["std"], fmt=style,
                                   label=f"ours, {start} start", capsize=2, ms=4)
                if part["reference"].notna().any():
                    ax.plot(part["K"], part["reference"], ":", color=line[0].get_color(), lw=1)
                    paper_marker(ax, part["K"], part["reference"], label=f"paper, {start} start",
                                 edgecolor=line[0].get_color())
            ax.set_xscale("log")
            ax.set_xticks(ks, [str(k) for k in ks])
            ax.minorticks_off()
            if metric == "oracle_gap":
                ax.set_yscale("log")
                log_ticks(ax)
            ax.set_xlabel("SP-MP iterations K")
            ax.set_title(f"{dataset}: {metric.replace('_', ' ')}")
    legend_outside(fig, ncol=4)
    save_figure(fig, path)
