"""What every Snakemake rule script shares: logging to the rule's log, and expected errors as one line.

A rule script is ``with rule_script(snakemake) as log: ...``.  An expected error (a
:class:`StructpredError`: missing data, a checksum mismatch, a bad config) is written as one
line to the console and to the rule's log, and the script exits with status 1: no Python
traceback.  Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import yaml

from structpred.data.acquire import resolve_mirror
from structpred.errors import ConfigError, StructpredError


@contextlib.contextmanager
def rule_script(snakemake):
    """Log to stderr and to the rule's log file; turn a :class:`StructpredError` into one line."""
    handlers = [logging.StreamHandler(sys.stderr)]
    if snakemake.log:
        Path(snakemake.log[0]).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(snakemake.log[0], mode="w"))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger(f"rule.{snakemake.rule}")
    try:
        yield log
    except StructpredError as exc:
        log.error("%s", exc)
        logging.shutdown()
        sys.exit(1)


def validate_config(config: dict, schema_path) -> None:
    """The workflow's config against its JSON schema, as one short error: the offending key's path
    and what is wrong (the allowed keys or values), not the schema and config Snakemake's
    ``validate`` prints."""
    schema = yaml.safe_load(Path(schema_path).read_text(encoding="utf-8"))
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(config))
    if error is None:
        return
    where = "/".join(map(str, error.absolute_path)) or "(top level)"
    allowed = ""
    if error.validator == "additionalProperties" and isinstance(error.schema.get("properties"), dict):
        allowed = f"; allowed keys: {', '.join(error.schema['properties'])}"
    message = error.message if len(error.message) <= 200 else error.message[:200] + " ..."
    raise ConfigError(f"config error at {where}: {message}{allowed}")


def check_mirror(mirror) -> None:
    """A configured mirror (``data.mirror`` or ``$STRUCTPRED_MIRROR``) must be a folder: one line."""
    root = resolve_mirror(mirror)
    if root is not None and not root.is_dir():
        source = "data.mirror" if mirror else "STRUCTPRED_MIRROR"
        raise ConfigError(f"{source} names {root}, which is not a folder (a mirror holds <source>/<file>)")


def project_copy(project, dest, exclude=("runs/",)):
    """A copy of the project's files as git sees them (tracked, and untracked ones it does not
    ignore) into ``dest``, leaving out the paths that start with ``exclude``: the workflow runs
    there without touching the project (``runs verify``, the workflow tests)."""
    project, dest = Path(project), Path(dest)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=project, capture_output=True,
                           text=True, check=True).stdout.split()
    for name in files:
        if not name.startswith(tuple(exclude)) and (project / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(project / name, dest / name)
    return dest
