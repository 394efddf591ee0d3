"""The data audit (experiment ``datasets``): every parsed view against the paper's (d, n, k).

Rows per view: metrics ``d``, ``n``, ``k`` (reference = the paper's value where the paper
gives one) and ``checksum_ok`` (1 when every raw file of the source matches the registry),
with the class balance, the raw-file status and the documented deviations in ``detail``; an
ordinal view (one with a regression ``target``) also lists, per binning scheme, the bin counts
and edges that scheme gives (the schemes the M4N tables may choose per dataset).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from structpred.data.acquire import status
from structpred.data.discretize import BINNINGS, bin_target
from structpred.data.parsers import VIEWS
from structpred.data.store import load, summary
from structpred.errors import DataError
from structpred.papers.datasets.audit_report import audit_figure, render_audit
from structpred.papers.registry import Experiment, register
from structpred.tables.significance import COLUMNS


def binning_note(arrays: dict) -> str:
    """Per binning scheme, the counts and edges of the view's target cut into its k labels
    (empty for views without a regression target)."""
    if "target" not in arrays:
        return ""
    k = int(arrays["y"].max()) + 1
    parts = []
    for scheme in BINNINGS:
        try:
            y, edges = bin_target(arrays["target"], k, scheme)
        except DataError as e:
            parts.append(f"{scheme} bins: {e}")
            continue
        counts = "/".join(str(int(c)) for c in np.bincount(y, minlength=k))
        parts.append(f"{scheme} bins counts={counts} edges={'/'.join(f'{e:.4g}' for e in edges)}")
    return "; ".join(parts)


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
    detail = "; ".join(x for x in (balance, files_note, spec.deviations, binning_note(arrays)) if x)
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

    def render(self, table, tests, config):
        return render_audit(table, tests)

    def figure(self, table, path, config):
        audit_figure(table, path)

    def tests(self, selected, config):
        return pd.DataFrame(columns=COLUMNS)
