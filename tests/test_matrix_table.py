"""The matrix experiment (``structpred.papers.matrix.table``) on the paper config: which cells are
read from m4n_table1's runs, which are fitted here, which cannot exist; its table and figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from structpred.papers.matrix.table import MatrixJob, fit_cell, relative_losses, render_matrix
from structpred.papers.registry import get
from tests.conftest import REPO

CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def test_cells_borrowed_fitted_and_impossible():
    m = get("matrix")
    jobs = m.jobs(CONFIG)
    s = CONFIG["matrix"]
    n_datasets = sum(len(t["datasets"]) for t in s["tasks"].values())
    n_rnk = len(s["tasks"]["rnk"]["datasets"])
    assert len(jobs) == (n_datasets * len(s["methods"]) - n_rnk) * s["n_splits"]    # no CRF on rankings
    assert ("rnk_vowel", "CRF", 0) not in jobs and ("rnk_vowel", "AGM", 0) in jobs
    assert "#P-hard" in m.impossible(CONFIG)[("rnk", "CRF")]
    # M3N on iris is m4n_table1's job: read from its runs, no features of its own
    assert m.job_needs(CONFIG, "iris", "M3N") == ("runs",)
    assert m.runs_source(CONFIG, "iris", "M3N") == "m4n_table1"
    assert m.run_inputs(CONFIG, "iris", "M3N") == [("iris", "M3N", None)]
    assert m.numeric_paths(CONFIG, "iris", "M3N") == get("m4n_table1").numeric_paths(CONFIG, "iris", "M3N")
    # QS is fitted here on the same features and lambda grid
    assert m.job_needs(CONFIG, "iris", "QS") == ("features",) and m.run_inputs(CONFIG, "iris", "QS") == []
    assert m.feature_settings(CONFIG, "iris") == get("m4n_table1").feature_settings(CONFIG, "iris")
    qs = m.settings(CONFIG, "iris", "QS")
    assert qs["lambdas"] == get("m4n_table1").settings(CONFIG, "iris", "M3N")["lambdas"]
    assert m.numeric_paths(CONFIG, "iris", "QS") == ("matrix.QS", "features.nystrom")


def test_a_fitted_cell_records_its_losses_and_seconds():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 4))
    y = np.argmax(X[:, :3] + 0.3 * rng.normal(size=(90, 3)), axis=1)
    parts = ((X[:50], y[:50]), (X[50:70], y[50:70]), (X[70:], y[70:]))
    for method, budget in (("QS", {"kernel": "linear"}), ("SGD", {"n_passes": 5})):
        job = MatrixJob.from_settings({"task": "mc", "method": method, "loss": "zero_one", "lambdas": [0.1],
                                       "budget": budget}, n_labels=3, random_state=0)
        record, history = fit_cell(parts, job, 0.1)
        assert set(record) == {"lam", "val_loss", "test_loss", "seconds"} and record["seconds"] > 0
        assert record["test_loss"] < 0.3                      # chance is 2/3
        assert history.empty == (method == "QS")


def test_the_table_bolds_the_best_and_marks_impossible_cells():
    table = pd.DataFrame({"task": ["rnk"] * 2 + ["mc"] * 2, "dataset": ["r", "r", "m", "m"],
                          "method": ["M3N", "QS", "M3N", "QS"], "metric": "test_loss",
                          "mean": [0.2, 0.4, 0.1, 0.05], "std": 0.01, "n_splits": 5, "reference": np.nan})
    tests = pd.DataFrame({"task": ["rnk", "rnk"], "dataset": "r", "metric": "test_loss", "method_a": ["M3N", "QS"],
                          "method_b": "M3N", "n_splits": 5, "mean_diff": [0.0, 0.2], "statistic": np.nan,
                          "p_value": [1.0, 0.01], "bold": [True, False]})
    html = render_matrix(table, tests, ["M3N", "CRF", "QS"], {("rnk", "CRF"): "needs the permanent"}, {"rnk"})
    assert "<b>20.00" in html or "<b>20.0" in html
    assert "× CRF on rnk: needs the permanent" in html and html.count("×") == 2
    rel = relative_losses(table).set_index(["task", "method"])["relative"]
    assert rel[("rnk", "QS")] == pytest.approx(2.0) and rel[("mc", "M3N")] == pytest.approx(2.0)
