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


#: The tests that use :func:`smoke_local`. Under pytest-xdist (``pytest -n 2 --dist
#: loadscope --no-loadscope-reorder``) they share one worker, and so one smoke run, and start first: the smoke run and the
#: SLURM test that reruns part of it are the suite's longest chain (25 and 3.5 minutes on 2 cores, 2026-11-29),
#: and the other worker runs the other modules meanwhile.
SMOKE_TESTS = (
    "tests/test_slurm_cluster.py::test_cluster_jobs_match_the_local_run_and_survive_a_cancel",
    "tests/test_workflow.py::test_smoke_workflow_end_to_end",
    "tests/test_workflow.py::test_an_interrupted_run_resumes_with_the_plain_command",
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope`` with :data:`SMOKE_TESTS` as one scope: a worker runs each test module
    whole (its module fixtures are built once) and all of the smoke run's tests."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "smoke run" if nodeid in SMOKE_TESTS else nodeid.split("::", 1)[0]

    return Scheduling(config, log)


#: Terminal size variables: an xdist worker starts with COLUMNS=80 and LINES=24 in its environment,
#: which a serial run (no terminal) does not have; the CLIs cut their lines to that width
#: (``structpred claims``), so the workers get the environment's values from the main process.
TERMINAL_VARIABLES = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput["terminal"] = {name: os.environ.get(name) for name in TERMINAL_VARIABLES}


def pytest_configure(config):
    for name, value in getattr(config, "workerinput", {}).get("terminal", {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def pytest_collection_modifyitems(config, items):
    """On an xdist worker: :data:`SMOKE_TESTS` first (with ``--no-loadscope-reorder`` the scopes
    are handed out in this order), and no test outside it may use :func:`smoke_local`."""
    if not hasattr(config, "workerinput"):
        return
    unlisted = sorted(item.nodeid for item in items
                      if "smoke_local" in getattr(item, "fixturenames", ()) and item.nodeid not in SMOKE_TESTS)
    if unlisted:
        raise pytest.UsageError(f"tests/conftest.py: add {', '.join(unlisted)} to SMOKE_TESTS (they use smoke_local; "
                                "each xdist worker that runs one would make its own smoke run)")
    items.sort(key=lambda item: item.nodeid not in SMOKE_TESTS)   # stable: the rest keeps its order


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
