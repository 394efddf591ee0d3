"""A job's CPU seconds (structpred.runs.job_cpu) and where the costs read them: a job's numerics
record keeps them, and `runs cost` and the makespan prefer them to the wall seconds of its rows."""

import json
import subprocess
import sys
import time

import pandas as pd
import pytest

from structpred.report.archive_costs import job_costs
from structpred.runs.archive import cost_table
from structpred.runs.job_cpu import process_tree_cpu_seconds
from structpred.runs.makespan import Task, tasks
from structpred.runs.numerics import record_path

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


def test_the_makespan_scales_each_fit_to_the_jobs_cpu(tmp_path, monkeypatch):
    _job(tmp_path, "cpu", [300.0, 100.0], {"cpu_seconds": 200.0, "cpu_partial": False})

    class Exp:
        def jobs(self, config):
            return [("d", "M", 0)]

        def runs_source(self, config, dataset, method):
            return "cpu"

        def run_inputs(self, config, dataset, method):
            return []

        def threads(self, config, dataset, method):
            return 2

    monkeypatch.setattr("structpred.runs.makespan.get", lambda name: Exp())
    (task,), left = tasks(tmp_path, {"experiments": ["cpu"]})
    assert task.parts == pytest.approx([150.0, 50.0]) and left == {"untimed": 0, "not archived": 0}
    assert Task(("x",), [150.0, 50.0], 2).wall(4) == (150.0, 2)
