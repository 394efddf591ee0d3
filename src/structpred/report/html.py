"""The HTML report ``reports/index.html``: every table (ours beside the paper's) and figure."""

from __future__ import annotations

import html
import json
import logging
import os
from pathlib import Path

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


def _cell(row: pd.Series, task: str, bold: bool = False) -> str:
    ours = f"{_fmt(row['mean'], task)} ± {_fmt(row['std'], task)}"
    if bold:
        ours = f"<b>{ours}</b>"
    paper, diff = "", ""
    if pd.notna(row.get("reference")):
        paper = f"<br><span class=paper>paper {_fmt(row['reference'], task)}</span>"
        delta = row["mean"] - row["reference"]
        diff = f" <span class=diff>Δ {'+' if delta >= 0 else '−'}{_fmt(abs(delta), task)}</span>"
    return f"<td>{ours}{paper}{diff}</td>"


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


RENDERERS = {"datasets": render_audit, "m4n_table2": render_warm_start}


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
