"""structpred runs estimate: a table's CPU before it runs, per (dataset, method) group: recorded
by the archive, measured by one short timed fit extrapolated to the job, or borrowed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from structpred.cli import main
from structpred.errors import ConfigError
from structpred.papers.matrix import table
from structpred.papers.registry import get
from structpred.runs import estimate as estimate_module
from structpred.runs.archive import load_config
from structpred.tables.results import make_rows, write_csv
from structpred.tables.splits import save_split

ROOT = Path(__file__).resolve().parents[1]
CONFIG = load_config(ROOT)


@pytest.fixture
def split(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = np.argmax(X[:, :3], axis=1)
    path = tmp_path / "split0.npz"
    save_split(path, {"X_train": X[:30], "y_train": y[:30], "X_val": X[30:45], "y_val": y[30:45],
                      "X_test": X[45:], "y_test": y[45:]}, {"n_labels": 3})
    return path


@pytest.fixture
def clock(monkeypatch):
    """A fake process clock that each stubbed fit advances: 1 s a pass, 3 s a QS fit."""
    now = {"t": 0.0, "passes": []}

    def fit(parts, job, lam, checkpoint=None):
        n = job.budget.get("n_passes")
        now["passes"].append(n)
        now["t"] += 3.0 if n is None else float(n)
        return {}, pd.DataFrame()

    monkeypatch.setattr(table, "fit_cell", fit)
    monkeypatch.setattr(table.time, "process_time", lambda: now["t"])
    return now


def test_a_job_is_its_grid_times_the_budgets_passes_at_a_timed_passs_cpu(split, clock):
    m = get("matrix")
    settings = m.settings(CONFIG, "iris", "SGD")
    n_lambdas, full = len(settings["lambdas"]), settings["budget"]["n_passes"]
    seconds = m.time_job({"features": str(split)}, settings, seed=0, dataset="iris", method="SGD", passes=3)
    assert clock["passes"] == [1, 3]                         # a compiling fit, then the timed one
    assert seconds == pytest.approx(n_lambdas * full * 1.0)   # 3 s over 3 passes: 1 s a pass
    qs = m.time_job({"features": str(split)}, m.settings(CONFIG, "iris", "QS"), seed=0, dataset="iris", method="QS")
    assert qs == pytest.approx(n_lambdas * 3.0)
    with pytest.raises(ConfigError, match="not fitted on split features"):
        m.time_job({}, m.settings(CONFIG, "iris", "M3N"), seed=0, dataset="iris", method="M3N")
    with pytest.raises(ConfigError, match="needs n_passes"):
        m.time_job({"features": str(split)}, {**settings, "budget": {}}, seed=0, dataset="iris", method="SGD")


def test_each_group_is_recorded_measured_or_borrowed(tmp_path, split, monkeypatch):
    archive = tmp_path / "runs"
    for k, cpu in ((0, 100.0), (1, 300.0)):   # two of the 5 AGM jobs on iris archived: their mean, 200 s
        path = archive / "matrix" / "iris" / "AGM" / f"split{k}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_csv(make_rows([{"experiment": "matrix", "dataset": "iris", "method": "AGM", "split": k,
                              "metric": "seconds", "value": cpu, "selected": False}]), path)
    monkeypatch.setattr(estimate_module, "_features", lambda *a: split)
    monkeypatch.setattr(type(get("matrix")), "time_job", lambda self, *a, **k: 36.0)
    lines = []
    out = estimate_module.estimate(tmp_path, archive, "matrix", CONFIG, datasets=["iris"],
                                   methods=["M3N", "AGM", "SGD"], log=lines.append).set_index("method")
    n = CONFIG["matrix"]["n_splits"]
    assert out["how"].to_dict() == {"M3N": "borrowed", "AGM": "recorded", "SGD": "measured"}
    assert out.loc["AGM", ["jobs", "archived", "seconds_per_job"]].tolist() == [n, 2, 200.0]
    assert out.loc["AGM", "left_cpu_hours"] == pytest.approx((n - 2) * 200 / 3600)
    assert out.loc["SGD", "cpu_hours"] == pytest.approx(n * 36 / 3600) and out.loc["M3N", "cpu_hours"] == 0
    # a borrowed group: the jobs it reads are m4n_table1's, whose recorded CPU it shows (NaN: not all archived)
    assert np.isnan(out.loc["M3N", "source_cpu_hours"]) and np.isnan(out.loc["SGD", "source_cpu_hours"])
    for k in range(n):
        path = archive / "m4n_table1" / "iris" / "M3N" / f"split{k}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_csv(make_rows([{"experiment": "m4n_table1", "dataset": "iris", "method": "M3N", "split": k,
                              "metric": "seconds", "value": 720.0, "selected": False}]), path)
    out = estimate_module.estimate(tmp_path, archive, "matrix", CONFIG, datasets=["iris"], methods=["M3N"],
                                   log=lines.append).set_index("method")
    assert out.loc["M3N", "source_cpu_hours"] == pytest.approx(n * 0.2)
    assert f"matrix: iris SGD: {n} jobs, measured, 36.0 CPU-s a job" in lines
    with pytest.raises(ConfigError, match="no configured jobs"):
        estimate_module.estimate(tmp_path, archive, "matrix", CONFIG, datasets=["nowhere"])


def test_the_command_prints_the_groups_and_the_total(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert main(["runs", "estimate", "--experiment", "matrix", "--dataset", "iris", "--method", "M3N",
                 "--archive", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    assert "borrowed: 5 jobs, 0.00 CPU-hours (the jobs they read: 0.00 CPU-hours recorded, 1 groups' not all archived)" in out and out.rstrip().splitlines()[-1].startswith("total: 0.00 CPU-hours over 5 jobs")
    assert main(["runs", "estimate", "--experiment", "matrix", "--passes", "0"]) == 2
    assert "--passes takes at least 1" in capsys.readouterr().err
