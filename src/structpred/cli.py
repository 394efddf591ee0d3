"""Command line interface: ``structpred data ...``, ``structpred report ...``, ``structpred claims``,
``structpred runs ...``, ``structpred experiments``, ``structpred run``.

Each subcommand group lives in the module that owns its concept (``register(subparsers)``).
"""

from __future__ import annotations

import argparse
import logging
import sys

from structpred import run_cli
from structpred.data import cli as data_cli
from structpred.errors import StructpredError
from structpred.report import claims_cli, cli as report_cli
from structpred.runs import cli as runs_cli


DESCRIPTION = """structpred: structured-prediction oracles and solvers, and the four papers' tables.

  structpred data list          which raw files are here, in the mirror, or missing
  structpred claims             each paper's headline verdicts (--all: every claim of the ledger)
  structpred report rerender    rebuild the committed tables, figures, ledger and report from runs/ (no job)
  structpred report index       rebuild the report's pages (reports/index.html, ...) from the committed tables
  structpred runs cost          CPU-hours the run archive recorded
  structpred runs verify        rerun sampled archived jobs from raw data, compare them with the archive
  structpred runs status        which archived experiments today's code still reproduces
  structpred experiments        every experiment: its table, jobs, data status, archived cost
  structpred run --plan         what a run would do: its jobs, the raw files it cannot get, its CPU-hours
  structpred run --cores 2      the workflow (snakemake), after checking its config files

The tables themselves are rebuilt by the workflow: snakemake --cores 2 (see README.md)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="structpred", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    data_cli.register(sub)
    report_cli.register(sub)
    claims_cli.register(sub)
    runs_cli.register(sub)
    runs_cli.register_experiments(sub)
    run_cli.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    head = next((i for i, a in enumerate(argv) if a not in ("-v", "--verbose")), len(argv))
    passed_on = []
    if argv[head:head + 1] == ["run"] and not {"-h", "--help"} & set(argv[head + 1:head + 2]):
        argv, passed_on = argv[:head + 1], argv[head + 1:]  # snakemake's arguments, verbatim
    args = parser.parse_args(argv)
    if args.command == "run":
        args.snakemake_args = passed_on
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args) or 0)
    except StructpredError as exc:
        print(f"structpred: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into a reader that stopped (head)
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
