"""``structpred report index``: rebuild the report's pages (``reports/index.html``, which opens with
the papers' headline verdicts, one page per paper and the data audit's; :mod:`structpred.report.html`)
and the claims ledger ``tables/claims.csv`` from the tables and figures already in the report folder
(registered by :func:`structpred.cli.build_parser`).

The workflow's ``html_report`` rule needs every experiment's per-split results; tables that come
from runs resumed across work periods (the ``runs/`` archive) are aggregated one experiment at a
time, and this command links whatever tables the report folder holds for the configured
experiments, with the same provenance (commit, config, the ``.verified`` checksums of the raw
files present, package versions).

``structpred report rerender [EXPERIMENT...]`` rebuilds the tables, figures, ledger and index
from the run archive (``runs/``), without recomputing a job: what to run after a checkout, where
the main job (``snakemake``) recomputes everything from raw data (``--no-index``: the
experiments' tables and figures only).

``structpred report update EXPERIMENT FILES...`` recomputes, in the committed table of
``EXPERIMENT``, its test table and its figure, the (task, dataset) groups whose per-split
result files are given (e.g. a rerun of some datasets archived in ``runs/``); every other row
keeps its bytes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from structpred.errors import ConfigError
from structpred.papers.registry import get
from structpred.report import provenance
from structpred.report.aggregate import aggregate_files, update_files
from structpred.report.archive_status import read_status
from structpred.report.claims import ledger
from structpred.report.experiment_figures import experiment_figure, write_curve_figure, write_curve_table
from structpred.report.html import write_index
from structpred.tables.results import write_csv


def register(subparsers) -> None:
    report = subparsers.add_parser("report", help="the HTML report")
    sub = report.add_subparsers(dest="report_command", required=True)
    p = sub.add_parser("index", help="rebuild <report dir>/index.html and its pages from the tables and figures present")
    p.add_argument("--config", type=Path, default=Path("config/config.yaml"),
                   help="the configuration naming the report folder (default: config/config.yaml)")
    p.add_argument("--archive", type=Path, default=Path("runs"),
                   help="the run archive folder, whose README and numerics records name the commits the tables' "
                        "runs were computed at (default: runs)")
    p.set_defaults(func=_index)
    p = sub.add_parser("update", help="recompute some (task, dataset) groups of a table from their result files")
    p.add_argument("experiment")
    p.add_argument("results", type=Path, nargs="+", help="per-split result files (every method of each group)")
    p.add_argument("--config", type=Path, default=Path("config/config.yaml"),
                   help="the configuration naming the report folder (default: config/config.yaml)")
    p.set_defaults(func=_update)
    p = sub.add_parser("rerender", help="rebuild the tables, figures, ledger and index of the report from the "
                                        "run archive, without recomputing a job")
    p.add_argument("experiments", nargs="*", help="only these experiments (default: every configured one)")
    p.add_argument("--archive", type=Path, default=Path("runs"), help="the run archive folder (default: runs)")
    p.add_argument("--config", type=Path, default=Path("config/config.yaml"),
                   help="the configuration naming the report folder (default: config/config.yaml)")
    p.add_argument("--no-index", action="store_true",
                   help="rebuild the experiments' tables and figures only, not the ledger and the index")
    p.set_defaults(func=_rerender)


def _load_config(path: Path) -> dict:
    if not path.is_file():
        raise ConfigError(f"no configuration file {path}")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _update(args) -> int:
    config = _load_config(args.config)
    if args.experiment not in config["experiments"]:
        raise ConfigError(f"unknown experiment {args.experiment!r} (configured: {', '.join(config['experiments'])})")
    missing = [str(p) for p in args.results if not p.is_file()]
    if missing:
        raise ConfigError(f"no result file {missing[0]}" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    folder = Path(config["report"]["dir"])
    table = folder / "tables" / f"{args.experiment}.csv"
    groups = update_files(args.experiment, get(args.experiment).jobs(config), args.results, config["report"]["references"], table,
                          folder / "tables" / f"{args.experiment}_tests.csv",
                          folder / "tables" / f"{args.experiment}_selection.csv", config)
    experiment_figure(args.experiment, table, folder / "figures" / f"{args.experiment}.png", config)
    print(f"{table}: recomputed {', '.join('/'.join(g) for g in groups)} from {len(args.results)} files; "
          f"run `structpred report index` to relink the report")
    return 0


def _index(args) -> int:
    config = _load_config(args.config)
    folder = Path(config["report"]["dir"])
    tables, tests, figures, curves = [], [], [], []
    for name in config["experiments"]:
        table = folder / "tables" / f"{name}.csv"
        if not table.is_file():
            continue
        tables.append(table)
        tests += [p for p in [folder / "tables" / f"{name}_tests.csv"] if p.is_file()]
        figures += [p for p in [folder / "figures" / f"{name}.png"] if p.is_file()]
        panels = get(name).curve_panels(config)
        if panels:
            curves += [p for p in [folder / "tables" / f"{name}_curves.csv"] if p.is_file()]
            curves += [p for p in (folder / "figures" / name / f"{panel}.png" for panel in panels) if p.is_file()]
    claims = None
    if config["report"].get("claims"):
        claims = folder / "tables" / "claims.csv"
        write_csv(ledger(config["report"]["claims"], folder), claims)
    pages = write_index(folder / "index.html", config=config, tables=tables, tests=tests, figures=figures,
                stamps=(), references=config["report"]["references"], curves=curves, claims=claims,
                staleness=read_status(folder / "tables" / "staleness.csv"),
                checksums=provenance.registry_checksums({s for t in tables for s in get(t.stem).sources(config)}),
                archive=getattr(args, "archive", Path("runs")))
    missing = [n for n in config["experiments"] if folder / "tables" / f"{n}.csv" not in tables]
    print(f"{folder / 'index.html'}: {len(tables)} tables on {len(pages)} pages"
          + (f"; no table yet for {', '.join(missing)}" if missing else ""))
    return 0


def _rerender(args) -> int:
    """Each experiment whose every configured job is archived: its table, tests, grid edges, figure
    and curves from the archived files, read in the workflow's job order; then the ledger and the
    index.  An experiment with jobs missing from the archive is left as it is, and said so (one that
    is ``partial_by_dataset``, the matrix: its table has the datasets whose jobs are all archived)."""
    config = _load_config(args.config)
    names = args.experiments or list(config["experiments"])
    unknown = [n for n in names if n not in config["experiments"]]
    if unknown:
        raise ConfigError(f"unknown experiment {unknown[0]!r} (configured: {', '.join(config['experiments'])})")
    folder = Path(config["report"]["dir"])
    for name in names:
        exp = get(name)
        paths = [args.archive / name / d / m / f"split{k}.csv" for d, m, k in exp.jobs(config)]
        missing = [p for p in paths if not p.is_file()]
        pending = {p.parent.parent.name for p in missing}
        complete = [p for p in paths if p.parent.parent.name not in pending]
        if missing and exp.partial_by_dataset and complete:   # the datasets whose jobs are all archived
            print(f"{name}: {len(missing)} of its {len(paths)} jobs are not in {args.archive}/; its table has the "
                  f"{len({p.parent.parent.name for p in complete})} of {len({p.parent.parent.name for p in paths})}"
                  f" datasets whose jobs all are")
            paths, missing = complete, []
        if missing:
            print(f"{name}: left as it is, {len(missing)} of its {len(paths)} jobs are not in {args.archive}/")
            continue
        table = folder / "tables" / f"{name}.csv"
        aggregate_files(paths, config["report"]["references"], table, folder / "tables" / f"{name}_tests.csv",
                        folder / "tables" / f"{name}_selection.csv", config)
        experiment_figure(name, table, folder / "figures" / f"{name}.png", config)
        panels = exp.curve_panels(config)
        if panels:
            curves = folder / "tables" / f"{name}_curves.csv"
            write_curve_table(name, [p.with_name(p.stem + ".history.csv") for p in paths], curves)
            for panel in panels:
                write_curve_figure(name, panel, curves, folder / "figures" / name / f"{panel}.png")
        print(f"{name}: rebuilt from {len(paths)} archived jobs")
    if getattr(args, "no_index", False):   # the experiments' tables and figures only
        return 0
    return _index(argparse.Namespace(config=args.config, archive=args.archive))
