"""Matplotlib figures of the report: one PNG per experiment."""

from __future__ import annotations

import logging

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from structpred.io import atomic_path  # noqa: E402
from structpred.report.html import EMOTION_LOSSES, EMOTION_METHODS  # noqa: E402

log = logging.getLogger(__name__)
PNG_METADATA = {"Software": None}  # no version stamp: equal inputs give equal bytes


def _save(fig, path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight", metadata=PNG_METADATA)
    plt.close(fig)


def losses_figure(table: pd.DataFrame, path) -> None:
    """Grouped bars: mean test loss ± std per dataset and method, the paper's value as a black tick."""
    data = table[table["metric"] == "test_loss"]
    tasks = list(dict.fromkeys(data["task"]))
    fig, axes = plt.subplots(1, len(tasks), figsize=(5.5 * len(tasks), 3.8), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        part = data[data["task"] == task]
        datasets, methods = list(dict.fromkeys(part["dataset"])), list(dict.fromkeys(part["method"]))
        width = 0.8 / len(methods)
        for j, method in enumerate(methods):
            rows = part[part["method"] == method].set_index("dataset").reindex(datasets)
            x = np.arange(len(datasets)) + (j - (len(methods) - 1) / 2) * width
            ax.bar(x, rows["mean"], width, yerr=rows["std"], label=method, capsize=2)
            ax.scatter(x, rows["reference"], marker="_", s=120, color="black", zorder=3,
                       label="paper" if j == 0 else None)
        ax.set_xticks(np.arange(len(datasets)), datasets, rotation=30, ha="right")
        ax.set_title(f"task {task}: test loss (mean ± std over splits)")
        ax.legend(fontsize=8)
    _save(fig, path)


def warm_start_figure(table: pd.DataFrame, path) -> None:
    """Table 2: test loss and average oracle gap against SP-MP iterations K, warm vs cold."""
    rows = table.assign(
        K=table["method"].str.extract(r"-K(\d+)-")[0].astype(int),
        start=table["method"].str.extract(r"-(warm|cold)$")[0])
    datasets = list(dict.fromkeys(rows["dataset"]))
    fig, axes = plt.subplots(2, len(datasets), figsize=(4.5 * len(datasets), 6.5), squeeze=False,
                             layout="constrained")
    ks = sorted(rows["K"].unique())
    for j, dataset in enumerate(datasets):
        for i, metric in enumerate(["test_loss", "oracle_gap"]):
            ax = axes[i, j]
            for start, style in [("warm", "-o"), ("cold", "-s")]:
                part = rows[(rows["dataset"] == dataset) & (rows["metric"] == metric)
                            & (rows["start"] == start)].sort_values("K")
                line = ax.errorbar(part["K"], part["mean"], yerr=part["std"], fmt=style,
                                   label=f"ours, {start}", capsize=2)
                ax.plot(part["K"], part["reference"], ":", color=line[0].get_color(),
                        label=f"paper, {start}")
            ax.set_xscale("log")
            ax.set_xticks(ks, [str(k) for k in ks])
            ax.minorticks_off()
            if metric == "oracle_gap":
                ax.set_yscale("log")
            ax.set_xlabel("SP-MP iterations K")
            ax.set_title(f"{dataset}: {metric.replace('_', ' ')}")
            ax.legend(fontsize=7)
    _save(fig, path)


def audit_figure(table: pd.DataFrame, path) -> None:
    """Data audit: class fractions of every labelled dataset, one stacked bar each."""
    counts = table[(table["metric"] == "k") & table["detail"].astype(str).str.startswith("counts=")]
    fig, ax = plt.subplots(figsize=(7, 0.32 * max(len(counts), 3) + 1))
    for i, (_, row) in enumerate(counts.iterrows()):
        balance = np.array(row["detail"].split(";")[0].removeprefix("counts=").split("/"), float)
        frac = balance / balance.sum()
        ax.barh(i, frac, left=np.concatenate([[0], np.cumsum(frac)[:-1]]),
                color=plt.cm.tab20(np.arange(len(frac)) % 20), edgecolor="white", linewidth=0.5)
    ax.set_yticks(np.arange(len(counts)), counts["dataset"])
    ax.set_xlabel("fraction of examples (labels) per class")
    ax.set_title("class balance as parsed")
    _save(fig, path)


def emotion_figure(table: pd.DataFrame, path) -> None:
    """AGM Table 1: grouped bars per loss (paper's row order), mean ± std over splits per method,
    the paper's value as a black tick on the AGM / CRF / SSVM bars."""
    losses = list(EMOTION_LOSSES)
    data = table[table["metric"].isin(losses)]
    present = list(dict.fromkeys(data["method"]))
    methods = [m for m in EMOTION_METHODS if m in present] + [m for m in present if m not in EMOTION_METHODS]
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / max(len(methods), 1)
    for j, method in enumerate(methods):
        rows = data[data["method"] == method].drop_duplicates("metric").set_index("metric").reindex(losses)
        x = np.arange(len(losses)) + (j - (len(methods) - 1) / 2) * width
        ax.bar(x, rows["mean"], width, yerr=rows["std"], label=method, capsize=2)
        ax.scatter(x, rows["reference"], marker="_", s=150, linewidths=2, color="black", zorder=3,
                   label="paper" if j == 0 else None)
    ax.set_xticks(np.arange(len(losses)), [EMOTION_LOSSES[m] for m in losses], rotation=20, ha="right")
    ax.set_ylabel("average test loss")
    datasets = ", ".join(str(d) for d in dict.fromkeys(data["dataset"]))
    ax.set_title(f"facial emotion intensity ({datasets}): mean ± std over splits")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _save(fig, path)


FIGURES = {"datasets": audit_figure, "m4n_table2": warm_start_figure, "agm_emotion": emotion_figure}


def experiment_figure(experiment: str, table_path, path) -> None:
    """Dispatch on the experiment name (:data:`FIGURES`; default :func:`losses_figure`)."""
    table = pd.read_csv(table_path)
    FIGURES.get(experiment, losses_figure)(table, path)
    log.info("wrote %s", path)
