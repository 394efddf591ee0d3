"""``structpred claims [--paper NAME]``: the claims ledger in the terminal, computed from the tables
in the report folder (registered by :func:`structpred.cli.build_parser`); ``--write`` also writes
``<report dir>/tables/claims.csv``, as the workflow's ``claims`` rule does."""

from __future__ import annotations

import textwrap
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("claims", help="which paper claims hold: the claims ledger, from the committed tables")
    p.add_argument("--paper", default=None, help="only this paper's claims (M4N, AGM, Casimir, QS; any case)")
    p.add_argument("--verdict", default=None,
                   help="only claims whose verdict starts with this (reproduced, reproduced under, not, cannot; "
                        "any case)")
    p.add_argument("--config", type=Path, default=Path("config/config.yaml"),
                   help="the configuration naming the report folder and the claims file")
    p.add_argument("--write", action="store_true", help="also write <report dir>/tables/claims.csv")
    p.set_defaults(func=_claims)


def _claims(args) -> int:
    from structpred.errors import ConfigError
    from structpred.experiments.results import write_csv
    from structpred.report.claims import CANNOT, NOT_REPRODUCED, REPRODUCED, UNDER, ledger, summary
    from structpred.report.cli import _load_config

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
