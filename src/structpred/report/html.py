"""The HTML report: a small site in the report folder.

- ``index.html`` opens with the headline verdicts of each paper (``headlines:`` of
  ``config/claims.yaml``, decided from the claims ledger), then the ledger's counts, the contents
  and the provenance (the commit the report was rendered at, configuration, raw-file checksums,
  package versions);
- one page per paper (``m4n.html``, ``casimir.html``, ``qs.html``, ``agm.html``, in that order
  everywhere): its headlines with the claims they rest on, each of its tables (ours beside the
  paper's, the commits its runs were computed at, the run archive's status, departures, grid
  edges, figures) and its part of the ledger, a compact row per claim with the rest behind a
  disclosure;
- ``data.html``: the data audit.

Each table's layout comes from its experiment's hooks (:mod:`structpred.papers.registry`),
made of the cells of :mod:`structpred.tables.cells`. Every page is laid out for a 1280 x 800
window: at most 12 screens tall, nothing wider than the window, figures shown at the size they are
drawn (``tests/test_report_browser.py`` checks it in Chromium).
"""

from __future__ import annotations

import html
import json
import logging
import os
import re
import struct
from collections import Counter
from pathlib import Path

import pandas as pd
import yaml

from structpred.papers.registry import get
from structpred.tables.results import read_results
from structpred.io import write_text
from structpred.report import provenance
from structpred.report.archive_status import describe
from structpred.report.archive_costs import job_costs
from structpred.report.claims import (CANNOT, NOT_REPRODUCED, REPRODUCED, UNDER, headlines, load_claims,
                                      rule_text, short_statement, short_test, summary, verdict_class)
from structpred.report.departures import fill as fill_departure
from structpred.report.run_commits import (archive_records, computed_at, readme_commits, record_commits,
                                           result_records)
from structpred.report.selection import edge_notes

log = logging.getLogger(__name__)

#: the report's pages after the index: (file stem, the ledger's paper, heading, experiment-name prefixes)
PAGES = (
    ("m4n", "M4N", "M4N", ("m4n_",)),
    ("casimir", "Casimir", "Casimir", ("casimir_",)),
    ("qs", "QS", "QS", ("qs_",)),
    ("agm", "AGM", "AGM", ("agm_",)),
    ("beyond", None, "Beyond the papers", ("matrix",)),
    ("data", None, "Data audit", ("datasets",)),
)
PAPER_ORDER = [paper for _, paper, _, _ in PAGES if paper]
#: how the curve figures of an experiment are headed (default: the panel's name)
PANEL_TITLES = {
    "fig2": "Figure 2: convex methods", "fig5a": "Figure 5a: level of smoothing",
    "fig5b": "Figure 5b: smooth vs non-smooth", "fig5c": "Figure 5c: warm start",
    "fig5d": "Figure 5d: K of the top-K oracle", "digits": "Test digits and their reconstructions",
}
#: the curve panels shown open on a page; the others are one click away (each page stays within
#: 12 screens): Casimir's Figure 2, which its headlines read
OPEN_PANELS = {"fig2", "digits"}

CSS = """*{box-sizing:border-box}
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1232px;padding:0 32px 48px;color:#111}
nav.site{display:flex;flex-wrap:wrap;gap:2px 18px;padding:8px 0;border-bottom:1px solid #ddd;font-size:14px}
h1{font-size:21px;margin:12px 0 4px}h2{font-size:18px;margin:26px 0 6px;padding-top:4px;border-top:1px solid #ddd}
h3{font-size:15px;margin:14px 0 4px}p,ul{margin:5px 0}ul{padding-left:22px}
table{border-collapse:collapse;margin:6px 0;font-size:13px;max-width:100%}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right;vertical-align:top}
td.l,th.l{text-align:left}td.wrap{overflow-wrap:anywhere}th{background:#f3f3f3}
.paper{color:#666}.diff{color:#666;font-size:11px}.meta{font-size:13px;color:#333}
pre{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:12px;max-width:100%}
img{max-width:100%;height:auto;display:block;margin:6px 0}summary{cursor:pointer}
.v-reproduced{background:#e3f4e3}.v-under{background:#fdf6d8}.v-not{background:#f9e0e0}.v-cannot{background:#eee}
.verdict{padding:0 4px;border-radius:3px;font-weight:600}
#headlines p{font-size:13.5px;line-height:1.4;margin:5px 0}#headlines li{font-size:14px;margin:4px 0}
table.ledger{table-layout:fixed;width:100%;font-size:12px}table.ledger td,table.ledger th{text-align:left}
table.ledger .more{color:#333;margin:2px 0 2px 12px}table.ledger .more b{font-weight:600}
.top{font-size:12px;text-align:right;margin:2px 0}
.tag{font-size:12px;padding:0 4px;border-radius:3px}"""


# --- helpers ----------------------------------------------------------------------------------

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


def _verdict(verdict: str) -> str:
    return f"<span class='verdict {_verdict_class(verdict)}'>{html.escape(verdict)}</span>"


def _e(value) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else html.escape(str(value))


def page_key(experiment: str) -> str:
    """The page an experiment's table is on (``other`` for a name no page claims)."""
    for stem, _, _, prefixes in PAGES:
        if any(experiment == p or experiment.startswith(p) for p in prefixes):
            return stem
    return "other"


def site_pages(experiments) -> list[str]:
    """The files of the report for these experiments: the index, every paper's page, the data
    audit's and a page of other tables where some experiment needs them (the workflow's
    ``html_report`` outputs)."""
    keys = {page_key(e) for e in experiments}
    stems = [stem for stem, paper, _, _ in PAGES if paper or stem in keys] + (["other"] if "other" in keys else [])
    return ["index.html"] + [f"{s}.html" for s in stems]


def _png_size(path) -> tuple[int, int] | None:
    """(width, height) of a PNG from its header; ``None`` for anything else."""
    try:
        with open(path, "rb") as f:
            head = f.read(24)
    except OSError:
        return None
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


def _image(src_rel: str, path, alt: str) -> str:
    """A figure at the size it was drawn, linking to the file."""
    size = _png_size(path)
    dims = f" width={size[0]} height={size[1]}" if size else ""
    return f"<a href='{src_rel}'><img src='{src_rel}'{dims} alt='{html.escape(alt)}'></a>"


def panel_title(experiment: str, panel: str) -> str:
    """A readable heading for a curve figure: ``fig5a`` -> ``Figure 5a: level of smoothing``,
    ``fig4_aeroplane`` -> ``Figure 4, class aeroplane``, a VOC class of Figure 3 likewise."""
    if panel in PANEL_TITLES:
        return PANEL_TITLES[panel]
    found = re.fullmatch(r"fig(\d+[a-z]?)_(.+)", panel)
    if found:
        return f"Figure {found.group(1)}, class {found.group(2)}"
    if experiment == "casimir_voc":
        return f"Figure 3, class {panel}"
    return panel.replace("_", " ")


def _back() -> str:
    return "<p class=top><a href='#top'>back to top</a></p>"


def _nav(current: str, stems) -> str:
    titles = {"index": "Index"} | {stem: title for stem, _, title, _ in PAGES} | {"other": "Other tables"}
    links = []
    for stem in ["index", *stems]:
        label = html.escape(titles.get(stem, stem))
        links.append(f"<b>{label}</b>" if stem == current else f"<a href='{stem}.html'>{label}</a>")
    return f"<nav class=site><span>structpred report:</span>{''.join(links)}</nav>"


def _document(title: str, current: str, stems, body: list[str]) -> str:
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            "<meta name=viewport content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
            f"<header id=top>{_nav(current, stems)}</header>\n" + "\n".join(p for p in body if p)
            + "\n</body></html>\n")


def _link_evidence(text: str, pages) -> str:
    """Evidence text with each report table it names (``agm_emotion_unnormalised``, ``m4n_table1
    departures``) linked to that table's section, and each ``tables/<file>.csv`` to the file.
    ``pages``: the tables' names (linked as ``#name``) or a mapping name -> address."""
    text = re.sub(r"\btables/([A-Za-z0-9_]+\.csv)", r"<a href='tables/\1'>tables/\1</a>", text)
    href = dict(pages) if isinstance(pages, dict) else {n: f"#{n}" for n in pages}
    names = sorted(href, key=len, reverse=True)
    if not names:
        return text
    pattern = r"(?<![/\w'#])(" + "|".join(map(re.escape, names)) + r")(?![\w.])"
    return re.sub(pattern, lambda m: f"<a href='{href[m.group(1)]}'>{m.group(1)}</a>", text)


def grid_edge_note(selection_path, link: str) -> str:
    """The selections at an edge of their grid, from a table's ``_selection.csv`` (empty: none);
    ``link``: the file's address from the page. More than three are collapsed."""
    notes = edge_notes(_read_optional(selection_path)) if Path(selection_path).is_file() else []
    if not notes:
        return ""
    items = "<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>"
    head = (f"Selected at an edge of the search grid (the optimum may lie outside it; "
            f"<a href='{link}'>all selections</a>)")
    if len(notes) <= 3:
        return f"<p>{head}:</p>{items}"
    return f"<details><summary>{head}: {len(notes)} selections</summary>{items}</details>"


# --- headlines and ledger ---------------------------------------------------------------------

def _claim_anchor(claim_id: str) -> str:
    return f"c-{claim_id}"


def headline_sentence(row, href: str | None, brief: bool = True) -> str:
    """One headline as a sentence: the statement, its verdict, the decisive numbers and test (the
    decisive claim named where the headline rests on several: by what tells it from the others
    when ``brief``, else by its statement), the cause where it fails, a link to the evidence."""
    named = int(row["checked"]) + int(row["cannot"])
    count = f"{row['held']}/{row['checked']} hold; " if named > 1 and int(row["checked"]) else ""
    label = row["decisive_label"] if brief else row["decisive_statement"]
    which = f"<i>{_e(label)}</i>: " if named > 1 and row["decisive"] else ""
    cause = f" <i>Cause:</i> {_e(row['cause'])}" if row["cause"] else ""
    link = f" <a href='{href}'>evidence</a>" if href else ""
    return (f"<span class=hl>{_e(row['statement'])}: {_verdict(row['verdict'])} ({count}{which}"
            f"{_e(row['numbers'])}).{cause}{link}</span>")


def _papers(data: dict, ledger: pd.DataFrame | None) -> list[str]:
    """The papers in report order: the pages' order, then any other the claims name."""
    named = list(data.get("papers", {})) + ([] if ledger is None else list(dict.fromkeys(ledger["paper"])))
    return [p for p in PAPER_ORDER if p in named] + [p for p in dict.fromkeys(named) if p not in PAPER_ORDER]


def _paper_page(paper: str) -> str:
    return next((stem for stem, p, _, _ in PAGES if p == paper), "other")


def headline_section(heads: pd.DataFrame, papers: list[str], cites: dict) -> str:
    """The index's first screen: per paper one short paragraph of its headlines."""
    parts = ["<section id=headlines><h2 style='border:0;margin-top:6px'>What holds: each paper's headline claims</h2>"]
    for paper in papers:
        rows = heads[heads["paper"] == paper]
        stem = _paper_page(paper)
        venue = re.search(r"\(([^()]*\d{4})\)", cites.get(paper, ""))
        cite = f" <span class=paper>({html.escape(venue.group(1))})</span>" if venue else ""
        title = f" title='{html.escape(cites[paper])}'" if paper in cites else ""
        sentences = " ".join(headline_sentence(r, f"{stem}.html#h-{r['id']}") for _, r in rows.iterrows())
        parts.append(f"<p id='hl-{html.escape(paper)}'><b><a href='{stem}.html'{title}>{html.escape(paper)}</a></b>"
                     f"{cite}: {sentences or 'no headline in config/claims.yaml.'}</p>")
    parts.append("<p class=meta>Each verdict is decided from the claims ledger by the rule the headline states in "
                 "<code>config/claims.yaml</code> (all / most / any of the claims it names hold, under the protocols "
                 "it names); each paper's page gives the claims.</p></section>")
    return "\n".join(parts)


def paper_headlines(rows: pd.DataFrame, ledger: pd.DataFrame) -> str:
    """A paper page's headlines: each with its verdict, rule, decisive numbers, cause and the
    claims it rests on (one click away, each linking to its ledger row)."""
    if rows.empty:
        return ""
    verdict_of = dict(zip(ledger["id"], ledger["verdict"])) if ledger is not None else {}
    items = []
    for _, r in rows.iterrows():
        ids = [i for i in str(r["claims"]).split() if i]
        listed = ", ".join(f"<a href='#{_claim_anchor(i)}'>{html.escape(i)}</a> "
                           f"<span class='tag {_verdict_class(verdict_of.get(i, ''))}'>"
                           f"{html.escape(verdict_class(verdict_of.get(i, '')))}</span>" for i in ids)
        items.append(f"<li id='h-{html.escape(r['id'])}'>{headline_sentence(r, None, brief=False)} "
                     f"<details><summary class=meta>{html.escape(rule_text(r))}; where: {_e(r['where'])}</summary>"
                     f"<p class=meta>{listed or 'no claim of the ledger matches'}</p></details></li>")
    return "<section id=headlines><h2>Headlines</h2><ul>" + "".join(items) + "</ul>" + _back() + "</section>"


def _archive_compact(text) -> str:
    """The ledger's ``archive`` column in a word per table (``unknown``; ``t: stale; u: fresh``)."""
    parts = [p.partition(": ") for p in _e(text).split("; ") if p]
    states = list(dict.fromkeys(s or t for t, _, s in parts))
    if len(states) <= 1:
        return states[0] if states else ""
    return "; ".join(f"{t}: {s}" for t, _, s in parts)


def ledger_rows(rows: pd.DataFrame, href: dict) -> str:
    """A compact ledger table: per claim its statement, verdict, ours vs paper, test and archive
    status; the rest (id, the full statement and test, tolerance, protocols, grid edges, cause,
    evidence) behind a disclosure."""
    out = ["<table class=ledger><colgroup><col style='width:34%'><col style='width:13%'><col style='width:25%'>"
           "<col style='width:20%'><col style='width:8%'></colgroup><tr><th>claim</th><th>verdict</th>"
           "<th>ours vs paper</th><th>test</th><th>archive</th></tr>"]
    for _, r in rows.iterrows():
        more = [("id", _e(r["id"])), ("where", _e(r["where"])), ("statement", _e(r["statement"])),
                ("test", _e(r["test"])), ("tolerance", _e(r["tolerance"])), ("protocols", _e(r["protocols"])),
                ("grid edges", _e(r["grid_edges"])), ("cause", _e(r["cause"])),
                ("evidence", _link_evidence(_e(r["evidence"]), href)), ("archive", _e(r["archive"]))]
        details = "".join(f"<div class=more><b>{k}:</b> {v}</div>" for k, v in more if v)
        paper = f" / paper {_e(r['paper_value'])}" if _e(r["paper_value"]) else ""
        out.append(f"<tr id='{html.escape(_claim_anchor(str(r['id'])))}'><td><details><summary>"
                   f"{_e(short_statement(r['statement']))}</summary>{details}</details></td>"
                   f"<td class='{_verdict_class(str(r['verdict']))}'>{_e(r['verdict'])}</td>"
                   f"<td>{_e(r['ours'])}{paper}</td><td>{_e(short_test(r['test']))}</td>"
                   f"<td>{_archive_compact(r['archive'])}</td></tr>")
    return "\n".join(out + ["</table>"])


def _count_text(rows: pd.DataFrame) -> str:
    kinds = rows["verdict"].map(verdict_class)
    parts = [f"{int((kinds == k).sum())} {label}" for k, label in
             ((REPRODUCED, "reproduced"), (UNDER, "under a protocol"), (NOT_REPRODUCED, "not reproduced"),
              (CANNOT, "cannot check")) if int((kinds == k).sum())]
    return f"{len(rows)} claims: " + ", ".join(parts)


def ledger_section(rows: pd.DataFrame, ledger_path: str, href: dict, titles: dict) -> str:
    """A paper page's part of the ledger: its counts, then per table a collapsed group of compact
    rows."""
    if rows.empty:
        return ""
    parts = [f"<section id=ledger><h2>Claims ledger</h2><p>{_count_text(rows)}. Every checkable claim of the paper, "
             f"decided from the tables above by the checks of <code>config/claims.yaml</code> (tidy: "
             f"<a href='{html.escape(ledger_path)}'>{html.escape(ledger_path)}</a>; in a terminal: "
             f"<code>structpred claims --all</code>). <i>reproduced under X</i>: fails on the paper-protocol table, "
             f"holds on the sensitivity or converged table X. Each claim's details open on a click.</p>"]
    for table, part in rows.groupby("table", sort=False):
        title = titles.get(table, table)
        parts.append(f"<details id='ledger-{html.escape(str(table))}'><summary><b>{html.escape(str(title))}</b> "
                     f"(<code>{html.escape(str(table))}</code>): {_count_text(part)}</summary>"
                     f"{ledger_rows(part, href)}</details>")
    parts.append(_back() + "</section>")
    return "\n".join(parts)


# --- the pages --------------------------------------------------------------------------------

def _commits_of(name: str, archive, readme: dict, results: dict | None) -> tuple[str, str]:
    """Where the runs behind a table were computed (:func:`computed_at`: the sentence and the
    list of the jobs' commits): from the workflow's result files' numerics records (``results``:
    experiment -> (records, jobs)), else from the run archive (its README's code lines and its
    numerics records); empty with neither."""
    if results is not None:
        records, jobs = results.get(name, ([], 0))
        return computed_at([], record_commits(records), jobs or None, None)
    if archive is None:
        return "", ""
    folder = Path(archive) / name
    jobs = sum(1 for _ in folder.rglob("split*[0-9].csv")) if folder.is_dir() else None
    return computed_at(readme.get(name, []), record_commits(archive_records(archive, name)), jobs,
                             f"{Path(archive).name}/README.md")


#: a section lists the jobs' commits inline up to this many, else folded below its meta line
INLINE_COMMITS = 3


def write_index(path, *, config: dict, tables, tests, figures, stamps, references,
                results=(), curves=(), claims=None, staleness=None, checksums=None, archive=None) -> list[Path]:
    """Write the report's pages into the folder of ``path`` (the index; see :func:`site_pages`),
    each table with its figures and provenance (``curves``: the curve tables
    ``tables/<experiment>_curves.csv`` and figures ``figures/<experiment>/*.png``; ``claims``: the
    ledger ``tables/claims.csv``, whose headlines (``config["report"]["claims"]``) open the index;
    ``staleness``: the run archive's status table, when the tables were rendered from the archive:
    each table's section and the contents say it; ``archive``: the run archive folder, whose
    README and numerics records name the commits each table's runs were computed at (``results``,
    the workflow's result files, name them otherwise); ``checksums``: the raw files' checksums,
    default those of the ``stamps`` verified here). Returns the pages written."""
    status = {} if staleness is None else {r["experiment"]: r for r in staleness.to_dict("records")}
    root = Path(path).parent
    rel = lambda p: html.escape(os.path.relpath(p, root))  # noqa: E731
    names = [Path(t).stem for t in tables]
    configured = list(config.get("experiments", []))
    pages = site_pages(configured + names)
    stems = [p.removesuffix(".html") for p in pages[1:]]

    figure_of = {Path(f).stem: f for f in figures}
    tests_of = {Path(t).stem.removesuffix("_tests"): t for t in tests}
    curve_tables = {Path(c).stem.removesuffix("_curves"): c for c in curves if str(c).endswith("_curves.csv")}
    curve_figures: dict[str, list] = {}
    for c in curves:
        if str(c).endswith(".png"):
            curve_figures.setdefault(Path(c).parent.name, []).append(c)
    loaded = {Path(t).stem: (pd.read_csv(t), _read_optional(tests_of[Path(t).stem]) if Path(t).stem in tests_of
                             else pd.DataFrame()) for t in tables}
    tables_by_name = {n: t for n, (t, _) in loaded.items()}
    href = {n: f"{page_key(n)}.html#{n}" for n in names}
    titles = {n: get(n).title for n in names}

    ledger = heads = counts = None
    claims_data: dict = {}
    if claims is not None and Path(claims).is_file():
        ledger = pd.read_csv(claims, keep_default_na=False, na_values=[""])
        counts = summary(ledger)
        claims_file = config.get("report", {}).get("claims")
        if claims_file and Path(claims_file).is_file():
            claims_data = load_claims(claims_file)
            heads = headlines(claims_file, ledger)
    papers = _papers(claims_data, ledger)
    primary = {c["check"]["table"] for c in claims_data.get("claims", [])}   # the tables claims read first
    ledger_rel = os.path.relpath(claims, root) if claims is not None else ""

    readme = readme_commits(Path(archive) / "README.md") if archive is not None else {}
    from_results = None
    if results:   # the workflow's own result files: their numerics records name the commits
        records = result_records(results)
        jobs = Counter(Path(p).parents[2].name for p in results)
        from_results = {n: (records.get(n, []), jobs.get(n, 0)) for n in set(records) | set(jobs)}

    def tag(name):
        row = status.get(name)
        if row is None or row["status"] == "fresh":
            return ""
        return f" <span class='tag {'v-not' if row['status'] == 'stale' else 'v-cannot'}'>archive {row['status']}</span>"

    def section(table_path) -> str:
        name = Path(table_path).stem
        table, test_table = loaded[name]
        experiment = get(name)
        out = [f"<section id='{name}'><h2>{html.escape(experiment.title)}</h2>"]
        meta = []
        commits, listed = _commits_of(name, archive, readme, from_results)
        n_listed = listed.count("), ") + 1 if listed else 0
        folded = n_listed > INLINE_COMMITS
        if commits:
            tail = f" ({n_listed} commits, below)" if folded else (f": {listed}" if listed else "")
            meta.append(f"Runs: {html.escape(commits + tail)}.")
        if name in status:
            meta.append(f"Run archive (<code>runs/{html.escape(name)}</code>, <code>structpred runs status</code>): "
                        f"{html.escape(describe(status[name]))}.")
            if status[name].get("reproduced"):
                meta.append(f"Reproduced (<code>structpred runs verify</code>, tiers in "
                            f"<code>config/reproducibility.yaml</code>): {html.escape(status[name]['reproduced'])}.")
        meta.append(f"Tidy table: <a href='{rel(table_path)}'>{rel(table_path)}</a>"
                    + (f"; paired tests: <a href='{rel(tests_of[name])}'>{rel(tests_of[name])}</a>"
                       if not test_table.empty else "") + ".")
        if ledger is not None and name in set(ledger["table"]):
            meta.append(f"Claims on this table: <a href='#ledger-{name}'>"
                        f"{_count_text(ledger[ledger['table'] == name])}</a>.")
        out.append("<p class=meta>" + " ".join(meta) + "</p>")
        if folded:
            out.append(f"<details class=meta><summary>The {n_listed} commits its jobs' numerics records name "
                       f"(jobs each)</summary><p class=meta>{html.escape(listed)}.</p></details>")
        departures = config.get(name, {}).get("departures", []) if isinstance(config.get(name), dict) else []
        if departures:
            items = "".join(f"<li>{html.escape(fill_departure(d, table, tables_by_name))}</li>" for d in departures)
            out.append(f"<details><summary>Departures from the paper ({len(departures)})</summary>"
                       f"<ul>{items}</ul></details>")
        out.append(experiment.page(table, test_table, loaded, config))
        if archive is not None and Path(archive).is_dir():
            out.append(experiment.costs(lambda e: job_costs(archive, e), config))
        selection = Path(table_path).with_name(f"{name}_selection.csv")
        out.append(grid_edge_note(selection, rel(selection)))
        if name in config:
            settings = yaml.safe_dump({name: config[name]}, sort_keys=False)
            out.append(f"<details><summary>Settings used</summary><pre>{html.escape(settings)}</pre></details>")
        if name in figure_of:
            image = _image(rel(figure_of[name]), figure_of[name], f"figure of {name}")
            # open: the figure of a table the ledger's claims read first, unless the experiment's
            # curve figures show it; else one click away, so that each page stays within 12 screens
            if (not primary or name in primary) and name not in curve_figures:
                out.append(image)
            else:
                out.append(f"<details><summary>The table above as a figure</summary>{image}</details>")
        if name in curve_tables:
            out.append(f"<p class=meta>Per-epoch curves (mean, std over seeds): "
                       f"<a href='{rel(curve_tables[name])}'>{rel(curve_tables[name])}</a></p>")
        closed = []
        for fig_path in curve_figures.get(name, []):
            panel = Path(fig_path).stem
            title = panel_title(name, panel)
            block = f"<h3 id='{name}-{panel}'>{html.escape(title)}</h3>{_image(rel(fig_path), fig_path, f'{title} ({name})')}"
            if panel in OPEN_PANELS or len(curve_figures[name]) == 1:
                out.append(block)
            else:
                closed.append((panel, title, block))
        if closed:
            out.append(f"<details><summary>The other figures ({len(closed)}): "
                       + ", ".join(html.escape(t) for _, t, _ in closed) + "</summary>"
                       + "".join(b for _, _, b in closed) + "</details>")
        out.append(_back() + "</section>")
        return "\n".join(out)

    written = []
    # the paper pages and the data audit
    cites = claims_data.get("papers", {})
    for stem, paper, heading, _ in [p for p in PAGES if f"{p[0]}.html" in pages] + (
            [("other", None, "Other tables", ())] if "other.html" in pages else []):
        mine = [t for t in tables if page_key(Path(t).stem) == stem]
        absent = [e for e in configured if page_key(e) == stem and e not in names]
        body = [f"<h1>{html.escape(heading)}" + (f": {html.escape(cites[paper])}" if paper in cites else "") + "</h1>"]
        if heads is not None and paper is not None:
            body.append(paper_headlines(heads[heads["paper"] == paper], ledger))
        toc = [f"<a href='#{Path(t).stem}'>{html.escape(get(Path(t).stem).title)}</a>{tag(Path(t).stem)}" for t in mine]
        if ledger is not None and paper is not None and (ledger["paper"] == paper).any():
            toc.append("<a href='#ledger'>Claims ledger</a>")
        if toc:
            body.append("<nav id=contents><b>On this page:</b><ul>" + "".join(f"<li>{t}</li>" for t in toc)
                        + "</ul></nav>")
        if absent:
            note = ("<p class=meta>Not on this page (no table: not run yet, or its raw data is missing; "
                    "<code>structpred experiments</code> says which): "
                    + ", ".join(f"{html.escape(get(e).title)} (<code>{html.escape(e)}</code>)" for e in absent) + ".</p>")
            # a page with no table yet is that one section
            body.append(note if mine else f"<section id='not-run'><h2>No table yet</h2>{note}</section>")
        body += [section(t) for t in mine]
        if ledger is not None and paper is not None:
            body.append(ledger_section(ledger[ledger["paper"] == paper], ledger_rel, href, titles))
        out_path = root / f"{stem}.html"
        write_text(out_path, _document(f"structpred report: {heading}", stem, stems, body))
        written.append(out_path)

    # the index
    body = ["<h1>structpred: four structured-prediction papers, reproduced</h1>"]
    if heads is not None:
        body.append(headline_section(heads, papers, cites))
    if counts is not None:
        counts = counts.set_index("paper").reindex([p for p in papers if p in set(counts["paper"])]).reset_index()
        head = "".join(f"<th>{html.escape(c)}</th>" for c in counts.columns)
        rows = "".join("<tr>" + "".join(
            f"<td class=l><a href='{_paper_page(v)}.html#ledger'>{html.escape(str(v))}</a></td>" if i == 0
            else f"<td>{html.escape(str(v))}</td>" for i, v in enumerate(row)) + "</tr>"
            for row in counts.itertuples(index=False))
        body.append(f"<section id=claims><h2>The claims ledger: counts</h2><p>Every checkable claim of the four papers, "
                    f"decided from the tables by the checks of <code>config/claims.yaml</code> (tidy: "
                    f"<a href='{html.escape(ledger_rel)}'>{html.escape(ledger_rel)}</a>; in a terminal: "
                    f"<code>structpred claims --all</code>); each paper's page lists its claims.</p>"
                    f"<table><tr>{head}</tr>{rows}</table>{_back()}</section>")
    toc = []
    for stem, _, heading, _ in PAGES:
        mine = [n for n in names if page_key(n) == stem]
        if f"{stem}.html" not in pages:
            continue
        items = ", ".join(f"<a href='{stem}.html#{n}'>{html.escape(n)}</a>{tag(n)}" for n in mine)
        toc.append(f"<li><a href='{stem}.html'><b>{html.escape(heading)}</b></a>" + (f": {items}" if items else "")
                   + "</li>")
    others = [n for n in names if page_key(n) == "other"]
    if others:
        toc.append("<li><a href='other.html'><b>Other tables</b></a>: "
                   + ", ".join(f"<a href='other.html#{n}'>{html.escape(n)}</a>{tag(n)}" for n in others) + "</li>")
    contents = [f"<section id=contents><h2>Contents</h2><ul>{''.join(toc)}</ul>"]
    absent = [e for e in configured if e not in names]
    if absent:   # configured, but no table: its jobs have not all run, or its raw data is missing
        contents.append("<p>Not in this report (no table: not run yet, or its raw data is missing; "
                        "<code>structpred experiments</code> says which): "
                        + ", ".join(f"{html.escape(get(e).title)} (<code>{html.escape(e)}</code>)" for e in absent)
                        + ".</p>")
    if results:
        contents.append(f"<p>{_compute_time(results)}.</p>")
    body.append("\n".join(contents) + _back() + "</section>")
    checksums = provenance.raw_checksums(stamps) if checksums is None else checksums
    body.append(
        "<section id=provenance><h2>Provenance</h2>"
        f"<p>Rendered at commit <code>{provenance.source_commit(ignore=[root])}</code> (the last commit that "
        f"changed anything outside the report folder), configuration <b>{html.escape(str(config.get('name')))}</b> "
        f"(hash <code>{provenance.config_hash(config)}</code>). Paper numbers come from "
        f"<code>{html.escape(str(references))}</code>; Δ = ours − paper. The commits each table's runs were "
        "computed at are in its section.</p><p>Package versions:</p><pre>"
        + html.escape(json.dumps(provenance.versions(), indent=1)) + "</pre>"
        "<details><summary>sha256 of every raw file used (as the data registry pins them)</summary><pre>"
        + html.escape(json.dumps(checksums, indent=1, sort_keys=True)) + "</pre></details>"
        "<details><summary>Full configuration</summary><pre>"
        + html.escape(yaml.safe_dump(config, sort_keys=False)) + "</pre></details>" + _back() + "</section>")
    write_text(path, _document("structpred report", "index", stems, body))
    written.insert(0, Path(path))
    for p in written:
        log.info("wrote %s", p)
    return written
