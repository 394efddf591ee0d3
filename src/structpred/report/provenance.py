"""Where a report came from: git commit, config hash, raw-data checksums, package versions."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from structpred.data.registry import get_source


def git_commit(cwd: str | Path = ".", ignore=()) -> str:
    """``git describe``-like id of the working tree ('+dirty' when it has uncommitted changes
    outside ``ignore``: the report folder being rebuilt, whose tables are outputs, not inputs)."""
    inside = [Path(os.path.relpath(Path(p).resolve(), Path(cwd).resolve())).as_posix() for p in ignore]
    excludes = [f":(exclude){p}" for p in inside if p != "." and not p.startswith("..")]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *excludes],
                               cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return commit + ("+dirty" if dirty else "")


def source_commit(cwd: str | Path = ".", ignore=()) -> str:
    """The commit a report is rendered from: the last commit that changed anything outside
    ``ignore`` (the report folder), '+dirty' when the tree has uncommitted changes there. A commit
    that only adds the re-rendered report does not change it, so the committed page names the
    commit a fresh clone re-renders it at, and the re-render leaves the clone clean."""
    inside = [Path(os.path.relpath(Path(p).resolve(), Path(cwd).resolve())).as_posix() for p in ignore]
    excludes = [f":(exclude){p}" for p in inside if p != "." and not p.startswith("..")]
    try:
        commit = subprocess.run(["git", "log", "-1", "--format=%H", "--", ".", *excludes], cwd=cwd,
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *excludes],
                               cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return (commit or "unknown (no commit)") + ("+dirty" if dirty else "")


def config_hash(config: dict) -> str:
    """sha256 of the canonical JSON of the configuration (first 16 hex digits)."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def raw_checksums(stamps) -> dict[str, dict[str, str]]:
    """source -> {file: sha256} from the ``.verified`` stamps written by the fetch step."""
    out = {}
    for stamp in sorted(map(Path, stamps)):
        out[stamp.parent.name] = json.loads(stamp.read_text(encoding="utf-8"))
    return out


def registry_checksums(sources) -> dict[str, dict[str, str]]:
    """source -> {file: expected checksum} from the data registry (what every run verifies its raw
    files against): the provenance of a report re-rendered from the run archive, where the raw
    files need not be here."""
    return {name: {f.path: f.expected.removeprefix("sha256 ") for f in get_source(name).files}
            for name in sorted(sources)}


def versions() -> dict[str, str]:
    """Versions of Python and of the packages the results depend on."""
    out = {"python": platform.python_version()}
    for pkg in ("structpred", "numpy", "scipy", "numba", "scikit-learn", "pandas", "snakemake"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out
