"""The data audit (experiment ``datasets``): every parsed view against the paper's (d, n, k).

Rows per view: metrics ``d``, ``n``, ``k`` (reference = the paper's value where the paper
gives one) and ``checksum_ok`` (1 when every raw file of the source matches the registry),
with the class balance, the raw-file status and the documented deviations in ``detail``.
"""

from __future__ import annotations

import html
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from structpred.data.acquire import status
from structpred.data.parsers import VIEWS
from structpred.data.store import load, summary
from structpred.experiments.registry import Experiment, register
from structpred.report.figures import save_figure


def audit_rows(view: str, processed_path, *, raw_dir: Path) -> list[dict]:
    """Tidy result rows of the audit of one view (see the module docstring)."""
    spec = VIEWS[view]
    arrays, meta = load(processed_path)
    info = summary(arrays, meta)
    files = status(spec.source, Path(raw_dir) / spec.source)  # the verified cache the run used
    bad = [f"{f['file']}: {f['checksum'] or 'missing'}" for f in files if f["checksum"] != "ok"]
    checksum_ok = not bad
    counts = info.get("counts")
    balance = f"counts={'/'.join(str(int(c)) for c in counts)}" if counts is not None else "no labels"
    files_note = (f"{len(files)} raw files sha256 ok" if checksum_ok
                  else "checksum problems: " + ", ".join(bad))
    detail = "; ".join(x for x in (balance, files_note, spec.deviations) if x)
    paper = spec.paper_dnk or (None, None, None)
    base = {"experiment": "datasets", "task": spec.task, "dataset": view, "method": "audit",
            "split": 0, "selected": True, "detail": detail}
    rows = [{**base, "metric": name, "value": float("nan") if info[name] is None else float(info[name]),
             "reference": ref} for name, ref in zip(("d", "n", "k"), paper)]
    rows.append({**base, "metric": "checksum_ok", "value": float(checksum_ok)})
    return rows


@register
class DatasetsAudit(Experiment):
    """Every parsed view against the paper's (d, n, k), with its checksums (one job per view)."""

    name = "datasets"
    title = "Data audit: parsed (d, n, k) against the papers', class balance, checksums"
    needs = ("view", "stamp")

    def jobs(self, config):
        views = config[self.name]["views"]
        return [(v, "audit", 0) for v in views]

    def settings(self, config, dataset, method):
        return {}

    def run(self, inputs, settings, *, seed, dataset, method, split, threads=1):
        return audit_rows(dataset, inputs["view"], raw_dir=Path(inputs["stamp"]).parent.parent), None

    def render(self, table, tests):
        return render_audit(table, tests)

    def figure(self, table, path):
        audit_figure(table, path)

    def tests(self, selected):
        from structpred.report.significance import COLUMNS

        return pd.DataFrame(columns=COLUMNS)


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
                   f"<td>{ok}</td><td class=l>{html.escape(detail)}</td></tr>")
    return "\n".join(out + ["</table>"])


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
    save_figure(fig, path)


