"""The HTML report ``reports/index.html``: every table (ours beside the paper's) and figure.

The page is generic: it opens with the claims ledger, then each table's heading and layout come
from its experiment's hooks (:mod:`structpred.experiments.registry`), made of the cells of
:mod:`structpred.report.cells`.
"""

from __future__ import annotations

import html
import json
import logging
import os
import re
from pathlib import Path

import pandas as pd
import yaml

from structpred.experiments.registry import get
from structpred.experiments.results import read_results
from structpred.io import write_text
from structpred.report import provenance
from structpred.report.archive_status import describe
from structpred.report.departures import fill as fill_departure
from structpred.report.claims import CANNOT, NOT_REPRODUCED, REPRODUCED, summary
from structpred.report.selection import edge_notes

log = logging.getLogger(__name__)

CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}th{background:#f3f3f3}
td.l,th.l{text-align:left}.paper{color:#666}.diff{color:#666;font-size:11px}
pre{background:#f7f7f7;padding:1em;overflow-x:auto;font-size:12px}img{max-width:100%}
table.ledger td{text-align:left;vertical-align:top;font-size:12px}.v-reproduced{background:#e3f4e3}
.v-under{background:#fdf6d8}.v-not{background:#f9e0e0}.v-cannot{background:#eee}"""


def _read_optional(path) -> pd.DataFrame:
    """A table that may be empty (an experiment without tests writes an empty file)."""
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def _compute_time(result_paths) -> str:
    results = read_results(result_paths)
    chosen = results[results["metric"] == "seconds"]
    return f"{chosen['value'].sum() / 3600:.2f} CPU-hours of model fitting in {len(result_paths)} jobs"


def _verdict_class(verdict: str) -> str:
    return {REPRODUCED: "v-reproduced", NOT_REPRODUCED: "v-not", CANNOT: "v-cannot"}.get(verdict, "v-under")


def ledger_section(ledger: pd.DataFrame, ledger_path: str, pages: set) -> str:
    """The report's first section: per paper the count of claims by verdict, then every claim with
    its evidence, each linking to its table's page (where the report has it)."""
    counts = summary(ledger)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in counts.columns)
    body = "".join("<tr>" + "".join(f"<td class=l>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                   for row in counts.itertuples(index=False))
    parts = [f"<h2 id='claims'>What holds: the claims ledger</h2><p>Every checkable claim of the four papers, "
             f"decided from the tables below by the checks of <code>config/claims.yaml</code> (tidy: "
             f"<a href='{html.escape(ledger_path)}'>{html.escape(ledger_path)}</a>; in a terminal: "
             f"<code>structpred claims</code>). <i>reproduced under X</i>: fails on the paper-protocol table, "
             f"holds on the sensitivity or converged table X.</p><table><tr>{head}</tr>{body}</table>"]
    columns = ["id", "where", "statement", "verdict", "ours", "paper_value", "test", "tolerance", "protocols",
               "grid_edges", "cause", "evidence", "archive"]
    for paper, rows in ledger.groupby("paper", sort=False):
        parts.append(f"<details><summary><b>{html.escape(str(paper))}</b>: {len(rows)} claims</summary>"
                     "<table class=ledger><tr>" + "".join(f"<th class=l>{c}</th>" for c in columns) + "</tr>")
        for _, r in rows.iterrows():
            cells = []
            for c in columns:
                text = "" if pd.isna(r[c]) else html.escape(str(r[c]))
                if c == "evidence":
                    text = _link_evidence(text, pages)
                if c == "id" and r["table"] in pages:
                    text = f"<a href='#{html.escape(str(r['table']))}'>{text}</a>"
                cls = f" class='{_verdict_class(str(r[c]))}'" if c == "verdict" else ""
                cells.append(f"<td{cls}>{text}</td>")
            parts.append("<tr>" + "".join(cells) + "</tr>")
        parts.append("</table></details>")
    return "\n".join(parts)


def _link_evidence(text: str, pages: set) -> str:
    """Evidence text with each report table it names (``agm_emotion_unnormalised``, ``m4n_table1
    departures``) linked to that table's page, and each ``tables/<file>.csv`` to the file."""
    text = re.sub(r"\btables/([A-Za-z0-9_]+\.csv)", r"<a href='tables/\1'>tables/\1</a>", text)
    names = sorted(pages, key=len, reverse=True)
    if not names:
        return text
    pattern = r"(?<![/\w'#])(" + "|".join(map(re.escape, names)) + r")(?![\w.])"
    return re.sub(pattern, r"<a href='#\1'>\1</a>", text)


def grid_edge_note(selection_path, link: str) -> str:
    """The selections at an edge of their grid, from a table's ``_selection.csv`` (empty: none);
    ``link``: the file's address from the page."""
    notes = edge_notes(_read_optional(selection_path)) if Path(selection_path).is_file() else []
    if not notes:
        return ""
    return ("<p>Selected at an edge of the search grid (the optimum may lie outside it; "
            f"<a href='{link}'>all selections</a>):</p><ul>"
            + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")


def write_index(path, *, config: dict, tables, tests, figures, stamps, references,
                results=(), curves=(), claims=None, staleness=None, checksums=None) -> None:
    """Write the HTML report linking every table and figure, with provenance (``curves``: the
    curve tables ``tables/<experiment>_curves.csv`` and figures ``figures/<experiment>/*.png``;
    ``claims``: the ledger ``tables/claims.csv``, shown first; ``staleness``: the run archive's
    status table, when the tables were rendered from the archive: a stale or unknown archive is
    said in the contents and in the table's section; ``checksums``: the raw files' checksums, default
    those of the ``stamps`` verified here)."""
    status = {} if staleness is None else {r["experiment"]: r for r in staleness.to_dict("records")}
    root = Path(path).parent
    rel = lambda p: html.escape(os.path.relpath(p, root))  # noqa: E731
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>structpred report</title>"
             f"<style>{CSS}</style></head><body><h1>structpred: reproduced tables and figures</h1>",
             f"<p>Configuration <b>{html.escape(str(config.get('name')))}</b> "
             f"(hash <code>{provenance.config_hash(config)}</code>), commit "
             f"<code>{provenance.git_commit(ignore=[root])}</code>. Paper numbers come from "
             f"<code>{html.escape(str(references))}</code>; Δ = ours − paper.</p>"]
    if claims is not None and Path(claims).is_file():
        parts.append(ledger_section(pd.read_csv(claims, keep_default_na=False, na_values=[""]),
                                    os.path.relpath(claims, root), {Path(t).stem for t in tables}))
    if results:
        parts.append(f"<p>{_compute_time(results)}.</p>")
    figure_of = {Path(f).stem: f for f in figures}
    tests_of = {Path(t).stem.removesuffix("_tests"): t for t in tests}
    curve_tables = {Path(c).stem.removesuffix("_curves"): c for c in curves if str(c).endswith("_curves.csv")}
    curve_figures = {}
    for c in curves:
        if str(c).endswith(".png"):
            curve_figures.setdefault(Path(c).parent.name, []).append(c)
    def tag(name):
        row = status.get(name)
        if row is None or row["status"] == "fresh":
            return ""
        return f" <span class='{'v-not' if row['status'] == 'stale' else 'v-cannot'}'>archive {row['status']}</span>"

    parts.append("<ul>" + "".join(f"<li><a href='#{Path(t).stem}'>{html.escape(get(Path(t).stem).title)}</a>"
                                  f"{tag(Path(t).stem)}</li>" for t in tables) + "</ul>")
    absent = [e for e in config.get("experiments", []) if e not in {Path(t).stem for t in tables}]
    if absent:   # configured, but no table: its jobs have not all run, or its raw data is missing
        parts.append("<p>Not in this report (no table: not run yet, or its raw data is missing; "
                     "<code>structpred experiments</code> says which):</p><ul>"
                     + "".join(f"<li>{html.escape(get(e).title)} (<code>{html.escape(e)}</code>)</li>" for e in absent)
                     + "</ul>")
    loaded = {Path(t).stem: (pd.read_csv(t), _read_optional(tests_of[Path(t).stem]) if Path(t).stem in tests_of
                             else pd.DataFrame()) for t in tables}
    for table_path in tables:
        name = Path(table_path).stem
        table, test_table = loaded[name]
        experiment = get(name)
        parts.append(f"<h2 id='{name}'>{html.escape(experiment.title)}</h2>")
        if name in status:
            parts.append(f"<p>Run archive (<code>runs/{html.escape(name)}</code>, "
                         f"<code>structpred runs status</code>): {html.escape(describe(status[name]))}.</p>")
        parts.append(f"<p>Tidy table: <a href='{rel(table_path)}'>{rel(table_path)}</a>"
                     + (f"; paired tests: <a href='{rel(tests_of[name])}'>{rel(tests_of[name])}</a>"
                        if not test_table.empty else "") + "</p>")
        departures = config.get(name, {}).get("departures", []) if isinstance(config.get(name), dict) else []
        if departures:
            tables_by_name = {n: t for n, (t, _) in loaded.items()}
            parts.append("<p>Departures from the paper:</p><ul>"
                         + "".join(f"<li>{html.escape(fill_departure(d, table, tables_by_name))}</li>"
                                   for d in departures) + "</ul>")
        parts.append(experiment.page(table, test_table, loaded, config))
        selection = Path(table_path).with_name(f"{name}_selection.csv")
        parts.append(grid_edge_note(selection, rel(selection)))
        if name in config:
            settings = yaml.safe_dump({name: config[name]}, sort_keys=False)
            parts.append(f"<details><summary>settings used</summary><pre>{html.escape(settings)}</pre></details>")
        if name in figure_of:
            parts.append(f"<p><a href='{rel(figure_of[name])}'><img src='{rel(figure_of[name])}' "
                         f"alt='figure of {name}'></a></p>")
        if name in curve_tables:
            parts.append(f"<p>Per-epoch curves (mean, std over seeds): "
                         f"<a href='{rel(curve_tables[name])}'>{rel(curve_tables[name])}</a></p>")
        for fig_path in curve_figures.get(name, []):
            parts.append(f"<h3>{html.escape(Path(fig_path).stem)}</h3><p><a href='{rel(fig_path)}'>"
                         f"<img src='{rel(fig_path)}' alt='{html.escape(Path(fig_path).stem)} of {name}'></a></p>")
    checksums = provenance.raw_checksums(stamps) if checksums is None else checksums
    parts.append("<h2>Provenance</h2><p>Package versions:</p><pre>"
                 + html.escape(json.dumps(provenance.versions(), indent=1)) + "</pre>"
                 "<details><summary>sha256 of every raw file used (as the data registry pins them)</summary><pre>"
                 + html.escape(json.dumps(checksums, indent=1, sort_keys=True)) + "</pre></details>"
                 "<details><summary>full configuration</summary><pre>"
                 + html.escape(yaml.safe_dump(config, sort_keys=False)) + "</pre></details>")
    parts.append("</body></html>\n")
    write_text(path, "\n".join(parts))
    log.info("wrote %s", path)
