"""``structpred run [snakemake arguments]``: the workflow, after its config files are checked.

Snakemake reads ``--configfile`` before the Snakefile runs, so a missing or unparsable file ends in
its own traceback, which no rule can shorten.  This command checks every config file first (it
exists, it is YAML, it is a mapping, and merged over ``config/config.yaml`` as Snakemake merges it
the result passes the workflow's schema) and says what is wrong in one line; then it runs
``snakemake`` with the arguments unchanged.  Registered by :func:`structpred.cli.build_parser`.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

from structpred.errors import ConfigError

DEFAULT_CONFIG = Path("config/config.yaml")
SCHEMA = Path("workflow/schemas/config.schema.yaml")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "run", help="run the workflow (snakemake) after checking its config files",
        description="Check the config files (config/config.yaml and every --configfile), then run snakemake "
                    "with the same arguments, from the project's root.  Example: "
                    "structpred run --cores 2 --configfile config/smoke.yaml")
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
    import yaml

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
    from structpred.workflow import check_mirror, validate_config

    if not (root / "Snakefile").is_file():
        raise ConfigError(f"no Snakefile in {root.resolve()}: run structpred run from the project's root")
    config = load_mapping(root / DEFAULT_CONFIG)
    for path in config_files(args):
        config = merged(config, load_mapping(path if path.is_absolute() else root / path))
    validate_config(config, root / SCHEMA)
    check_mirror(config.get("data", {}).get("mirror"))
    return config


def _run(args) -> int:
    snakemake_args = list(args.snakemake_args)
    check(snakemake_args, Path.cwd())
    os.execvp("snakemake", ["snakemake", *snakemake_args])
    return 0  # pragma: no cover  (execvp does not return)
