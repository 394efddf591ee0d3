"""Casimir's NER experiment (casimir_ner): jobs and settings from the config, one run's records,
the curve table."""

import numpy as np
import pandas as pd
import pytest
import yaml

from structpred.errors import ConfigError
from structpred.papers.casimir import ner as casimir
from structpred.papers.casimir.names import NER_MEASURES
from structpred.papers.registry import get


@pytest.fixture(scope="module")
def paper_config():
    with open("config/config.yaml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def test_jobs_and_names_of_the_paper_config(paper_config):
    exp = get("casimir_ner")
    jobs = exp.jobs(paper_config)
    # fig2: 3 c x 5 methods x 3 seeds (reduced: the paper 10); 5a: 2 c x 6 x 3; 5b: 1 x 4 x 3;
    # 5c: 2 x 6 x 3; 5d: 1 x 6 x 3
    assert len(jobs) == 45 + 36 + 12 + 36 + 18 == len(set(jobs))
    assert ("fig2_c0.01", "Casimir-SVRG-adapt", 2) in jobs and ("fig2_c0.01", "SGD", 3) not in jobs
    assert ("fig5c_c1", "Casimir-SVRG-const_warm_start=prox-centre", 2) in jobs
    runs = exp.runs(paper_config)  # job names -> their runs, from the config (never parsed back)
    for dataset, method, _ in jobs:
        run = runs[(dataset, method)]
        assert casimir.dataset_name(run["figure"], run["c"]) == dataset
        assert casimir.method_name(run["method"], run["variant"]) == method
    assert runs[("fig5a_c1", "Casimir-SVRG-adapt_mu=8")]["swept"] == {"mu": 8}
    assert exp.curve_panels(paper_config) == ["fig2", "fig5a", "fig5b", "fig5c", "fig5d"]


def test_settings_take_the_method_then_the_figure_then_the_sweep(paper_config):
    exp = get("casimir_ner")
    sgd1 = exp.settings(paper_config, "fig2_c1", "SGD")["hyper"]
    sgd2 = exp.settings(paper_config, "fig2_c0.01", "SGD")["hyper"]
    assert (sgd1["eta0"], sgd2["eta0"], sgd1["t0"], sgd1["n_passes"]) == (0.02, 0.04, 150000, 100)
    const = exp.settings(paper_config, "fig5c_c0.01", "Casimir-SVRG-const_warm_start=prox-centre")
    assert const["hyper"] == {"n_passes": 50, "L": 128, "mu": 1, "K": 5, "mu_schedule": "const",
                              "warm_start": "prox-centre"}
    assert (const["figure"], const["c"], const["method"], const["variant"]) == (
        "fig5c", 0.01, "Casimir-SVRG-const", "warm_start=prox-centre")
    assert exp.settings(paper_config, "fig5a_c1", "Casimir-SVRG-adapt_mu=8")["hyper"]["mu"] == 8
    assert exp.settings(paper_config, "fig5d_c0.01", "Casimir-SVRG-adapt_K=10")["hyper"]["K"] == 10
    assert exp.settings(paper_config, "fig5b_c0.01", "SVRG_smoothing=nonsmooth")["hyper"]["smoothing"] == "nonsmooth"
    # a job's settings do not depend on the other figures
    other = yaml.safe_load(yaml.safe_dump(paper_config))
    del other["casimir_ner"]["figures"]["fig5a"]
    other["casimir_ner"]["run"] = ["fig2"]
    assert exp.settings(other, "fig2_c1", "SVRG") == exp.settings(paper_config, "fig2_c1", "SVRG")


def test_bad_names_are_clear_errors(paper_config):
    exp = get("casimir_ner")
    for dataset, method in (("fig2_c1", "Adam"), ("fig9_c1", "SGD"), ("fig2", "SGD"), ("fig2_c1", "SGD_eta=3")):
        with pytest.raises(ConfigError, match=f"{dataset} / {method} is not a run of casimir_ner in this configuration"):
            exp.settings(paper_config, dataset, method)
    ten = yaml.safe_load(yaml.safe_dump(paper_config))
    ten["casimir_ner"]["figures"]["fig2"]["c"] = [10]
    with pytest.raises(ConfigError, match="no eta0 for c = 10"):
        exp.settings(ten, "fig2_c10", "SGD")
    sweep = yaml.safe_load(yaml.safe_dump(paper_config))
    sweep["casimir_ner"]["figures"]["fig5a"]["sweep"] = "eta"
    with pytest.raises(ConfigError, match="unknown sweep 'eta'"):
        exp.jobs(sweep)
    sweep["casimir_ner"]["figures"]["fig5a"] = {"c": [1], "n_seeds": 1, "methods": ["Adam"]}
    with pytest.raises(ConfigError, match="unknown method 'Adam'"):
        exp.jobs(sweep)
    bad = yaml.safe_load(yaml.safe_dump(paper_config))
    bad["casimir_ner"]["run"] = ["fig2", "fig7"]
    with pytest.raises(ConfigError, match=r"unknown figures \['fig7'\]"):
        exp.jobs(bad)


def test_rules_follow_the_reference_settings():
    from structpred.outputs import Chain
    from structpred.solvers import BCFW, SGD, SVRG, CasimirSVRG
    from structpred.surrogates import Hinge, TopKSmoothedHinge

    space = Chain(3, normalize=False)
    adapt = casimir.make_rule("Casimir-SVRG-adapt", {"lr": 0.02, "mu": 2, "K": 5, "mu_schedule": "expo",
                                                     "warm_start": "extrapolation"}, space)
    assert isinstance(adapt, CasimirSVRG) and adapt.L is None and adapt.mu_schedule == "expo"
    assert isinstance(adapt.surrogate, TopKSmoothedHinge) and adapt.surrogate.K == 5 and adapt.mu0 == 2
    const = casimir.make_rule("Casimir-SVRG-const", {"L": 32, "mu": 1, "K": 2, "mu_schedule": "const",
                                                     "warm_start": "prev-iterate"}, space)
    assert const.L == 32 and const.warm_start == "prev-iterate" and const.surrogate.K == 2
    nonsmooth = casimir.make_rule("SVRG", {"lr": 0.02, "mu": 1, "K": 5, "smoothing": "nonsmooth"}, space)
    assert isinstance(nonsmooth, SVRG) and type(nonsmooth.surrogate) is Hinge and nonsmooth.mu0 is None
    assert isinstance(casimir.make_rule("SGD", {"eta0": 0.04, "t0": 10}, space), SGD)
    bcfw = casimir.make_rule("BCFW", {}, space)
    assert isinstance(bcfw, BCFW) and bcfw.averaging


def _toy_parts(seed=0, n=(30, 8, 8)):
    """A small tagging view in the ner layout, through the real window_splits."""
    from structpred.features.hashed import window_splits

    rng = np.random.default_rng(seed)
    words, pos, chunk, tags, offsets, part = [], [], [], [], [0], []
    tag_set = ["O", "I-PER", "I-LOC", "B-LOC"]
    for name, m in zip(("train", "testa", "testb"), n):
        for _ in range(m):
            T = int(rng.integers(1, 7))
            w = rng.integers(0, 12, size=T)
            t = np.where(w < 4, 0, 1 + w % 3)  # tags a function of the word: learnable
            words += [f"w{x}" for x in w]
            pos += [f"P{x % 3}" for x in w]
            chunk += ["I-NP"] * T
            tags += [tag_set[x] for x in t]
            offsets.append(offsets[-1] + T)
            part.append(name)
    arrays = {"words": np.array(words), "pos": np.array(pos), "chunk": np.array(chunk),
              "tags": np.array(tags), "offsets": np.array(offsets), "part": np.array(part)}
    return window_splits(arrays, threshold=0)


HYPER = {
    "SGD": {"n_passes": 3, "eta0": 0.05, "t0": 1000},
    "BCFW": {"n_passes": 3},
    "SVRG": {"n_passes": 3, "lr": 0.02, "mu": 1, "K": 5},
    "Casimir-SVRG-const": {"n_passes": 3, "L": 32, "mu": 1, "K": 5, "mu_schedule": "const",
                           "warm_start": "prev-iterate"},
    "Casimir-SVRG-adapt": {"n_passes": 3, "lr": 0.02, "mu": 2, "K": 5, "mu_schedule": "expo",
                           "warm_start": "extrapolation"},
}


@pytest.mark.parametrize("method", list(HYPER))
def test_one_run_records_every_epoch_from_w_zero(method):
    from structpred.outputs import Chain
    from structpred.solvers.problem import primal_objective
    from structpred.surrogates import Hinge

    parts, tags = _toy_parts()
    X, _ = parts["train"]
    job = casimir.NerJob(figure="fig2", c=0.1, method=method, variant="", hyper=HYPER[method], word_threshold=0,
                         eval_every=1)
    records = casimir.train_run(parts, tags, job, np.random.default_rng(3))
    assert [r["pass"] for r in records] == [0, 1, 2, 3]
    # w = 0: every score is 0, so each sentence's hinge is its length (unnormalised Hamming)
    assert records[0]["train_objective"] == pytest.approx(X.lengths.mean(), abs=1e-12)
    calls = 2 if "SVRG" in method else 1
    assert [r["oracle_calls_per_n"] for r in records] == [0, calls, 2 * calls, 3 * calls]
    for rec in records:
        assert set(NER_MEASURES) <= set(rec)
        for part in casimir.HELD_OUT:
            assert 0 <= rec[f"{part}_token_f1"] <= 1 and 0 <= rec[f"{part}_entity_f1"] <= 1
    assert records[-1]["train_objective"] < 0.5 * records[0]["train_objective"]
    # held-out objective = the hinge on that part + the train regulariser, at w = 0
    Xb, yb = parts["testb"]
    space = Chain(len(tags), "hamming", normalize=False, joint_map="hashed_window")
    assert records[0]["testb_objective"] == pytest.approx(
        primal_objective(Hinge(space), Xb, yb, np.zeros(2**16 - 1), 0.1 / X.n))
    again = casimir.train_run(parts, tags, job, np.random.default_rng(3))
    strip = lambda recs: [{k: v for k, v in r.items() if k != "seconds"} for r in recs]  # noqa: E731
    assert strip(again) == strip(records)


def test_job_rows_and_history_carry_the_key(monkeypatch):
    exp = get("casimir_ner")
    parts, tags = _toy_parts(1)
    settings = {"figure": "fig5d", "c": 0.01, "method": "Casimir-SVRG-adapt", "variant": "K=2",
                "hyper": dict(HYPER["Casimir-SVRG-adapt"], K=2), "word_threshold": 0, "eval_every": 2,
                "subsample": None}
    monkeypatch.setattr(casimir, "load_parts", lambda *a, **k: (parts, tags))
    rows, history = exp.run({"view": "unused"}, settings, seed=0, dataset="fig5d_c0.01",
                            method="Casimir-SVRG-adapt_K=2", split=4)
    assert list(history["pass"]) == [0, 2, 3]  # eval_every 2 and the last pass
    assert set(history["seed"]) == {4} and set(history["variant"]) == {"K=2"}
    metrics = {r["metric"]: r["value"] for r in rows}
    assert set(metrics) == set(casimir.TABLE_METRICS) | {"seconds"}
    assert metrics["oracle_calls_per_n"] == 6 and metrics["train_objective"] == history["train_objective"].iloc[-1]
    assert all(r["figure"] == "fig5d" and r["c"] == 0.01 and r["selected"] for r in rows)


def test_curve_table_means_and_sample_std_over_seeds():
    from structpred.papers.casimir.report import curve_table

    recs = []
    for seed, shift in ((0, 0.0), (1, 2.0)):
        for p in (0, 1):
            recs.append({"figure": "fig2", "c": 0.1, "method": "SVRG", "variant": np.nan, "seed": seed,
                         "pass": p, "oracle_calls_per_n": 2 * p, "seconds": 9.0 + seed,
                         "train_objective": 10.0 - p + shift, "testb_token_f1": 0.5 + 0.1 * seed})
    recs.append({"figure": "fig2", "c": 1.0, "method": "SGD", "variant": np.nan, "seed": 0, "pass": 0,
                 "oracle_calls_per_n": 0, "seconds": 0.0, "train_objective": 14.5, "testb_token_f1": 0.0})
    table = curve_table(pd.DataFrame(recs))
    assert "seconds" not in table.columns
    assert list(table["c"]) == [1.0, 1.0, 0.1, 0.1, 0.1, 0.1]  # c descending, as the paper's rows
    row = table[(table["method"] == "SVRG") & (table["pass"] == 1) & (table["measure"] == "train_objective")].iloc[0]
    assert (row["mean"], row["std"], row["n_seeds"], row["oracle_calls_per_n"]) == (10.0, np.sqrt(2.0), 2, 2)
    f1 = table[(table["method"] == "SVRG") & (table["pass"] == 0) & (table["measure"] == "testb_token_f1")].iloc[0]
    assert f1["mean"] == pytest.approx(0.55) and f1["std"] == pytest.approx(np.sqrt(0.005))


def test_curve_figures_and_table_render(tmp_path):
    from structpred.papers.casimir.report import (
        curve_figure,
        curve_table,
        render_table,
        summary_figure,
    )

    recs = [{"figure": "fig2", "c": c, "method": m, "variant": "", "seed": s, "pass": p,
             "oracle_calls_per_n": p, "train_objective": 14.5 / (1 + p + s), "testb_token_f1": 0.1 * p}
            for c in (1.0, 0.01) for m in ("SGD", "SVRG") for s in (0, 1) for p in range(3)]
    curves = curve_table(pd.DataFrame(recs))
    curve_figure("fig2", curves, tmp_path / "a.png")
    curve_figure("fig2", curves, tmp_path / "b.png")
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    table = pd.DataFrame([{"figure": "fig2", "c": 0.01, "method": "SVRG", "variant": np.nan, "metric": m,
                           "mean": 1.0, "std": 0.1, "n_seeds": 2, "reference": 14.5 if m == "initial_train_objective" else np.nan}
                          for m in casimir.TABLE_METRICS])
    page = render_table(table)
    assert "Fig. 2: convex methods (2 seeds)" in page and "1.000 ± 0.100" in page and "14.50" in page
    summary_figure(table, tmp_path / "s.png")
    assert (tmp_path / "s.png").stat().st_size > 1000
