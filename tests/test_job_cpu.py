"""A job's CPU seconds (structpred.runs.job_cpu) and where the costs read them: a job's numerics
record keeps them, and `runs cost` and the makespan prefer them to the wall seconds of its rows."""

import json
import subprocess
import sys
import time

import pandas as pd
import pytest

from structpred.report.archive_costs import job_costs, job_fit_threads
from structpred.runs.archive import cost_table
from structpred.runs.job_cpu import process_tree_cpu_seconds
from structpred.runs.makespan import Task, tasks
from structpred.runs.numerics import record_path, write_record

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"


def test_the_tree_counts_live_and_ended_children_and_not_sleeping():
    before = process_tree_cpu_seconds()
    ended = subprocess.run([sys.executable, "-c", BURN.format(s=0.6)], check=True)          # waited for
    live = subprocess.Popen([sys.executable, "-c", BURN.format(s=0.6) + "time.sleep(30)\n"])
    try:
        time.sleep(0.2)
        deadline = time.time() + 20
        while process_tree_cpu_seconds() - before < 1.2 and time.time() < deadline:
            time.sleep(0.1)
        got = process_tree_cpu_seconds() - before
    finally:
        live.kill()
        live.wait()
    assert ended.returncode == 0
    assert 1.2 <= got < 1.2 + 3.0          # both children's 0.6 s, plus two interpreters' start-up
    start = process_tree_cpu_seconds()
    time.sleep(0.5)                        # wall time, no CPU
    assert process_tree_cpu_seconds() - start < 0.1


def _job(root, experiment, seconds, record):
    path = root / experiment / "d" / "M" / "split0.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"experiment": experiment, "dataset": "d", "method": "M", "split": 0, "lam": [0.1, 0.2],
                  "selected": False, "metric": "seconds", "value": seconds, "reference": None,
                  "detail": "AMD EPYC"}).to_csv(path, index=False)
    if record is not None:
        record_path(path).write_text(json.dumps({"commit": "c", "machine": "m", "fingerprints": {}, **record}))
    return path


def test_costs_read_the_cpu_seconds_and_keep_wall_for_old_and_resumed_jobs(tmp_path):
    _job(tmp_path, "cpu", [300.0, 100.0], {"cpu_seconds": 200.0, "cpu_partial": False})
    _job(tmp_path, "old", [300.0, 100.0], None)
    _job(tmp_path, "resumed", [300.0, 100.0], {"cpu_seconds": 50.0, "cpu_partial": True})
    jobs = job_costs(tmp_path).set_index("experiment")
    assert jobs.loc["cpu", ["seconds", "measure"]].tolist() == [200.0, "cpu"]
    assert jobs.loc["old", ["seconds", "measure"]].tolist() == [400.0, "wall"]
    assert jobs.loc["resumed", ["seconds", "measure"]].tolist() == [400.0, "wall"]   # part of its CPU only
    table = cost_table(tmp_path).set_index("experiment")
    assert table.loc["cpu", ["timed_jobs", "wall_jobs"]].tolist() == [1, 0]
    assert table.loc["old", "wall_jobs"] == 1 and table.loc["cpu", "cpu_hours"] == pytest.approx(round(200 / 3600, 2))


class _OneJob:
    """A stand-in experiment of one job, ``(d, M, 0)``, read from its own runs, on ``threads``."""

    def __init__(self, name, threads):
        self.name, self._threads = name, threads

    def jobs(self, config):
        return [("d", "M", 0)]

    def runs_source(self, config, dataset, method):
        return self.name

    def run_inputs(self, config, dataset, method):
        return []

    def threads(self, config, dataset, method):
        return self._threads

    def lambda_jobs(self, config, dataset, method):
        return 0


def test_the_makespan_scales_each_fit_to_the_jobs_cpu(tmp_path, monkeypatch):
    _job(tmp_path, "cpu", [300.0, 100.0], {"cpu_seconds": 200.0, "cpu_partial": False})
    monkeypatch.setattr("structpred.runs.makespan.get", lambda name: _OneJob(name, 2))
    (task,), left = tasks(tmp_path, {"experiments": ["cpu"]})
    assert task.parts == pytest.approx([150.0, 50.0]) and left == {"untimed": 0, "not archived": 0}
    assert Task(("x",), [150.0, 50.0], 2).wall(4) == (150.0, 2)


def test_a_job_threaded_inside_its_fits_keeps_its_wall_seconds_and_holds_its_threads(tmp_path, monkeypatch):
    # AGM's SRL fits ran on 2 numba threads: CPU seconds 380 are the sum over both, the rows' 300 + 100
    # wall seconds what the fits took on 2 cores
    _job(tmp_path, "threaded", [300.0, 100.0], {"cpu_seconds": 380.0, "cpu_partial": False, "fit_threads": 2})
    monkeypatch.setattr("structpred.runs.makespan.get", lambda name: _OneJob(name, 4))
    (task,), _ = tasks(tmp_path, {"experiments": ["threaded"]})
    assert task.parts == [300.0, 100.0] and task.fit_threads == 2
    # the fits in turn, on the job's cores: 400 s on 2 or more (held: its 4 threads, or all of a
    # smaller machine), 800 s on one
    assert task.wall(64) == (400.0, 4) and task.wall(2) == (400.0, 2) and task.wall(1) == (800.0, 1)
    assert job_costs(tmp_path)["seconds"].tolist() == [380.0]   # its cost: the CPU of both threads


def test_a_record_keeps_the_fit_threads_only_above_one(tmp_path):
    for name, threads in (("one", 1), ("two", 2)):
        write_record(tmp_path / f"{name}.csv", (), "c", cpu_seconds=1.0, fit_threads=threads)
    assert "fit_threads" not in json.loads(record_path(tmp_path / "one.csv").read_text())
    assert job_fit_threads(tmp_path / "one.csv") == 1 and job_fit_threads(tmp_path / "two.csv") == 2
    assert job_fit_threads(tmp_path / "none.csv") == 1   # no record: an old job, one thread
