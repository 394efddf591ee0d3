"""``structpred claims``: what holds, in the terminal, computed from the tables in the report folder
(registered by :func:`structpred.cli.build_parser`): by default each paper's headline verdicts, as
the report's first screen gives them (at most 40 lines); ``--all`` (or ``--paper`` / ``--verdict``,
which filter it) the claims ledger, every claim with its evidence; ``--write`` also writes
``<report dir>/tables/claims.csv``, as the workflow's ``claims`` rule does."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from structpred.errors import ConfigError
from structpred.report.claims import CANNOT, NOT_REPRODUCED, REPRODUCED, UNDER, headlines, ledger, summary
from structpred.report.cli import _load_config
from structpred.report.html import PAPER_ORDER
from structpred.tables.results import write_csv


def register(subparsers) -> None:
    p = subparsers.add_parser("claims", help="which paper claims hold: the claims ledger, from the committed tables")
    p.add_argument("--paper", default=None, help="only this paper's claims (M4N, AGM, Casimir, QS; any case)")
    p.add_argument("--verdict", default=None,
                   help="only claims whose verdict starts with this (reproduced, reproduced under, not, cannot; "
                        "any case)")
    p.add_argument("--config", type=Path, default=Path("config/config.yaml"),
                   help="the configuration naming the report folder and the claims file")
    p.add_argument("--all", action="store_true", help="the whole ledger: every claim with its evidence (default: "
                                                      "each paper's headline verdicts)")
    p.add_argument("--write", action="store_true", help="also write <report dir>/tables/claims.csv")
    p.set_defaults(func=_claims)


def _claims(args) -> int:
    if args.verdict:   # checked before the ledger is computed: a typo costs nothing
        verdict = args.verdict.strip().lower()
        known = (REPRODUCED, UNDER, NOT_REPRODUCED, CANNOT)
        if not verdict or not any(k.startswith(verdict) or verdict.startswith(k + " ") for k in known):
            raise ConfigError(f"unknown verdict {args.verdict!r}; verdicts: {', '.join(known)} "
                              f"(or the start of one, e.g. not)")
    config = _load_config(args.config)
    report = config["report"]
    table = ledger(report["claims"], report["dir"])
    if args.write:
        write_csv(table, Path(report["dir"]) / "tables" / "claims.csv")
    if not (args.all or args.paper or args.verdict):
        print(headline_text(report["claims"], table))
        return 0
    if args.paper:
        papers = {p.lower(): p for p in dict.fromkeys(table["paper"])}
        if args.paper.lower() not in papers:
            raise ConfigError(f"no claims of paper {args.paper!r}; papers: {', '.join(papers.values())}")
        table = table[table["paper"] == papers[args.paper.lower()]]
    if args.verdict:
        table = table[table["verdict"].str.lower().str.startswith(verdict)]
    print(summary(table).to_string(index=False))
    for _, r in table.iterrows():
        print(f"\n{r['id']}  [{r['verdict']}]  {r['where']}")
        print(textwrap.fill(r["statement"], 100, initial_indent="  ", subsequent_indent="  "))
        for label, key in (("ours", "ours"), ("paper", "paper_value"), ("test", "test"), ("under", "protocols"),
                           ("grid edge", "grid_edges"), ("cause", "cause"), ("evidence", "evidence")):
            if isinstance(r[key], str) and r[key]:
                print(textwrap.fill(r[key], 100, initial_indent=f"  {label}: ", subsequent_indent="    "))
    return 0


#: the most lines the default output prints
MAX_LINES = 40


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def headline_text(claims_path, table, width: int | None = None) -> str:
    """The report's first screen in a terminal: per paper its claim counts, then its headlines,
    each its verdict and statement, then the decisive numbers, test and cause; wrapped to the
    terminal's ``width`` (default: its width, 120 when not a terminal), each headline's second part
    cut to one line when the whole would pass :data:`MAX_LINES` lines."""
    width = width or max(80, shutil.get_terminal_size((120, 40)).columns)
    heads = headlines(claims_path, table)
    counts = summary(table).set_index("paper")
    order = [p for p in PAPER_ORDER if p in counts.index] + [p for p in counts.index if p not in PAPER_ORDER]

    def render(cut: bool) -> list[str]:
        lines = []
        for paper in order:
            c = counts.loc[paper]
            lines.append(_cut(f"{paper}: {c['claims']} claims, {c['reproduced']} reproduced, {c['reproduced under']} "
                              f"under a protocol, {c['not reproduced']} not reproduced, {c['cannot check']} cannot "
                              f"check", width))
            for _, h in heads[heads["paper"] == paper].iterrows():
                lines += textwrap.wrap(f"[{h['verdict']}] {h['statement']}", width, initial_indent="  ",
                                       subsequent_indent="    ")
                named = int(h["checked"]) + int(h["cannot"])
                count = f"{h['held']}/{h['checked']} hold; " if named > 1 and int(h["checked"]) else ""
                label = f"{h['decisive_label']}: " if named > 1 and h["decisive"] else ""
                cause = f" Cause: {h['cause']}" if h["cause"] else ""
                detail = f"{count}{label}{h['numbers']}.{cause}"
                lines += ([_cut("      " + detail, width)] if cut else
                          textwrap.wrap(detail, width, initial_indent="      ", subsequent_indent="      "))
        return lines + ["every claim with its evidence: structpred claims --all (--paper P, --verdict V to filter)"]

    lines = render(cut=False)
    if len(lines) > MAX_LINES:
        lines = render(cut=True)
    if len(lines) > MAX_LINES:   # more headlines than a screen holds: the first ones, and say so
        lines = lines[:MAX_LINES - 2] + [f"... {len(lines) - MAX_LINES + 1} more lines: structpred claims --all",
                                         lines[-1]]
    return "\n".join(lines)
