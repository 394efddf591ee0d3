"""The run archive's recorded cost (structpred runs cost): sums of the jobs' seconds rows."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from structpred.cli import main
from structpred.errors import ConfigError
from structpred.tables.results import make_rows, write_csv
from structpred.report.archive_costs import job_costs
from structpred.runs.archive import cost_table, cpu_model


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
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:3]}
    # no NaN, no blank cell: an untimed group says so, a missing CPU model says not recorded, and a
    # footnote says why
    assert rows["agm"] == ["agm", "1", "0", "untimed", "not", "recorded"]
    assert rows["m4n"] == ["m4n", "3", "3", "2.20", "CPU", "A;", "CPU", "B"] and "NaN" not in out
    assert out.splitlines()[3].startswith("untimed: no job of the group recorded its fitting seconds")
    assert out.splitlines()[4].startswith("not recorded: the CPU model is recorded only by jobs run since 2026-11-27")
    assert main(["runs", "cost", "--archive", str(archive), "--by", "method"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[:5] for line in out.splitlines()[1:4]] == [
        ["agm", "AGM", "1", "0", "untimed"], ["m4n", "CRF", "1", "1", "0.20"], ["m4n", "M3N", "2", "2", "2.00"]]
    assert out.splitlines()[2].endswith("0.20 not recorded")
    assert math.isnan(cost_table(archive).set_index("experiment").loc["agm", "cpu_hours"])   # still numbers
    assert main(["runs", "cost", "--archive", str(archive / "none")]) == 2
    assert "no run archive at" in capsys.readouterr().err
    assert cpu_model()


def test_result_text_leaves_out_the_timings(archive):
    from structpred.runs.archive import result_text

    text = result_text(archive / "m4n" / "iris" / "M3N" / "split0.csv")
    assert "seconds" not in text and "CPU A" not in text and ",loss," in text
    # a refit's time (agm_srl_full's refit_seconds) is a timing too: a rerun never reproduces it
    path = archive / "m4n" / "iris" / "M3N" / "split0.csv"
    rows = pd.read_csv(path, dtype=str, keep_default_na=False)
    refit = rows.iloc[[0]].assign(metric="refit_seconds", value="1414.65")
    pd.concat([rows, refit]).to_csv(path, index=False)
    assert "refit_seconds" in path.read_text() and result_text(path) == text


def test_samples_are_drawn_with_the_seed(archive):
    from structpred.runs.archive import sample_jobs

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

    from structpred.runs.archive import sample_jobs, verify

    root = Path(__file__).resolve().parents[1]
    jobs = sample_jobs(root / "runs", 2, seed=0, experiments=["qs_robust"], max_seconds=15)   # CPU s, start-up included
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
    result = verify(copy, jobs, root, record=True)
    assert list(result["status"]) == ["differs", "identical"]
    assert "line 2: archived" in result["detail"].iloc[0] and "0.123" in result["detail"].iloc[0]
    # --record: the identical job gets its rerun's record (fresh), the altered one is marked not reproduced
    from structpred.runs.staleness import job_table

    status = {(r.dataset, r.method, r.split): r.status for r in job_table(copy).itertuples()}
    assert [status[(r.dataset, r.method, str(r.split))] for r in jobs.itertuples()] == ["stale", "fresh"]
    assert job_table(copy)["commit"].str.len().min() >= 40


def test_a_plan_is_estimated_from_the_archive(archive):
    from structpred.runs.archive import plan_estimate

    lines = plan_estimate({"m4n": 6, "new": 2}, archive)
    # m4n's three archived jobs took 3600, 3600 and 720 s: 2640 s a job on average
    assert lines[0].startswith("planned: 8 training jobs, ~4.4 CPU-hours where the archive timed them")
    assert lines[1].split() == ["m4n", "6", "jobs", "~", "4.40", "CPU-hours"]
    assert "unknown (never timed in" in lines[2]


def test_a_plan_names_its_untimed_jobs_in_the_headline_and_per_experiment(archive):
    """Untimed planned jobs are counted in the headline, never silently left out: agm's archived job
    recorded no seconds, new was never archived."""
    from structpred.runs.archive import plan_estimate

    lines = plan_estimate({"m4n": 6, "agm": 3, "new": 2}, archive)
    assert lines[0] == (f"planned: 11 training jobs, ~4.4 CPU-hours where the archive timed them (6 timed jobs, at "
                        f"its mean per job and the settings it ran); 5 jobs untimed (unknown)")
    assert lines[1].endswith(f"3 jobs   unknown (never timed in {archive}/: 1 archived job, none with its seconds)")
    assert lines[3].endswith(f"2 jobs   unknown (never timed in {archive}/: no archived job)")
    assert plan_estimate({"m4n": 6}, archive)[0].endswith("(6 timed jobs, at its mean per job and the settings it "
                                                          "ran); 0 jobs untimed (unknown)")


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
    assert rows["m4n_table1_code"][1:4] == ["546", "546", "2.70"]          # jobs, archived, CPU-hours (its last 68 jobs rerun with their CPU seconds)
    assert rows["agm_emotion_converged"][3] == "1.10"                        # rerun at c1367e4c with its CPU seconds
    assert rows["casimir_voc"][2:4] == ["0", "-"]                             # nothing archived, never timed
    assert rows["casimir_ner_tuned"][1] == "865" and rows["qs_robust"][4] == "none"     # reads no raw file


def test_the_sample_stays_within_the_total_bound(tmp_path):
    """--max-seconds bounds the sample's total estimate, not each job's: jobs are drawn in the
    seed's order while they fit; untimed ones never are; the same seed draws the same sample."""
    from structpred.runs.archive import sample_jobs

    root = tmp_path / "runs"
    for split, seconds in enumerate([40.0, 70.0, 90.0, 120.0, 150.0, 30.0, 60.0, 250.0]):
        _job(root, "qs", "robust", "QS", split, [seconds])
    _job(root, "qs", "robust", "LS", 0, [])                                # untimed
    for seed in range(20):
        sample = sample_jobs(root, 5, seed, max_seconds=200)
        assert sample["estimate"].sum() <= 200 and 1 <= len(sample) <= 5
        assert list(sample["estimate"]) == list(sample["seconds"])          # no upstream: its own seconds
        assert "LS" not in set(sample["method"])
        assert sample.equals(sample_jobs(root, 5, seed, max_seconds=200))
        # what is left out did not fit: every job not drawn would exceed the bound
        left = set(range(8)) - set(sample["split"].astype(int)) if len(sample) < 5 else set()
        seconds = [40.0, 70.0, 90.0, 120.0, 150.0, 30.0, 60.0, 250.0]
        assert all(sample["estimate"].sum() + seconds[k] > 200 for k in left)
    assert len(sample_jobs(root, 9, 0)) == 9                                # unbounded: untimed ones too
    with pytest.raises(ConfigError, match="no archived job"):
        sample_jobs(root, 1, 0, max_seconds=10)


def _tuned_job_with_grid(root, config, missing=0):
    """A casimir_ner_tuned Fig. 5a job (60 s) and the archived tuning grid it reads (10 s a point),
    less its last ``missing`` points; returns (the job's path, the grid's paths)."""
    from structpred.papers.registry import get

    grid = get("casimir_ner_tuned").run_inputs(config, "fig5a_c1", "Casimir-SVRG-adapt_mu=8")
    assert len(grid) == 5 and all(d == "tune_c1" for d, _, _ in grid)
    _job(root, "casimir_ner_tuned", "fig5a_c1", "Casimir-SVRG-adapt_mu=8", 3, [60.0])
    for d, m, k in grid[: len(grid) - missing]:
        _job(root, "casimir_ner_tuned", d, m, k, [10.0])
    return ("casimir_ner_tuned/fig5a_c1/Casimir-SVRG-adapt_mu=8/split3.csv",
            [f"casimir_ner_tuned/{d}/{m}/split{k}.csv" for d, m, k in grid])


def test_a_tuned_figure_job_reuses_its_tuning_grid_and_pays_for_what_is_missing(tmp_path):
    from pathlib import Path

    from structpred.runs.archive import history_path, load_config, reuse_plan, sample_jobs

    config = load_config(Path(__file__).resolve().parents[1])
    root = tmp_path / "runs"
    job, grid = _tuned_job_with_grid(root, config)
    for seed in range(5):                                                  # the grid is reused: its own seconds
        sample = sample_jobs(root, 1, seed, max_seconds=60, config=config)
        assert sample["estimate"].sum() <= 60
    everything = sample_jobs(root, 6, 0, config=config)
    assert everything["estimate"].sum() == 60 + 5 * 10
    mine = everything[everything["dataset"] == "fig5a_c1"]
    assert float(mine["estimate"].iloc[0]) == 60.0
    reuse, redo = reuse_plan(root, mine, config)
    assert reuse == sorted(grid + [history_path(g) for g in grid]) and redo == []   # rows and history of each
    assert reuse_plan(root, everything, config) == ([], [])                # sampled jobs are rerun, not copied

    gap = tmp_path / "gap"                                                 # two grid points not archived
    job, grid = _tuned_job_with_grid(gap, config, missing=2)
    jobs = sample_jobs(gap, 4, 0, max_seconds=1e9, config=config)
    assert len(jobs) == 4 and jobs["estimate"].sum() == pytest.approx(60 + 3 * 10 + 2 * (60 + 30) / 4)
    mine = jobs[jobs["dataset"] == "fig5a_c1"]
    reuse, redo = reuse_plan(gap, mine, config)
    assert redo == grid[3:] and reuse == sorted(grid[:3] + [history_path(g) for g in grid[:3]])
    # its rerun costs 60 s + the two missing points at the archive's mean per timed job (22.5 s)
    assert float(mine["estimate"].iloc[0]) == pytest.approx(60 + 2 * 22.5)
    bound = sample_jobs(gap, 4, 0, max_seconds=100, config=config)        # the job (105 s) no longer fits
    assert bound["estimate"].sum() <= 100 and "fig5a_c1" not in set(bound["dataset"])
    alone = tmp_path / "alone"                                             # no grid point archived: 5 x 60 s more
    _tuned_job_with_grid(alone, config, missing=5)
    assert float(sample_jobs(alone, 1, 0, config=config)["estimate"].iloc[0]) == 360.0
    with pytest.raises(ConfigError, match="no archived job's rerun fits in 100 seconds"):
        sample_jobs(alone, 1, 0, max_seconds=100, config=config)


def test_reused_upstream_files_are_placed_and_not_rerun(tmp_path):
    """The archived tuning grid of a casimir_ner_tuned Fig. 5 job, copied into a copy of the project
    after its data (faked here, as verify's first run builds it), is not planned again: Snakemake's
    dry run plans the sampled job alone."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from structpred.runs.archive import (load_config, place_upstream, reuse_plan, sample_jobs,
                                                    verify_commands)
    from structpred.workflow import project_copy

    root = Path(__file__).resolve().parents[1]
    config = load_config(root)
    jobs = sample_jobs(root / "runs", 2, seed=1, experiments=["casimir_ner_tuned"], max_seconds=200, config=config)
    jobs = jobs[jobs["dataset"].str.startswith("fig")]
    assert len(jobs) == 1
    reuse, redo = reuse_plan(root / "runs", jobs, config)
    assert len(reuse) >= 10 and redo == [] and all("/tune_c" in f for f in reuse)
    targets = [f"results/casimir_ner_tuned/{r.dataset}/{r.method}/split{r.split}.csv" for r in jobs.itertuples()]
    prepare, run = verify_commands(targets, cores=1)
    assert prepare == [*run, "--omit-from", "run_job", "select_model", "fit_lambda"] and run[3:] == [*targets, "--cores", "1",
                                                                                       "--keep-going"]
    copy = project_copy(root, tmp_path / "project", exclude=("runs/", "results/", "reports/"))
    for name in ("data/raw/conll2003/.verified", "data/processed/conll2003.npz"):    # what `prepare` builds
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes(b"")                 # now: newer than its rule's script, older than the grid
    place_upstream(root / "runs", reuse, copy)
    assert all((copy / "results" / f).is_file() for f in reuse)
    assert len({(copy / "results" / f).stat().st_mtime for f in reuse}) == 1
    env = {k: v for k, v in os.environ.items() if k != "STRUCTPRED_MIRROR"}
    proc = subprocess.run([sys.executable, *run[1:], "-n"], cwd=copy, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = proc.stdout + proc.stderr
    planned = stats[stats.index("Job stats"):].splitlines()
    assert any(line.split() == ["run_job", "1"] for line in planned), stats[-3000:]
    assert any(line.split() == ["total", "1"] for line in planned), stats[-3000:]


def test_a_rerun_past_its_timeout_is_stopped_and_reported_as_such(tmp_path):
    """--max-seconds also stops the rerun (verify's ``timeout``): the command and what it started are
    stopped, and the jobs it did not finish report ``timeout``, never ``identical``."""
    import time
    from pathlib import Path

    from structpred.runs.archive import _run_until, sample_jobs, verify

    start = time.monotonic()
    proc, stopped = _run_until(["bash", "-c", "sleep 30 & sleep 30; echo done"], tmp_path, time.monotonic() + 0.5)
    assert stopped and "done" not in proc.stdout and time.monotonic() - start < 10
    root = Path(__file__).resolve().parents[1]
    jobs = sample_jobs(root / "runs", 2, seed=0, experiments=["qs_robust"], max_seconds=15)   # CPU s, start-up included
    result = verify(root / "runs", jobs, root, timeout=0.5)
    assert list(result["status"]) == ["timeout", "timeout"] and "not finished within 0.5 s" in result["detail"].iloc[0]


def test_a_jobs_commit_is_not_dirty_for_the_archive_a_rerun_writes(tmp_path):
    """`runs rerun` archives into the worktree it runs in, chunk by chunk: the later chunks' jobs ran
    the committed code, and their records say so; a change to code still marks them "+dirty"."""
    import subprocess

    from structpred.runs.archive import job_commit

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    for name in ("runs/e/d/m/split0.csv", "reports/t.csv", "code.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("a\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    clean = job_commit(tmp_path)
    (tmp_path / "runs/e/d/m/split0.csv").write_text("b\n")
    (tmp_path / "reports/t.csv").write_text("b\n")
    assert job_commit(tmp_path) == clean and not clean.endswith("+dirty") and len(clean) == 40
    (tmp_path / "code.py").write_text("b\n")
    assert job_commit(tmp_path) == clean + "+dirty"


def test_verify_cli_answers_in_tiers_and_records_the_experiments_tier(tmp_path, mirror, monkeypatch, capsys):
    """``structpred runs verify --record``: per job the largest difference per metric, per experiment
    the tier reached (here the archive's bytes, or on another machine class within tolerance), and
    the experiment's reproduction record for this machine class."""
    import json
    import shutil
    from pathlib import Path

    from structpred.cli import main
    from structpred.runs import tolerance
    from structpred.runs.numerics import machine_class

    root = Path(__file__).resolve().parents[1]
    shutil.copytree(root / "runs" / "qs_robust", tmp_path / "runs" / "qs_robust")
    monkeypatch.chdir(root)
    code = main(["runs", "verify", "--archive", str(tmp_path / "runs"), "--experiment", "qs_robust", "--sample", "1",
                 "--max-seconds", "15", "--record"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "requiring the" in out and ("qs_robust: bitwise: 1 rerun job," in out or "qs_robust: tolerance: 1" in out)
    entry = json.loads((tmp_path / "runs" / "qs_robust" / tolerance.RECORD).read_text())[machine_class()]
    assert entry["tier"] in ("bitwise", "tolerance") and len(entry["jobs"]) == 1 and entry["cells"] > 0
    with pytest.raises(SystemExit):      # argparse: one line naming the tiers
        main(["runs", "verify", "--tolerance", "nonsense"])
    assert "invalid choice: 'nonsense'" in capsys.readouterr().err
