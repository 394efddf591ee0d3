"""``structpred report index``: rebuild ``reports/index.html`` from the tables and figures already in
the report folder (registered by :func:`structpred.cli.build_parser`).

The workflow's ``html_report`` rule needs every experiment's per-split results; tables that come
from runs resumed across work periods (the ``runs/`` archive) are aggregated one experiment at a
time, and this command links whatever tables the report folder holds for the configured
experiments, with the same provenance (commit, config, the ``.verified`` checksums of the raw
files present, package versions).
"""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    report = subparsers.add_parser("report", help="the HTML report")
    sub = report.add_subparsers(dest="report_command", required=True)
    p = sub.add_parser("index", help="rebuild <report dir>/index.html from the tables and figures present")
    p.add_argument("--config", type=Path, default=Path("config/config.yaml"))
    p.add_argument("--raw", type=Path, default=None, help="raw data root with the .verified stamps "
                   "(default: the config's data.raw_dir)")
    p.set_defaults(func=_index)


def _index(args) -> int:
    import yaml

    from structpred.errors import ConfigError
    from structpred.experiments.registry import get
    from structpred.report.html import write_index

    if not args.config.is_file():
        raise ConfigError(f"no configuration file {args.config}")
    config = yaml.safe_load(args.config.read_text(encoding="utf-8"))
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
    raw = args.raw or Path(config["data"]["raw_dir"])
    stamps = sorted(raw.glob("*/.verified"))
    write_index(folder / "index.html", config=config, tables=tables, tests=tests, figures=figures,
                stamps=stamps, references=config["report"]["references"], curves=curves)
    missing = [n for n in config["experiments"] if folder / "tables" / f"{n}.csv" not in tables]
    print(f"{folder / 'index.html'}: {len(tables)} tables" + (f"; no table yet for {', '.join(missing)}" if missing else ""))
    return 0
