"""``structpred run [snakemake arguments]``: the workflow, after its config files are checked.

Snakemake reads ``--configfile`` before the Snakefile runs, so a missing or unparsable file ends in
its own traceback, which no rule can shorten.  This command checks every config file first (it
exists, it is YAML, it is a mapping, and merged over ``config/config.yaml`` as Snakemake merges it
the result passes the workflow's schema) and says what is wrong in one line; then it runs
``snakemake`` with the arguments unchanged.  Registered by :func:`structpred.cli.build_parser`.

``structpred run --plan [--configfile F]`` runs nothing and prints :func:`plan`: the training jobs
whose result file is not in ``results/`` yet, the raw files they need and cannot get, and their
estimated CPU-hours per experiment from the run archive.  The workflow's own check of both sits in
Snakemake's ``onstart``, which a dry run skips; a dry run (``-n``, :func:`is_dry_run`) prints the
same plan while the workflow is read (``workflow/rules/common.smk``).
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path

import yaml

from structpred.data.parsers import VIEWS
from structpred.data.preflight import message, unavailable
from structpred.errors import ConfigError
from structpred.papers.registry import get
from structpred.runs.archive import plan_estimate
from structpred.workflow import check_mirror, validate_config

DEFAULT_CONFIG = Path("config/config.yaml")
SCHEMA = Path("workflow/schemas/config.schema.yaml")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "run", help="run the workflow (snakemake) after checking its config files",
        description="Check the config files (config/config.yaml and every --configfile), then run snakemake "
                    "with the same arguments, from the project's root.  Example: "
                    "structpred run --cores 2 --configfile config/smoke.yaml.  structpred run --plan "
                    "[--configfile F] runs nothing and prints the plan: the jobs with no result file yet, the "
                    "raw files they need and cannot get, and their estimated CPU-hours per experiment (-n "
                    "prints it too, before snakemake's job list)")
    p.add_argument("--plan", action="store_true",
                   help="run nothing; print the planned jobs per experiment, the raw files they need and cannot "
                        "get, and their estimated CPU-hours (from the run archive runs/)")
    p.add_argument("snakemake_args", nargs="*", metavar="ARGS",
                   help="snakemake's arguments, passed on unchanged and in order (e.g. --cores 2 -n)")
    p.set_defaults(func=_run)


def config_files(args: list[str]) -> list[Path]:
    """The files ``--configfile`` / ``--configfiles`` name in snakemake's arguments, in order."""
    files, taking = [], False
    for arg in args:
        if arg.startswith("--configfile=") or arg.startswith("--configfiles="):
            files.append(Path(arg.split("=", 1)[1]))
            taking = False
        elif arg in ("--configfile", "--configfiles"):
            taking = True
        elif taking and not arg.startswith("-"):
            files.append(Path(arg))
        else:
            taking = False
    return files


def load_mapping(path: Path) -> dict:
    """One config file as a mapping, or a one-line :class:`ConfigError` saying what is wrong."""
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ConfigError(f"config file {path} is not valid YAML{where}: "
                          f"{getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of settings, not {type(data).__name__}")
    return data


def merged(base: dict, override: dict) -> dict:
    """``override`` over ``base``, nested mappings merged key by key (Snakemake's ``update_config``)."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def check(args: list[str], root: Path) -> dict:
    """The merged, schema-checked config that ``snakemake args`` would run in ``root``."""
    if not (root / "Snakefile").is_file():
        raise ConfigError(f"no Snakefile in {root.resolve()}: run structpred run from the project's root")
    config = load_mapping(root / DEFAULT_CONFIG)
    for path in config_files(args):
        config = merged(config, load_mapping(path if path.is_absolute() else root / path))
    validate_config(config, root / SCHEMA)
    check_mirror(config.get("data", {}).get("mirror"))
    return config


#: snakemake's one-letter flags that take no value (they may come bundled with -n, as in -np)
_FLAGS = set("ntkfFlSDpa")


def is_dry_run(args) -> bool:
    """Whether snakemake's arguments ask for a dry run (``-n``, ``--dry-run``, ``--dryrun``, or
    ``-n`` bundled with other one-letter flags, e.g. ``-pn``)."""
    for arg in args:
        if arg in ("-n", "--dry-run", "--dryrun"):
            return True
        if re.fullmatch(r"-[A-Za-z]+", arg) and "n" in arg and set(arg[1:arg.index("n")]) <= _FLAGS:
            return True
    return False


def planned_jobs(config: dict, root: Path, jobs: dict) -> dict[str, int]:
    """Per experiment of ``jobs`` (its training jobs, from the registry): how many have no result
    file ``results/<experiment>/<dataset>/<method>/split<k>.csv`` in ``root``."""
    return {name: sum(not (Path(root) / f"results/{name}/{d}/{m}/split{s}.csv").is_file() for d, m, s in triples)
            for name, triples in jobs.items()}


def plan(config: dict, root: Path) -> list[str]:
    """The plan of a run with ``config`` in ``root`` (its default target), run by nobody: the
    training jobs with no result file yet, every raw file they (and the report after them) need
    and cannot get (:mod:`structpred.data.preflight`), and their estimated CPU-hours per experiment
    (:func:`structpred.runs.archive.plan_estimate`, from ``root/runs``)."""
    root = Path(root)
    raw, mirror = root / config["data"]["raw_dir"], config["data"].get("mirror")
    lines, experiments = [], list(config["experiments"])
    if config["data"].get("skip_missing"):
        for name in list(experiments):
            missing = unavailable(sorted(get(name).sources(config)), raw, mirror)
            if missing:
                experiments.remove(name)
                lines.append(f"skip_missing: {name} left out, its data is missing "
                             f"({', '.join(sorted({m['source'] for m in missing}))})")
    jobs = {name: get(name).jobs(config) for name in experiments}
    counts = planned_jobs(config, root, jobs)
    todo = {name: n for name, n in counts.items() if n}
    needed = set()
    for name in todo:
        needed |= get(name).sources(config)
    if todo:   # the report after them reads the verified raw files of every view the experiments use
        for name in experiments:
            views = {get(name).view(config, d) for d, _, _ in jobs[name]}
            needed |= {VIEWS[v].source for v in views if v in VIEWS}
    total = sum(len(triples) for triples in jobs.values())
    lines.insert(0, f"plan of the whole workflow (nothing run): {sum(todo.values())} of {total} training jobs have "
                    f"no result file in results/ yet, in {len(todo)} of {len(experiments)} experiments")
    missing = unavailable(sorted(needed), raw, mirror)
    if missing:
        lines += message(missing).splitlines()
    else:
        lines.append(f"data: every raw file the planned jobs need ({len(needed)} sources) is in "
                     f"{config['data']['raw_dir']}/ or can be had")
    if todo:
        lines += plan_estimate(todo, os.path.relpath(root / "runs"))
    done = [name for name in experiments if not counts[name]]
    if done:
        lines.append(f"up to date (every result file there): {', '.join(done)}")
    lines.append("(snakemake also reruns a job whose code, settings or inputs changed since its result file was "
                 "written: structpred run -n lists every job)")
    return lines


def _run(args) -> int:
    snakemake_args = list(args.snakemake_args)
    if getattr(args, "plan", False) or "--plan" in snakemake_args:
        config = check([a for a in snakemake_args if a != "--plan"], Path.cwd())
        print("\n".join(plan(config, Path.cwd())))
        return 0
    check(snakemake_args, Path.cwd())
    os.execvp("snakemake", ["snakemake", *snakemake_args])
    return 0  # pragma: no cover  (execvp does not return)
