"""Shared fixtures: the raw-data mirror (env STRUCTPRED_MIRROR, else ../shared/data/raw), copies
of the project to run the workflow in, and one local smoke run shared by the workflow tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[1]


def mirror_root() -> Path:
    env = os.environ.get("STRUCTPRED_MIRROR")
    return Path(env).resolve() if env else (REPO.parent / "shared" / "data" / "raw").resolve()


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The raw-data mirror; tests needing it are skipped when it is absent."""
    root = mirror_root()
    if not root.is_dir():
        pytest.skip(f"raw-data mirror not found at {root} (set STRUCTPRED_MIRROR)")
    return root


def project_copy(dest: Path) -> Path:
    """A copy of the project's files as git sees them (tracked + untracked, not ignored), without
    the run archive."""
    from structpred.workflow import project_copy as copy

    return copy(REPO, dest)


def snakemake(args: list[str], cwd: Path, env: dict | None = None, check: bool = True):
    """Run snakemake in ``cwd`` with the data mirror; on failure show the ends of its output."""
    root = mirror_root()
    if not root.is_dir():
        pytest.skip(f"raw-data mirror not found at {root} (set STRUCTPRED_MIRROR)")
    env = {**(env or os.environ), "STRUCTPRED_MIRROR": str(root)}
    proc = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=cwd, capture_output=True,
                          text=True, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}")
    return proc


@pytest.fixture(scope="session")
def smoke_local(tmp_path_factory) -> SimpleNamespace:
    """The smoke workflow run once locally (``--cores 2``): its project folder and wall time."""
    path = project_copy(tmp_path_factory.mktemp("smoke_local"))
    start = time.monotonic()
    snakemake(["--cores", "2", "--configfile", "config/smoke.yaml"], path)
    return SimpleNamespace(path=path, seconds=time.monotonic() - start)
