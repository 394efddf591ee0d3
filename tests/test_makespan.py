"""``structpred runs cost --simulate-cores``: list scheduling of the archive's jobs on N cores."""

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from structpred.cli import main
from structpred.papers.registry import get
from structpred.runs.makespan import Task, makespan, tasks

ROOT = Path(__file__).resolve().parents[1]


def test_a_chain_of_dependent_jobs_takes_its_length_whatever_the_cores():
    jobs = [Task(("e", "d", "a", 0), [10.0], 1), Task(("e", "d", "b", 0), [5.0], 1, [("e", "d", "a", 0)]),
            Task(("e", "d", "c", 0), [1.0], 1, [("e", "d", "b", 0)])]
    assert makespan(jobs, 1)[0] == makespan(jobs, 64)[0] == 16.0


def test_independent_jobs_fill_the_cores_longest_first():
    jobs = [Task(("e", "d", "m", k), [s], 1) for k, s in enumerate([7.0, 5.0, 4.0, 3.0, 3.0])]
    assert makespan(jobs, 1)[0] == 22.0
    end, longest = makespan(jobs, 2)
    # longest first: 7 | 5, then 4 at t=5, 3 at t=7, 3 at t=9 (the optimum, {7, 4} {5, 3, 3}, is 11)
    assert end == 12.0 and longest.key == ("e", "d", "m", 0)
    assert makespan(jobs, 8)[0] == 7.0


def test_a_threaded_job_holds_its_threads_for_its_lambdas_schedule():
    job = Task(("e", "d", "m", 0), [4.0, 3.0, 3.0, 2.0], 2)
    assert job.wall(64) == (6.0, 2) and job.wall(1) == (12.0, 1)
    other = Task(("e", "d", "x", 0), [6.0], 1)
    assert makespan([job, other], 2)[0] == 12.0   # the threaded job holds both cores
    assert makespan([job, other], 3)[0] == 6.0


def test_a_job_whose_lambdas_are_jobs_of_their_own_spreads_them_over_the_cores(tmp_path):
    """m4n_table1 on ocr (``lambda_jobs``): each lambda's seconds a one-core task the job waits for,
    so 10 fits of 1..10 s end at 10 s on 10 cores, not at the 4-thread job's LPT (15 s)."""
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    config["experiments"] = ["m4n_table1"]
    path = tmp_path / "m4n_table1/ocr/M4N/split0.csv"
    path.parent.mkdir(parents=True)
    pd.DataFrame({"metric": "seconds", "value": np.arange(1.0, 11.0)}).to_csv(path, index=False)
    jobs, left = tasks(tmp_path, config)
    fits = [t for t in jobs if len(t.key) == 5]
    assert [t.key[-1] for t in fits] == [f"lambda{i}" for i in range(10)] and all(t.threads == 1 for t in fits)
    (job,) = [t for t in jobs if len(t.key) == 4]
    assert job.parts == [0.0] and job.deps == [t.key for t in fits]
    assert makespan(jobs, 10)[0] == 10.0 and makespan(jobs, 1)[0] == 55.0
    config["m4n_table1"]["lambda_jobs"] = []
    (whole,), _ = tasks(tmp_path, config)
    assert whole.threads == 4 and makespan([whole], 10)[0] == 15.0   # LPT on its 4 threads: {10, 3, 2}, {9, 4, 1}, ...
    assert left["not archived"] == len(get("m4n_table1").jobs(config)) - 1


def test_the_command_prints_the_paper_archive_on_2_64_256_cores(capsys):
    assert main(["runs", "cost", "--simulate-cores", "2", "64"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(("0 timed", "1", "2", "3", "4", "5", "6", "7", "8", "9")) and "untimed" in out[0]
    two, many = (float(line.split("cores:")[1].split()[0]) for line in out[1:3])
    assert two >= many > 0
    assert main(["runs", "cost", "--simulate-cores", "0"]) == 2
