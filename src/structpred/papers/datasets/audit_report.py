"""Report hooks of the data audit: the table of parsed (d, n, k) and checksums, the class-balance figure."""

from __future__ import annotations

import html

import matplotlib
import numpy as np
import pandas as pd

from structpred.tables.figures import save_figure, subplots


def render_audit(table: pd.DataFrame, tests: pd.DataFrame) -> str:
    """A row per dataset: parsed (d, n, k), the paper's, checksum status and the audit details."""
    count = lambda v: "–" if pd.isna(v) else str(int(v))  # noqa: E731
    out = ["<table><tr><th class=l>dataset</th><th class=l>task</th><th>d</th><th>n</th><th>k</th>"
           "<th>sha256</th><th class=l>details</th></tr>"]
    for (dataset, task), part in table.groupby(["dataset", "task"], sort=False):
        by = part.set_index("metric")
        cells = []
        for m in ("d", "n", "k"):
            ours, ref = by.loc[m, "mean"], by.loc[m, "reference"]
            flag = "" if pd.isna(ref) or ref == ours else " <span class=diff>≠</span>"
            paper = "" if pd.isna(ref) else f"<br><span class=paper>paper {count(ref)}</span>"
            cells.append(f"<td>{count(ours)}{flag}{paper}</td>")
        ok = "ok" if by.loc["checksum_ok", "mean"] == 1 else "<b>MISMATCH</b>"
        detail = "; ".join(str(v) for v in part["detail"].dropna().unique())
        out.append(f"<tr><td class=l>{dataset}</td><td class=l>{task}</td>{''.join(cells)}"
                   f"<td>{ok}</td><td class='l wrap'>{html.escape(detail)}</td></tr>")
    return "\n".join(out + ["</table>"])


def audit_figure(table: pd.DataFrame, path) -> None:
    """Data audit: class fractions of every labelled dataset, one stacked bar each."""
    counts = table[(table["metric"] == "k") & table["detail"].astype(str).str.startswith("counts=")]
    fig, ax = subplots(figsize=(7, 0.32 * max(len(counts), 3) + 1))
    for i, (_, row) in enumerate(counts.iterrows()):
        balance = np.array(row["detail"].split(";")[0].removeprefix("counts=").split("/"), float)
        frac = balance / balance.sum()
        ax.barh(i, frac, left=np.concatenate([[0], np.cumsum(frac)[:-1]]),
                color=matplotlib.colormaps["tab20"](np.arange(len(frac)) % 20), edgecolor="white", linewidth=0.5)
    ax.set_yticks(np.arange(len(counts)), counts["dataset"])
    ax.invert_yaxis()   # the table's order, top down
    ax.set_xlabel("fraction of examples (labels) per class")
    ax.set_title("class balance as parsed")
    save_figure(fig, path)


