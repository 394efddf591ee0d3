"""The matrix experiment (``structpred.papers.matrix.table``) on the paper config: which cells are
read from m4n_table1's runs, which are fitted here, which cannot exist; its table and figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from structpred.papers.matrix.table import MatrixJob, fit_cell, per_metric_rows, relative_losses, render_matrix
from structpred.errors import ConfigError
from structpred.papers.registry import get
from tests.conftest import REPO

CONFIG = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def test_cells_borrowed_fitted_and_impossible():
    m = get("matrix")
    jobs = m.jobs(CONFIG)
    s = CONFIG["matrix"]
    splits = {t: len(m.splits(CONFIG, spec["datasets"][0])) for t, spec in s["tasks"].items()}
    assert splits["mc"] == s["n_splits"] and splits["emo"] == CONFIG["agm_emotion"]["n_splits"] and splits["srl"] == 1
    n_cells = sum(len(spec["datasets"]) * len(s["methods"]) * splits[t] for t, spec in s["tasks"].items())
    n_rnk = len(s["tasks"]["rnk"]["datasets"])
    assert len(jobs) == n_cells - n_rnk * splits["rnk"]    # no CRF on rankings: every other cell exists
    assert m.impossible(CONFIG).keys() == {("rnk", "CRF")}
    assert ("rnk_vowel", "CRF", 0) not in jobs and ("rnk_vowel", "AGM", 0) in jobs
    assert "#P-hard" in m.impossible(CONFIG)[("rnk", "CRF")]
    # M3N on iris is m4n_table1's job: read from its runs, no features of its own
    assert m.job_needs(CONFIG, "iris", "M3N") == ("runs",)
    # ... a copy of rows, on one core; a cell fitted here fits the block's threads lambdas at once
    assert m.threads(CONFIG, "iris", "M3N") == 1 and m.threads(CONFIG, "iris", "QS") == s["threads"] > 1
    assert m.runs_source(CONFIG, "iris", "M3N") == "m4n_table1"
    assert m.run_inputs(CONFIG, "iris", "M3N") == [("iris", "M3N", None)]
    assert m.numeric_paths(CONFIG, "iris", "M3N") == get("m4n_table1").numeric_paths(CONFIG, "iris", "M3N")
    # QS is fitted here on the same features and lambda grid
    assert m.job_needs(CONFIG, "iris", "QS") == ("features",) and m.run_inputs(CONFIG, "iris", "QS") == []
    assert m.feature_settings(CONFIG, "iris") == get("m4n_table1").feature_settings(CONFIG, "iris")
    qs = m.settings(CONFIG, "iris", "QS")
    assert qs["lambdas"] == get("m4n_table1").settings(CONFIG, "iris", "M3N")["lambdas"]
    assert m.numeric_paths(CONFIG, "iris", "QS") == ("matrix.QS", "features.nystrom")
    assert m.numeric_paths(CONFIG, "ocr", "QS") == ("matrix.QS", "features.nystrom", "chain_game.QS")


def test_emotion_cells_follow_agm_table_1s_protocol():
    """AGM Table 1's column: SSVM, CRF and AGM read from agm_emotion's runs (its SSVM is the
    matrix's M3N), the others fitted by its protocol (lambda on the first split's hold-out, then
    each split), on the task's own grid and its 20 splits, a row per loss."""
    m, spec = get("matrix"), CONFIG["matrix"]["tasks"]["emo"]
    jobs = [j for j in m.jobs(CONFIG) if j[0] == "ck"]
    assert len(jobs) == len(CONFIG["matrix"]["methods"]) * CONFIG["agm_emotion"]["n_splits"]
    assert m.run_inputs(CONFIG, "ck", "M3N") == [("ck", "SSVM", None)] and m.job_needs(CONFIG, "ck", "M3N") == ("runs",)
    assert m.numeric_paths(CONFIG, "ck", "M3N") == ("chain_game.SSVM",)
    assert m.settings(CONFIG, "ck", "M3N")["metrics"] == CONFIG["agm_emotion"]["losses"]
    for method in ("M4N", "QS", "SGD", "Casimir-SVRG"):
        assert not m.borrowed(CONFIG, "ck", method) and m.job_needs(CONFIG, "ck", method) == ("view", "selection")
        s, grid = m.settings(CONFIG, "ck", method), spec.get("method_lambdas", {}).get(method, spec["lambdas"])
        assert s["protocol"] == "agm_emotion" and s["lambdas"] == grid and s["n_passes"] == 100
        assert m.grids(CONFIG, "ck", method) == {"lam": [float(x) for x in grid if x > 0]}
        assert m.grids(CONFIG, "ck:weighted_absolute", method) == m.grids(CONFIG, "ck", method)   # a table row's
        assert m.numeric_paths(CONFIG, "ck", method) == (f"chain_game.{method}",)
    # a borrowed cell's grid: its source job's (its rows keep the chosen lambda only)
    assert m.grids(CONFIG, "ck:absolute", "AGM") == get("agm_emotion").grids(CONFIG, "ck", "AGM")
    assert m.grids(CONFIG, "ck:absolute", "AGM")["lam"] != m.grids(CONFIG, "ck:absolute", "SGD")["lam"]
    # a method's own grid (M4N and SGD chose the task grid's top): wider than the task's, the others keep it
    assert max(m.grids(CONFIG, "ck", "M4N")["lam"]) > max(spec["lambdas"]) == max(m.grids(CONFIG, "ck", "QS")["lam"])
    assert m.view(CONFIG, "ck") == "emotion" and m.threads(CONFIG, "ck", "SGD") == 1
    rows = pd.DataFrame({"experiment": "agm_emotion", "task": "emotion", "dataset": "ck", "method": "SSVM",
                         "split": 3, "lam": [0.1, 0.1, 0.01, np.nan], "selected": [True, True, True, False],
                         "metric": ["zero_one", "zero_one_nodewise", "weighted_squared", "seconds"],
                         "value": [0.3, 0.31, 0.2, 5.0]})
    out = per_metric_rows(rows, "emo", "M3N", ["zero_one", "weighted_squared"])
    assert out[["dataset", "metric", "value", "lam"]].values.tolist()[:2] == [
        ["ck:zero_one", "test_loss", 0.3, 0.1], ["ck:weighted_squared", "test_loss", 0.2, 0.01]]
    assert out["metric"].tolist()[2:] == ["seconds"] and set(out["method"]) == {"M3N"}
    assert set(out["experiment"]) == {"matrix"} and set(out["task"]) == {"emo"}


def test_srl_cells_follow_agm_table_2s_protocol():
    """AGM Table 2's column: agm_srl's SSVM, CRF, AGM and M4N jobs read from its runs; SGD,
    Casimir-SVRG (entropy smoothing through the tree's marginals) and QS (one ridge system per tree
    shape) fitted by its protocol."""
    m = get("matrix")
    assert [j for j in m.jobs(CONFIG) if j[0] == "conll2005"] == [
        ("conll2005", meth, 0) for meth in CONFIG["matrix"]["methods"]]
    assert ("srl", "QS") not in m.impossible(CONFIG) and m.numeric_paths(CONFIG, "conll2005", "QS") == ("tree.QS",)
    assert m.run_inputs(CONFIG, "conll2005", "M4N") == [("conll2005", "M4N", None)]
    s = m.settings(CONFIG, "conll2005", "Casimir-SVRG")
    assert s["protocol"] == "agm_srl" and s["metrics"] == ["tree_loss"] and s["n_passes"] == CONFIG["agm_srl"]["n_passes"]
    assert m.job_needs(CONFIG, "conll2005", "SGD") == ("view",) and m.view(CONFIG, "conll2005") == "conll2005"
    assert m.numeric_paths(CONFIG, "conll2005", "SGD") == ("tree.SGD",)
    bad = {**CONFIG, "matrix": {**CONFIG["matrix"], "tasks": {"srl": {"source": "agm_srl", "datasets": ["conll2005"]}}}}
    with pytest.raises(ConfigError, match="needs metrics"):
        m.settings(bad, "conll2005", "SGD")


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


def test_the_report_shows_the_columns_whose_jobs_are_all_archived_and_names_the_rest(tmp_path, capsys):
    """``report rerender`` builds the matrix from its complete datasets (SRL's seven archived cells),
    says in sentences which method is best and which are not significantly worse, and lists every
    other configured dataset as pending."""
    import shutil

    from structpred.cli import main

    root = REPO
    config = yaml.safe_load((root / "config/config.yaml").read_text())
    config["report"] = {**config["report"], "dir": str(tmp_path / "reports")}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    shutil.copytree(root / "runs/matrix/conll2005", tmp_path / "runs/matrix/conll2005")
    (tmp_path / "runs/matrix/ck/M3N").mkdir(parents=True)      # an incomplete column stays out
    shutil.copy(root / "runs/matrix/ck/M3N/split0.csv", tmp_path / "runs/matrix/ck/M3N/split0.csv")
    assert main(["report", "rerender", "matrix", "--archive", str(tmp_path / "runs"), "--config",
                 str(tmp_path / "config.yaml"), "--no-index"]) == 0
    out = capsys.readouterr().out
    assert "its table has the 1 of 21 datasets whose jobs all are" in out
    table = pd.read_csv(tmp_path / "reports/tables/matrix.csv")
    tests = pd.read_csv(tmp_path / "reports/tables/matrix_tests.csv")
    assert set(table["dataset"]) == {"conll2005:tree_loss"} and len(table) == 7
    assert (tmp_path / "reports/figures/matrix.png").stat().st_size > 10_000   # drawn with the tests' marks
    # one lambda per method for all 5267 test trees, on the grid of the job that chose it
    selection = pd.read_csv(tmp_path / "reports/tables/matrix_selection.csv").set_index("method")
    assert (selection["n_runs"] == 1).all() and selection.loc["CRF", "grid_size"] == 3
    assert selection.loc["SGD", "grid_max"] == 1 and selection.loc["SGD", "grid_size"] == 5
    html = get("matrix").render(table, tests, config)
    best = table.loc[table["mean"].idxmin()]
    bold = set(tests.loc[tests["bold"] & (tests["method_a"] != best["method"]), "method_a"])
    sentence = next(line for line in html.splitlines() if "lowest mean test loss" in line)
    assert f"{best['method']} has the lowest mean test loss, {best['mean']:.4f} over 5267 test examples" in sentence
    assert all(m in sentence.split("not significantly worse")[0] for m in bold)
    assert all(m in sentence.split("significantly worse:")[1] for m in set(table["method"]) - bold - {best["method"]})
    assert "Not in the matrix yet" in html and "emo: ck" in html and "seq: ocr" in html


def test_each_cells_cpu_is_its_own_jobs_or_its_source_jobs():
    """The page's cost table: a fitted cell's recorded CPU is the matrix job's, a borrowed cell's
    that of the source job whose rows it reads (the matrix's job only reads them)."""
    import re

    from structpred.papers.matrix.table import _duration
    from structpred.report.archive_costs import job_costs

    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    html = get("matrix").costs(lambda e: job_costs(REPO / "runs", e), config)
    row = re.search(r"<td class=l>srl</td><td class=l>conll2005</td>(.*?)</tr>", html).group(1)
    cells = dict(zip(config["matrix"]["methods"], re.findall(r"<td>(.*?)</td>", row)))
    own = job_costs(REPO / "runs", "matrix").set_index(["dataset", "method"])["seconds"]
    source = job_costs(REPO / "runs", "agm_srl").set_index(["dataset", "method"])["seconds"]
    assert cells["SGD"].split(" w")[0] == _duration(own[("conll2005", "SGD")])        # fitted here
    assert cells["QS"].split(" w")[0] == _duration(own[("conll2005", "QS")])
    assert cells["CRF"].split(" w")[0] == _duration(source[("conll2005", "CRF")])     # agm_srl's job
    assert cells["M3N"].split(" w")[0] == _duration(source[("conll2005", "SSVM")])    # its SSVM


def test_the_pair_sentences_count_wins_and_significant_ones():
    from structpred.papers.matrix.table import pair_sentences

    means = {("a", "M3N"): 0.30, ("a", "M4N"): 0.20, ("a", "QS"): 0.21,
             ("b", "M3N"): 0.10, ("b", "M4N"): 0.15, ("b", "QS"): 0.40,
             ("c", "M3N"): 0.50, ("c", "M4N"): 0.45, ("c", "QS"): 0.60}
    table = pd.DataFrame([{"task": "t", "dataset": d, "method": m, "metric": "test_loss", "mean": v}
                          for (d, m), v in means.items()])
    p = {("a", "M4N", "M3N"): 0.01, ("b", "M4N", "M3N"): 0.2, ("c", "M4N", "M3N"): 0.3,
         ("a", "QS", "M4N"): 0.5, ("b", "QS", "M3N"): 0.001, ("c", "QS", "M4N"): 0.04}
    best = {"a": "M4N", "b": "M3N", "c": "M4N"}
    tests = pd.DataFrame([{"task": "t", "dataset": d, "metric": "test_loss", "method_a": a, "method_b": b,
                           "p_value": v, "bold": (v >= 0.05) if b == best[d] else np.nan}
                          for (d, a, b), v in p.items()])
    lines = pair_sentences(table, tests)
    assert lines[0] == ("M4N has a lower mean test loss than M3N on 2 of 3 datasets (1 significantly); "
                        "M3N lower on 1 (0 significantly).")
    assert lines[-1] == "QS is the best or not significantly worse on 1 of 3 datasets (t a)."
    assert len(lines) == 2            # no AGM, CRF, SGD or Casimir-SVRG cells: no sentence on them


def test_the_sentences_say_where_too_few_splits_leave_the_test_powerless():
    from structpred.papers.matrix.table import summary_sentences
    from structpred.tables.significance import wilcoxon_pvalue

    # over 5 splits even a method worse on every split is not significantly worse; over 6 it can be
    assert wilcoxon_pvalue(np.zeros(5), np.arange(1, 6.0))[1] == 2 / 2 ** 5
    assert wilcoxon_pvalue(np.zeros(6), np.arange(1, 7.0))[1] == 2 / 2 ** 6 < 0.05
    table = pd.DataFrame([{"task": t, "dataset": d, "method": m, "metric": "test_loss", "mean": v, "n_splits": n}
                          for t, d, n in (("ord", "x", 5), ("ord", "y", 5), ("emo", "z", 20))
                          for m, v in (("M3N", 0.2), ("QS", 0.3))])
    tests = pd.DataFrame([{"task": t, "dataset": d, "metric": "test_loss", "method_a": "QS", "method_b": "M3N",
                           "p_value": p, "bold": p >= 0.05} for t, d, p in (("ord", "x", 0.0625), ("ord", "y", 0.0625),
                                                                          ("emo", "z", 1e-4))])
    lines = summary_sentences(table, tests, (), lambda d: "splits")
    assert lines[0].startswith("<b>ord, x</b>: M3N has the lowest mean test loss, 0.2000 over 5 splits; QS is not")
    assert lines[2].startswith("<b>emo, z</b>: M3N has the lowest mean test loss, 0.2000 over 20 splits; every other")
    assert lines[3].startswith("On ord each cell has 5 splits") and "2/2^5 = 0.0625, not below 0.05" in lines[3]
    assert len(lines) == 4           # one such sentence for the task, none for the 20-split one


def test_a_cells_training_subsample_cuts_the_training_part_only(tmp_path):
    """train_subsample: a documented share of each split's training examples (whole sequences on
    OCR), seeded by dataset and split; the validation and test parts whole; only for cells fitted here."""
    from structpred.errors import ConfigError
    from structpred.papers.matrix.table import _training_split
    from structpred.tables.splits import save_split, subsample_train

    rng = np.random.default_rng(1)
    plain = {"X_train": rng.normal(size=(40, 3)), "y_train": np.arange(40), "index_train": np.arange(40) + 100,
             "X_val": np.zeros((5, 3)), "y_val": np.zeros(5, int), "X_test": np.ones((6, 3)), "y_test": np.ones(6, int)}
    cut = subsample_train(plain, 0.25, np.random.default_rng(0))
    assert len(cut["y_train"]) == 10 and np.all(np.diff(cut["y_train"]) > 0)           # kept in order
    assert np.array_equal(cut["X_train"], plain["X_train"][cut["y_train"]])
    assert np.array_equal(cut["index_train"], cut["y_train"] + 100) and cut["X_val"] is plain["X_val"]
    offsets = np.array([0, 2, 5, 6, 10, 12])                 # 5 words of 2, 3, 1, 4, 2 letters
    seq = {"X_train": np.arange(12.0)[:, None], "y_train": np.arange(12), "offsets_train": offsets,
           "index_train": np.arange(5), "groups_train": np.array([0, 1, 0, 1, 0]), "X_val": np.zeros((1, 1))}
    cut = subsample_train(seq, 0.6, np.random.default_rng(0))
    words = cut["index_train"]
    assert len(words) == 3 and np.array_equal(cut["groups_train"], seq["groups_train"][words])
    assert cut["y_train"].tolist() == [i for w in words for i in range(offsets[w], offsets[w + 1])]
    assert np.array_equal(np.diff(cut["offsets_train"]), np.diff(offsets)[words])
    with pytest.raises(ConfigError, match="a fraction in"):
        subsample_train(plain, 1.5, np.random.default_rng(0))
    # the cell's settings carry it, its job file draws it by dataset and split
    config = {**CONFIG, "matrix": {**CONFIG["matrix"], "tasks": {**CONFIG["matrix"]["tasks"], "mc": {
        **CONFIG["matrix"]["tasks"]["mc"], "train_subsample": {"AGM": 0.5}}}}}
    m = get("matrix")
    assert m.settings(config, "iris", "AGM")["train_fraction"] == 0.5 and "train_fraction" not in m.settings(config, "iris", "SGD")
    path = tmp_path / "split0.npz"
    save_split(path, plain, {"n_labels": 3})
    a, _ = _training_split(path, m.settings(config, "iris", "AGM"), 0, "iris", 3)
    b, _ = _training_split(path, m.settings(config, "iris", "AGM"), 0, "iris", 3)
    c, _ = _training_split(path, m.settings(config, "iris", "AGM"), 0, "iris", 4)
    assert len(a["y_train"]) == 20 and np.array_equal(a["y_train"], b["y_train"]) and not np.array_equal(a["y_train"], c["y_train"])
    assert len(_training_split(path, m.settings(config, "iris", "SGD"), 0, "iris", 3)[0]["y_train"]) == 40
    bad = {**config, "matrix": {**config["matrix"], "tasks": {**config["matrix"]["tasks"], "mc": {
        **config["matrix"]["tasks"]["mc"], "train_subsample": {"M3N": 0.5}}}}}
    with pytest.raises(ConfigError, match="only a cell fitted here"):
        m.settings(bad, "iris", "M3N")


def test_a_fitted_cells_own_grid_widens_the_sources_and_keeps_its_fits():
    """method_lambdas: a fitted cell's own grid on a task fitted on split features (OCR's SGD and
    QS chose the bottom of m4n_table1's); a borrowed cell keeps its source's grid;
    the fit cache's key leaves the grid out, so a widened grid fits only its new lambdas."""
    m, spec = get("matrix"), CONFIG["matrix"]["tasks"]["seq"]
    source = get("m4n_table1").settings(CONFIG, "ocr", "M3N")["lambdas"]
    sgd = m.settings(CONFIG, "ocr", "SGD")["lambdas"]
    assert sgd == spec["method_lambdas"]["SGD"] and sgd[:len(source)] == source and min(sgd) < min(source)
    for method in ("QS", "SGD", "Casimir-SVRG", "AGM"):
        assert m.settings(CONFIG, "ocr", method)["lambdas"] == spec["method_lambdas"].get(method, source)
    assert m.settings(CONFIG, "iris", "SGD")["lambdas"] == get("m4n_table1").settings(CONFIG, "iris", "M3N")["lambdas"]
    # a borrowed cell is its source's job, on its source's grid (the smoke config's merged grids name them)
    ignored = {**CONFIG, "matrix": {**CONFIG["matrix"], "tasks": {**CONFIG["matrix"]["tasks"], "seq": {
        **spec, "method_lambdas": {"M3N": [1.0]}}}}}
    assert m.settings(ignored, "ocr", "M3N") == m.settings(CONFIG, "ocr", "M3N") and "lambdas" not in m.settings(CONFIG, "ocr", "M3N")
    wide = m.settings(CONFIG, "ocr", "SGD")
    key = lambda settings, split=0: m.fit_key(settings, seed=0, dataset="ocr", method="SGD", split=split)  # noqa: E731
    assert key(wide) == key({**wide, "lambdas": source}) != key({**wide, "budget": {"n_passes": 2}})
    assert key(wide) != key(wide, split=1)
