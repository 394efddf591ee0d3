"""The cluster path for real: one table of each paper of the smoke workflow, built through
``--profile profiles/slurm`` on a single-node SLURM cluster started here (tools/slurm_cluster.py),
equals the local run's table byte for byte, and a run with a job cancelled mid-way (``scancel``)
resumes to the same tables.  Every experiment's jobs go through the same rules (``run_job``,
``split_features``, ``select_model``), so one table per paper exercises each of them; the whole
smoke workflow through SLURM took 1029 s here against 290 s locally (status polling and one
snakemake start per job), too long to run on each CI stop.

Skipped, with the reason, where SLURM is not installed or its daemons cannot be started (not
root, a system SLURM already configured); .ci/run installs it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, mirror_root, project_copy, snakemake

pytestmark = pytest.mark.slow
log = logging.getLogger(__name__)

# One table of each paper (m4n_table1 holds the jobs cancelled below).
TABLES = ["m4n_table1", "casimir_ner", "qs_movielens", "agm_emotion"]
# The README's command, with the smoke config and these targets; targets before options.
PROFILE_RUN = [*(f"reports/tables/{name}{end}.csv" for name in TABLES for end in ("", "_tests")),
               "--profile", "profiles/slurm", "--configfile", "config/smoke.yaml"]


def _cluster_tool():
    spec = importlib.util.spec_from_file_location("slurm_cluster", REPO / "tools" / "slurm_cluster.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A running single-node cluster: the environment that points SLURM's commands at it."""
    tool = _cluster_tool()
    missing = tool.missing_programs()
    if missing:
        pytest.skip(f"SLURM is not installed ({', '.join(missing)} missing): "
                    "`python tools/slurm_cluster.py install` installs it (root, Debian)")
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        pytest.skip("the SLURM executor plugin is not installed: pip install -e '.[test]'")
    root = tmp_path_factory.mktemp("slurm")
    try:
        env = tool.start(root)
    except tool.ClusterError as err:
        tool.stop(root)
        pytest.skip(f"a SLURM cluster cannot be started here: {err}")
    try:
        yield {**os.environ, **env}
    finally:
        tool.stop(root)


def _tables(project: Path) -> dict[str, bytes]:
    folder = project / "reports" / "tables"
    return {f"{name}{end}.csv": (folder / f"{name}{end}.csv").read_bytes()
            for name in TABLES for end in ("", "_tests")}


def _drop_tables(project: Path, names) -> None:
    """Remove tables that the run must build: snakemake leaves an existing target alone when only
    its (missing) intermediate inputs would be rebuilt, and whether a committed paper-scale
    table counts as up to date then depends on the copy's file times."""
    for name in names:
        for end in ("", "_tests"):
            (project / "reports" / "tables" / f"{name}{end}.csv").unlink(missing_ok=True)


def _running_job(env: dict, rule: str, timeout: float) -> tuple[str, str]:
    """The id and comment (rule and wildcards) of the first RUNNING job of ``rule``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i|%k"], env=env,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            job_id, comment = line.split("|", 1)
            if comment.startswith(f"rule_{rule}"):
                return job_id, comment
        time.sleep(0.5)
    raise AssertionError(f"no {rule} job was seen running within {timeout:.0f} s")


def test_smoke_workflow_on_slurm_matches_local_and_survives_a_cancel(cluster, smoke_local,
                                                                    tmp_path_factory):
    project = project_copy(tmp_path_factory.mktemp("smoke_slurm"))
    _drop_tables(project, TABLES)     # the committed paper-scale tables came with the copy
    start = time.monotonic()
    snakemake(PROFILE_RUN, project, env=cluster)
    seconds = time.monotonic() - start
    log.warning("smoke workflow: %.0f s through SLURM, %.0f s locally (--cores 2)", seconds,
                smoke_local.seconds)
    expected = _tables(smoke_local.path)
    assert all(b"\n" in table for table in expected.values())  # header and rows
    assert _tables(project) == expected
    assert not (project / "results" / "qs_usps").exists()  # only what was asked (the committed
    # paper-scale tables under reports/ came with the copy, so results/ is what tells)

    # Every job ran as a SLURM job except the local rules (downloads, data preparation, report).
    slurm_logs = project / ".snakemake" / "slurm_logs"
    assert not (slurm_logs / "rule_fetch_source").exists()
    assert not (slurm_logs / "rule_aggregate").exists()

    # Cancel one training job mid-way: without retries the run fails on it, and the rerun
    # redoes what is missing and gives the same tables.
    removed = sorted((project / "results" / "m4n_table1" / "iris").glob("*/split*.csv"))
    assert len(removed) == 12  # 6 jobs (3 methods x 2 splits), rows and history
    for path in removed:
        path.unlink()
    # and their kept lambda fits, so that the jobs fit again (else they end at once, from the
    # kept fits); what the cancelled job keeps, the rerun resumes from
    kept = sorted((project / "results" / "m4n_table1" / "iris").glob("*/split*.fits"))
    assert len(kept) == 6
    for path in kept:
        shutil.rmtree(path)
    # and the table they feed (else "Nothing to be done": the rerun would run no job at all)
    _drop_tables(project, ["m4n_table1"])
    env = {**cluster, "STRUCTPRED_MIRROR": str(mirror_root())}
    with open(project / "cancelled_run.log", "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "snakemake", *PROFILE_RUN, "--retries", "0"],
                                cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            job_id, comment = _running_job(cluster, "run_job", timeout=300)
            subprocess.run(["scancel", job_id], env=cluster, check=True)
            assert proc.wait(timeout=600) != 0
        finally:
            if proc.poll() is None:
                proc.kill()
    text = (project / "cancelled_run.log").read_text()
    assert f"SLURM-job '{job_id}' failed" in text and "CANCELLED" in text, text[-3000:]
    assert "_iris_" in comment  # one of the jobs removed above
    assert not all(path.exists() for path in removed)

    snakemake(PROFILE_RUN, project, env=cluster)
    assert all(path.exists() for path in removed)
    assert _tables(project) == expected
