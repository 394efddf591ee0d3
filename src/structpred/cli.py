"""Command line interface: ``structpred data ...``, ``structpred report ...``, ``structpred claims``,
``structpred runs cost``.

Each subcommand group lives in the module that owns the concept and registers itself
through a ``register(subparsers)`` function; this module only wires them together.
"""

from __future__ import annotations

import argparse
import logging
import sys

from structpred.errors import StructpredError


DESCRIPTION = """structpred: structured-prediction oracles and solvers, and the four papers' tables.

  structpred data list          which raw files are here, in the mirror, or missing
  structpred claims             which paper claims hold (the claims ledger)
  structpred report index       rebuild reports/index.html from the committed tables
  structpred runs cost          CPU-hours the run archive recorded
  structpred experiments        every experiment: its table, jobs, data status, archived cost

The tables themselves are rebuilt by the workflow: snakemake --cores 2 (see README.md)."""


def build_parser() -> argparse.ArgumentParser:
    from structpred.data import cli as data_cli
    from structpred.experiments import runs_cli
    from structpred.report import claims_cli
    from structpred.report import cli as report_cli

    parser = argparse.ArgumentParser(
        prog="structpred", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    data_cli.register(sub)
    report_cli.register(sub)
    claims_cli.register(sub)
    runs_cli.register(sub)
    runs_cli.register_experiments(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
