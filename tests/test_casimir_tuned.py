"""Casimir's NER figures tuned by the paper's rule (casimir_ner_tuned): the grid's jobs, §7.3's
selection rule, and a figure job that reads its grid's runs."""

import pandas as pd
import pytest
import yaml

from structpred.errors import ConfigError
from structpred.papers.casimir import ner as casimir
from structpred.papers.casimir.tuned import choose, grid_points, point_label
from structpred.papers.registry import get
from structpred.tables.results import make_rows, write_csv
from tests.test_casimir_experiment import _toy_parts


@pytest.fixture(scope="module")
def paper_config():
    with open("config/config.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def test_grid_points_and_their_labels():
    points = grid_points({"eta0": [0.01, 0.02], "t0": [150000, 6e5]})
    assert points == [{"eta0": 0.01, "t0": 150000}, {"eta0": 0.01, "t0": 6e5},
                      {"eta0": 0.02, "t0": 150000}, {"eta0": 0.02, "t0": 6e5}]
    assert [point_label(p) for p in points[:2]] == ["eta0=0.01_t0=150000", "eta0=0.01_t0=600000"]


def test_the_rule_takes_the_lowest_objective_within_one_percent_of_the_best_f1():
    points = pd.DataFrame({"testa_token_f1": [0.800, 0.7925, 0.7915, 0.600],
                           "train_objective": [1.20, 1.00, 0.90, 0.10]}, index=["a", "b", "c", "d"])
    # 0.99 * 0.8 = 0.792: a and b qualify, c (0.7915) and d do not, whatever their objectives
    assert choose(points, "testa_token_f1", 0.01).name == "b"
    assert choose(points, "testa_token_f1", 0.0).name == "a"
    assert choose(points, "testa_token_f1", 0.5).name == "d"
    tie = pd.DataFrame({"testa_token_f1": [0.8, 0.8], "train_objective": [1.0, 1.0]}, index=["x", "y"])
    assert choose(tie, "testa_token_f1", 0.01).name == "x"           # ties: the first in grid order
    with pytest.raises(ConfigError, match="has no testa_token_f1"):
        choose(points.assign(testa_token_f1=[0.8, None, 0.7, 0.6]), "testa_token_f1", 0.01)


def test_jobs_settings_and_inputs_of_the_paper_config(paper_config):
    exp = get("casimir_ner_tuned")
    jobs = exp.jobs(paper_config)
    tuning = [j for j in jobs if j[0].startswith("tune_")]
    # 3 c x (SGD 7 x 6 + SVRG 5 x 3 + const 9 x 7 + adapt 5) points, one seed; the figures at 10 seeds:
    # fig2 3 c x 5, fig5a 2 x 6, fig5b 1 x 4, fig5c 2 x 6, fig5d 1 x 6 runs
    assert len(tuning) == 3 * 125 and {k for _, _, k in tuning} == {0}
    assert len(jobs) - len(tuning) == 10 * (15 + 12 + 4 + 12 + 6) and len(set(jobs)) == len(jobs)
    point = exp.settings(paper_config, "tune_c0.1", "SGD_eta0=0.04_t0=600000")
    assert point["hyper"] == {"n_passes": 100, "eta0": 0.04, "t0": 600000}
    assert point["eval_every"] == 100 and point["point"] == ["eta0", "t0"] and point["figure"] == "tune"
    assert point["word_threshold"] == paper_config["casimir_ner"]["word_threshold"]   # casimir_ner's data
    fig2 = exp.settings(paper_config, "fig2_c1", "Casimir-SVRG-const")
    assert fig2["tune"] == {"params": ["L", "mu"], "f1": "testa_token_f1", "within": 0.01}
    assert fig2["hyper"] == {"n_passes": 50, "K": 5, "mu_schedule": "const", "warm_start": "prox-centre"}
    sweep = exp.settings(paper_config, "fig5a_c1", "Casimir-SVRG-const_mu=8")
    assert sweep["tune"]["params"] == ["L"] and sweep["hyper"]["mu"] == 8   # the swept mu is not tuned
    assert exp.settings(paper_config, "fig2_c1", "BCFW")["tune"]["params"] == []
    inputs = exp.run_inputs(paper_config, "fig5a_c1", "Casimir-SVRG-const_mu=8")
    assert len(inputs) == 9 * 7 and all(d == "tune_c1" and m.startswith("Casimir-SVRG-const_L=") and k == 0
                                     for d, m, k in inputs)
    # Fig. 5c's prox-centre run is Fig. 2's (same settings, same seed): it reads that job, of its own seed
    assert exp.run_inputs(paper_config, "fig5c_c1", "Casimir-SVRG-const_warm_start=prox-centre") == [
        ("fig2_c1", "Casimir-SVRG-const", None)]
    assert exp.settings(paper_config, "fig5c_c1", "Casimir-SVRG-const_warm_start=prox-centre")["copy_of"] == [
        "fig2_c1", "Casimir-SVRG-const"]
    assert exp.copy_source(paper_config, "fig5c_c1", "Casimir-SVRG-const_warm_start=extrapolation") is None
    assert exp.run_inputs(paper_config, "fig2_c1", "BCFW") == []
    assert exp.run_inputs(paper_config, "tune_c1", "SGD_eta0=0.02_t0=150000") == []
    assert exp.grids(paper_config, "fig5a_c1", "Casimir-SVRG-const_mu=8") == {"L": [8, 16, 32, 64, 128, 256, 512, 1024, 2048]}
    assert exp.grids(paper_config, "tune_c1", "SGD_eta0=0.02_t0=150000") == {}
    with pytest.raises(ConfigError, match="is not a run of casimir_ner_tuned"):
        exp.settings(paper_config, "fig2_c1", "Adam")


def test_a_figure_job_trains_with_the_point_its_grid_chose(tmp_path, monkeypatch):
    exp = get("casimir_ner_tuned")
    config = {"casimir_ner": {"view": "conll2003", "word_threshold": 0, "eval_every": 1, "subsample": None,
                              "methods": {}, "run": [], "figures": {}},
              "casimir_ner_tuned": {
                  "methods": {"Casimir-SVRG-const": {"n_passes": 2, "K": 2, "mu_schedule": "const",
                                                     "warm_start": "prox-centre"}},
                  "tuning": {"f1": "testa_token_f1", "within": 0.01,
                             "grids": {"Casimir-SVRG-const": {"L": [4, 64], "mu": [1]}}},
                  "run": ["fig2"],
                  "figures": {"fig2": {"c": [0.1], "n_seeds": 1, "methods": ["Casimir-SVRG-const"]}}}}
    parts, tags = _toy_parts(2)
    monkeypatch.setattr(casimir, "load_parts", lambda *a, **k: (parts, tags))
    paths = []
    for dataset, method, split in exp.run_inputs(config, "fig2_c0.1", "Casimir-SVRG-const"):
        rows, history = exp.run({"view": "unused", "runs": []}, exp.settings(config, dataset, method), seed=0,
                                dataset=dataset, method=method, split=split)
        assert list(history["pass"]) == [0, 2]                       # evaluated at w = 0 and at the end
        values = {r["metric"]: r["value"] for r in rows}
        assert values["mu"] == 1.0 and values["L"] in (4.0, 64.0) and rows[0]["figure"] == "tune"
        paths.append(tmp_path / f"{method}.csv")
        write_csv(make_rows(rows), paths[-1])
    grid = pd.concat([pd.read_csv(p, keep_default_na=False) for p in paths])
    points = grid.pivot_table(index="variant", columns="metric", values="value", aggfunc="first")
    best = choose(points, "testa_token_f1", 0.01)
    rows, history = exp.run({"view": "unused", "runs": [str(p) for p in paths]},
                            exp.settings(config, "fig2_c0.1", "Casimir-SVRG-const"), seed=0,
                            dataset="fig2_c0.1", method="Casimir-SVRG-const", split=0)
    values = {r["metric"]: r["value"] for r in rows}
    assert (values["L"], values["mu"]) == (best["L"], best["mu"])
    # the figure's run is the tuning run of that point again (same seed): same objective
    assert values["train_objective"] == pytest.approx(best["train_objective"], rel=1e-9)  # CSV: 10 digits
    assert list(history["pass"]) == [0, 1, 2] and set(history["figure"]) == {"fig2"}
    assert exp.grids(config, "fig2_c0.1", "Casimir-SVRG-const") == {"L": [4, 64], "mu": [1]}
