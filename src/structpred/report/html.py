"""The HTML report ``reports/index.html``: every table (ours beside the paper's) and figure."""

from __future__ import annotations

import html
import json
import logging
import os
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from structpred.experiments.results import read_results
from structpred.io import write_text
from structpred.report import provenance

log = logging.getLogger(__name__)

TITLES = {
    "datasets": "Data audit: parsed (d, n, k) against the papers', class balance, checksums",
    "m4n_table1": "M4N (ICML 2020) Table 1: average test loss over splits",
    "m4n_table2": "M4N (ICML 2020) Table 2: warm start of the max-min oracle (test loss / oracle gap)",
    "agm_emotion": "AGM (NeurIPS 2018) Table 1: facial emotion intensity, average test loss over 20 splits",
}
PERCENT_TASKS = {"mc", "seq", "rnk"}  # the paper prints these losses in percent

CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}th{background:#f3f3f3}
td.l,th.l{text-align:left}.paper{color:#666}.diff{color:#a33;font-size:11px}
pre{background:#f7f7f7;padding:1em;overflow-x:auto;font-size:12px}img{max-width:100%}"""


def _fmt(value, task: str) -> str:
    if value is None or pd.isna(value):
        return "–"
    if task in PERCENT_TASKS:
        return f"{100 * value:.2f}%"
    return f"{value:.3f}"


def _paper_note(mean, reference, task: str) -> str:
    """The paper's number and Δ = ours − paper beneath a cell; empty without a paper number."""
    if reference is None or pd.isna(reference):
        return ""
    delta = mean - reference
    return (f"<br><span class=paper>paper {_fmt(reference, task)}</span>"
            f" <span class=diff>Δ {'+' if delta >= 0 else '−'}{_fmt(abs(delta), task)}</span>")


def _cell(row: pd.Series, task: str, bold: bool = False) -> str:
    ours = f"{_fmt(row['mean'], task)} ± {_fmt(row['std'], task)}"
    if bold:
        ours = f"<b>{ours}</b>"
    return f"<td>{ours}{_paper_note(row['mean'], row.get('reference'), task)}</td>"


def render_losses(table: pd.DataFrame, tests: pd.DataFrame) -> str:
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
        cells = "".join(_cell(by.loc[m], task, bold=m == best) if m in by.index else "<td>–</td>"
                        for m in methods)
        test = tests[(tests["task"] == task) & (tests["dataset"] == dataset)
                     & (tests["method_a"] == "M4N") & (tests["method_b"] == "M3N")]
        p = f"{test['p_value'].iloc[0]:.3f}" if len(test) else "–"
        out.append(f"<tr><td class=l>{task}</td><td class=l>{dataset}</td>{cells}<td>{p}</td></tr>")
    return "\n".join(out + ["</table>"])


def render_warm_start(table: pd.DataFrame, tests: pd.DataFrame) -> str:
    """Paper layout of M4N Table 2: rows (dataset, warm start), columns K, cells loss / gap."""
    t = table.assign(K=table["method"].str.extract(r"-K(\d+)-")[0].astype(int),
                     start=table["method"].str.extract(r"-(warm|cold)$")[0])
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


#: AGM Table 1's losses in the paper's row order: metric -> label
EMOTION_LOSSES = {
    "zero_one": "zero-one, unweighted",
    "absolute": "absolute, unweighted",
    "squared": "squared, unweighted",
    "weighted_zero_one": "zero-one, weighted",
    "weighted_absolute": "absolute, weighted",
    "weighted_squared": "squared, weighted",
}
EMOTION_METHODS = ("AGM", "CRF", "SSVM", "M4N")  # the paper's columns, then our extra M4N


def _bold_of(tests: pd.DataFrame) -> dict[tuple, bool]:
    """(task, dataset, metric, method) -> bold, from a :func:`best_tests` table (empty: none)."""
    if tests.empty or "bold" not in tests:
        return {}
    bold = tests["bold"].astype(str).str.lower() == "true"  # bool, or text from a CSV
    keys = zip(tests["task"], tests["dataset"], tests["metric"], tests["method_a"])
    return dict(zip(keys, bold))


def render_emotion(table: pd.DataFrame, tests: pd.DataFrame) -> str:
    """Paper layout of AGM Table 1: a row per loss, a column per method, then the average and
    the number of bold cells; bold = best or not significantly worse (the ``bold`` column of
    :func:`structpred.report.significance.best_tests`)."""
    bold_of = _bold_of(tests)
    data = table[table["metric"].isin(list(EMOTION_LOSSES))]
    out = []
    for (task, dataset), part in data.groupby(["task", "dataset"], sort=False):
        present = list(dict.fromkeys(part["method"]))
        methods = [m for m in EMOTION_METHODS if m in present] + [m for m in present if m not in EMOTION_METHODS]
        by = part.set_index(["metric", "method"])
        out.append(f"<table><tr><th class=l>loss ({html.escape(str(dataset))})</th>"
                   + "".join(f"<th>{html.escape(m)}</th>" for m in methods) + "</tr>")
        for metric, label in EMOTION_LOSSES.items():
            cells = "".join(
                _cell(by.loc[(metric, m)], task, bold=bold_of.get((task, dataset, metric, m), False))
                if (metric, m) in by.index else "<td>–</td>" for m in methods)
            out.append(f"<tr><td class=l>{label}</td>{cells}</tr>")
        averages, counts = [], []
        for m in methods:
            rows = [by.loc[(metric, m)] for metric in EMOTION_LOSSES if (metric, m) in by.index]
            if len(rows) < len(EMOTION_LOSSES):
                averages.append("<td>–</td>")
            else:
                mean = float(np.mean([r["mean"] for r in rows]))
                refs = [r["reference"] for r in rows]
                paper = float(np.mean(refs)) if all(pd.notna(r) for r in refs) else None
                averages.append(f"<td>{_fmt(mean, task)}{_paper_note(mean, paper, task)}</td>")
            flags = [bold_of[(task, dataset, metric, m)] for metric in EMOTION_LOSSES
                     if (task, dataset, metric, m) in bold_of]
            counts.append(f"<td>{sum(flags)}</td>" if flags else "<td>–</td>")
        out.append(f"<tr><td class=l>average</td>{''.join(averages)}</tr>")
        out.append(f"<tr><td class=l># bold</td>{''.join(counts)}</tr>")
        out.append("</table>")
        if "M4N" in methods:
            out.append("<p>M4N is an extra column (not in the paper): trained on the same max-min "
                       "surrogate as AGM, by GBCFW.</p>")
    return "\n".join(out)


RENDERERS = {"datasets": render_audit, "m4n_table2": render_warm_start, "agm_emotion": render_emotion}


def _compute_time(result_paths) -> str:
    results = read_results(result_paths)
    chosen = results[results["metric"] == "seconds"]
    return f"{chosen['value'].sum() / 3600:.2f} CPU-hours of model fitting in {len(result_paths)} jobs"


def write_index(path, *, config: dict, tables, tests, figures, stamps, references,
                results=()) -> None:
    """Write the HTML report linking every table and figure, with provenance."""
    root = Path(path).parent
    rel = lambda p: html.escape(os.path.relpath(p, root))  # noqa: E731
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>structpred report</title>"
             f"<style>{CSS}</style></head><body><h1>structpred: reproduced tables and figures</h1>",
             f"<p>Configuration <b>{html.escape(str(config.get('name')))}</b> "
             f"(hash <code>{provenance.config_hash(config)}</code>), commit "
             f"<code>{provenance.git_commit()}</code>. Paper numbers come from "
             f"<code>{html.escape(str(references))}</code>; Δ = ours − paper.</p>"]
    if results:
        parts.append(f"<p>{_compute_time(results)}.</p>")
    figure_of = {Path(f).stem: f for f in figures}
    tests_of = {Path(t).stem.removesuffix("_tests"): t for t in tests}
    parts.append("<ul>" + "".join(f"<li><a href='#{Path(t).stem}'>{TITLES.get(Path(t).stem, Path(t).stem)}</a></li>"
                                  for t in tables) + "</ul>")
    for table_path in tables:
        name = Path(table_path).stem
        table = pd.read_csv(table_path)
        test_table = pd.read_csv(tests_of[name]) if name in tests_of else pd.DataFrame()
        render = RENDERERS.get(name, render_losses)
        parts.append(f"<h2 id='{name}'>{html.escape(TITLES.get(name, name))}</h2>")
        parts.append(f"<p>Tidy table: <a href='{rel(table_path)}'>{rel(table_path)}</a>"
                     + (f"; paired tests: <a href='{rel(tests_of[name])}'>{rel(tests_of[name])}</a>"
                        if not test_table.empty else "") + "</p>")
        departures = config.get(name, {}).get("departures", []) if isinstance(config.get(name), dict) else []
        if departures:
            parts.append("<p>Departures from the paper:</p><ul>"
                         + "".join(f"<li>{html.escape(d)}</li>" for d in departures) + "</ul>")
        parts.append(render(table, test_table))
        if name in config:
            settings = yaml.safe_dump({name: config[name]}, sort_keys=False)
            parts.append(f"<details><summary>settings used</summary><pre>{html.escape(settings)}</pre></details>")
        if name in figure_of:
            parts.append(f"<p><a href='{rel(figure_of[name])}'><img src='{rel(figure_of[name])}' "
                         f"alt='figure of {name}'></a></p>")
    checksums = provenance.raw_checksums(stamps)
    parts.append("<h2>Provenance</h2><p>Package versions:</p><pre>"
                 + html.escape(json.dumps(provenance.versions(), indent=1)) + "</pre>"
                 "<details><summary>sha256 of every raw file used</summary><pre>"
                 + html.escape(json.dumps(checksums, indent=1, sort_keys=True)) + "</pre></details>"
                 "<details><summary>full configuration</summary><pre>"
                 + html.escape(yaml.safe_dump(config, sort_keys=False)) + "</pre></details>")
    parts.append("</body></html>\n")
    write_text(path, "\n".join(parts))
    log.info("wrote %s", path)
