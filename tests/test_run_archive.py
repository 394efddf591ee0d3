"""The run archive's recorded cost (structpred runs cost): sums of the jobs' seconds rows."""

from __future__ import annotations

import math

import pytest

from structpred.cli import main
from structpred.errors import ConfigError
from structpred.experiments.results import make_rows, write_csv
from structpred.experiments.run_archive import cost_table, cpu_model, job_costs


def _job(root, experiment, dataset, method, split, seconds, cpu=None):
    rows = [{"experiment": experiment, "dataset": dataset, "method": method, "split": split, "metric": "loss",
             "value": 0.5, "selected": True}]
    rows += [{"experiment": experiment, "dataset": dataset, "method": method, "split": split, "metric": "seconds",
              "value": s, "selected": False, "detail": cpu} for s in seconds]
    path = root / experiment / dataset / method / f"split{split}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_csv(make_rows(rows), path)
    write_csv(make_rows(rows[:1]), path.with_name(f"split{split}.history.csv"))   # histories are not jobs


@pytest.fixture
def archive(tmp_path):
    root = tmp_path / "runs"
    _job(root, "m4n", "iris", "M3N", 0, [1800.0, 1800.0], "CPU A")    # one row per lambda: summed
    _job(root, "m4n", "iris", "M3N", 1, [3600.0], "CPU B")
    _job(root, "m4n", "wine", "CRF", 0, [720.0])
    _job(root, "agm", "ck", "AGM", 0, [])                              # untimed
    return root


def test_costs_sum_the_seconds_rows_per_group(archive):
    jobs = job_costs(archive)
    assert len(jobs) == 4 and math.isnan(jobs.set_index("experiment").loc["agm", "seconds"])
    table = cost_table(archive).set_index("experiment")
    assert table.loc["m4n", ["jobs", "timed_jobs", "cpu_hours"]].tolist() == [3, 3, 2.2]
    assert table.loc["m4n", "cpu"] == "CPU A; CPU B"
    assert table.loc["agm", "timed_jobs"] == 0 and math.isnan(table.loc["agm", "cpu_hours"])   # never 0
    by = cost_table(archive, "dataset").set_index(["experiment", "method", "dataset"])
    assert by.loc[("m4n", "M3N", "iris"), "cpu_hours"] == 2.0 and by.loc[("m4n", "CRF", "wine"), "cpu_hours"] == 0.2
    with pytest.raises(ConfigError, match="unknown grouping 'split'"):
        cost_table(archive, "split")
    with pytest.raises(ConfigError, match="no run archive at"):
        cost_table(archive / "missing")


def test_the_command_prints_the_table_and_the_total(archive, capsys):
    assert main(["runs", "cost", "--archive", str(archive)]) == 0
    out = capsys.readouterr().out
    assert "total: 2.2 CPU-hours over 3 timed jobs (1 untimed)" in out
    assert main(["runs", "cost", "--archive", str(archive / "none")]) == 2
    assert "no run archive at" in capsys.readouterr().err
    assert cpu_model()


def test_result_text_leaves_out_the_timings(archive):
    from structpred.experiments.run_archive import result_text

    text = result_text(archive / "m4n" / "iris" / "M3N" / "split0.csv")
    assert "seconds" not in text and "CPU A" not in text and ",loss," in text


def test_samples_are_drawn_with_the_seed(archive):
    from structpred.experiments.run_archive import sample_jobs

    a, b = sample_jobs(archive, 2, seed=3), sample_jobs(archive, 2, seed=3)
    assert a.equals(b) and len(a) == 2
    cheap = sample_jobs(archive, 5, seed=0, max_seconds=1000)           # untimed jobs are never "cheap"
    assert list(cheap["dataset"]) == ["wine"]
    with pytest.raises(ConfigError, match="no archived jobs of qs"):
        sample_jobs(archive, 1, 0, experiments=["qs"])


@pytest.mark.slow
def test_archived_jobs_rerun_identical_and_a_tampered_one_is_caught(tmp_path, mirror):
    """structpred runs verify on two cheap jobs of the paper archive (QS robust regression needs no
    raw file), then on a copy whose archived value was altered."""
    import shutil
    from pathlib import Path

    from structpred.experiments.run_archive import sample_jobs, verify

    root = Path(__file__).resolve().parents[1]
    jobs = sample_jobs(root / "runs", 2, seed=0, experiments=["qs_robust"], max_seconds=5)
    result = verify(root / "runs", jobs, root)
    assert list(result["status"]) == ["identical", "identical"], result["detail"].tolist()
    copy = tmp_path / "runs"
    for r in jobs.itertuples():
        src = root / "runs" / r.experiment / r.dataset / r.method / f"split{r.split}.csv"
        (copy / src.relative_to(root / "runs")).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, copy / src.relative_to(root / "runs"))
    first = copy / "qs_robust" / jobs.iloc[0]["dataset"] / jobs.iloc[0]["method"] / f"split{jobs.iloc[0]['split']}.csv"
    lines = first.read_text().splitlines()
    cells = lines[1].split(",")
    cells[8] = "0.123"                                                   # the first row's value
    first.write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
    result = verify(copy, jobs, root)
    assert list(result["status"]) == ["differs", "identical"]
    assert "line 2: archived" in result["detail"].iloc[0] and "0.123" in result["detail"].iloc[0]


def test_a_plan_is_estimated_from_the_archive(archive):
    from structpred.experiments.run_archive import plan_estimate

    lines = plan_estimate({"m4n": 6, "new": 2}, archive)
    # m4n's three archived jobs took 3600, 3600 and 720 s: 2640 s a job on average
    assert lines[0].startswith("planned: 8 training jobs, ~4.4 CPU-hours where the archive timed them")
    assert lines[1].split() == ["m4n", "6", "jobs", "~", "4.40", "CPU-hours"]
    assert "unknown (never timed in" in lines[2]


def test_the_readme_costs_are_the_archives():
    """The README's total is the archive's sum (structpred runs cost), not a hand estimate."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    text = " ".join((root / "README.md").read_text(encoding="utf-8").split())
    hours, jobs = re.search(r"([\d.]+) CPU-hours over (\d+) timed jobs", text).groups()
    table = cost_table(root / "runs")
    assert (float(hours), int(jobs)) == (round(float(table["cpu_hours"].sum()), 1), int(table["timed_jobs"].sum()))


def test_the_experiments_command_lists_jobs_data_and_archive(capsys, monkeypatch):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)
    assert main(["experiments"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows["m4n_table1_code"][1:4] == ["546", "546", "2.45"]          # jobs, archived, CPU-hours
    assert rows["agm_emotion"][3] == "-"                                     # archived, never timed
    assert rows["casimir_ner_tuned"][1] == "865" and rows["qs_robust"][4] == "ok"
