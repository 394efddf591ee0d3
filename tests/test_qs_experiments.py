"""QS experiments (robust regression, USPS): jobs of the paper config, data draws, model
selection against explicit refits, the rows a job writes."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from sklearn.model_selection import KFold

from structpred.errors import ConfigError
from structpred.papers.qs import robust as qs_robust, usps as qs_usps
from structpred.papers.registry import get
from structpred.tables.seeding import rng_for

CONFIG = yaml.safe_load(open("config/config.yaml"))


def test_robust_jobs_and_settings_of_the_paper_config():
    exp = get("qs_robust")
    jobs = exp.jobs(CONFIG)
    assert len(jobs) == 5 * 3 * 10 and ("n1000", "KRR", 9) in jobs
    assert exp.view(CONFIG, "n50") is None and exp.needs == ()
    assert exp.settings(CONFIG, "n50", "QS")["n_repetitions"] == 100


def test_the_wide_grid_table_draws_qs_robusts_data_on_its_own_grids():
    """qs_robust_wide: qs_robust's jobs and data (same draws and folds: on qs_robust's grids a job
    gives qs_robust's rows), its own wider grids."""
    wide, base = get("qs_robust_wide"), get("qs_robust")
    assert wide.jobs(CONFIG) == base.jobs(CONFIG)
    s = wide.settings(CONFIG, "n50", "QS")
    assert s["cauchy_scales"][-1] == 100.0 and s["sigmas"][0] == 0.00625 and s["model"] == CONFIG["qs_robust"]["model"]
    small = {**base.settings(CONFIG, "n50", "RNW"), "n_repetitions": 2, "repetitions_per_job": 2, "n_test": 50,
             "sigmas": [0.05, 0.1], "cauchy_scales": [0.3, 1.0], "cv_folds": 2}
    kw = dict(seed=0, dataset="n50", method="RNW", split=0)
    rows_wide, _ = wide.run({}, small, **kw)
    rows_base, _ = base.run({}, small, **kw)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "experiment"} for r in rows  # noqa: E731
                          if r["metric"] != "seconds"]
    assert strip(rows_wide) == strip(rows_base) and rows_wide[0]["experiment"] == "qs_robust_wide"


def test_robust_draw_follows_the_model():
    model = dict(CONFIG["qs_robust"]["model"], outlier_fraction=0.0, noise_variance=0.0)
    X, y, f = qs_robust.draw(model, 500, rng_for(0, "t"))
    assert X.shape == (500, 1) and np.all(np.abs(X) <= 1)
    np.testing.assert_allclose(y, np.sin(6 * np.pi * X[:, 0]))
    np.testing.assert_array_equal(f, y)
    model = dict(CONFIG["qs_robust"]["model"])
    _, y, f = qs_robust.draw(model, 20000, rng_for(0, "t"))
    outliers = np.abs(y - f) > 1.5  # beyond 4.7 noise std: outliers only
    assert 0.045 < outliers.mean() < 0.055  # 10% outliers, half of them beyond 1.5 in |U[-3, 3]|
    _, y, f = qs_robust.draw(dict(model, outlier_fraction=0.0), 20000, rng_for(0, "t"))
    assert np.std(y - f) == pytest.approx(np.sqrt(0.1), rel=0.02)
    a, b = qs_robust.draw(model, 30, rng_for(3, "x")), qs_robust.draw(model, 30, rng_for(3, "x"))
    np.testing.assert_array_equal(a[1], b[1])


def test_nadaraya_watson_weights_sum_to_one():
    K = np.random.default_rng(0).random((6, 4))
    W = qs_robust.nadaraya_watson(K)
    np.testing.assert_allclose(W.sum(axis=1), 1.0)
    np.testing.assert_allclose(W[2], K[:, 2] / K[:, 2].sum())


@pytest.mark.parametrize("method", ["QS", "RNW", "KRR"])
def test_robust_cross_validation_matches_explicit_refits(method):
    settings = dict(CONFIG["qs_robust"], sigmas=[0.05, 0.2], lambdas=[1e-2, 1e-4], cauchy_scales=[0.3, 1.0],
                    cv_folds=3)
    X, y, _ = qs_robust.draw(settings["model"], 60, rng_for(1, "cv"))
    chosen, means = qs_robust.cross_validate(method, X, y, settings, seed=5)
    points = qs_robust.grid(method, settings)
    folds = list(KFold(3, shuffle=True, random_state=5).split(X))
    explicit = [np.mean([np.mean(np.abs(qs_robust._fit_predict(method, X[tr], y[tr], X[va], *p) - y[va]))
                         for tr, va in folds]) for p in points]
    np.testing.assert_allclose(means, explicit, rtol=1e-7)
    np.testing.assert_equal(chosen, points[int(np.argmin(explicit))])  # (nan where a parameter does not apply)
    assert len(points) == {"QS": 8, "RNW": 4, "KRR": 4}[method]


def test_robust_cross_validation_decomposes_once_per_fold_and_bandwidth(monkeypatch):
    """Every lambda and every Cauchy scale decode from one eigendecomposition per (fold, sigma):
    the wide grid's 7 scales cost one, not 7."""
    from structpred.solvers import kernel_ridge

    calls = []
    real = kernel_ridge.eigh
    monkeypatch.setattr(kernel_ridge, "eigh", lambda *a, **k: calls.append(1) or real(*a, **k))
    settings = dict(CONFIG["qs_robust"], sigmas=[0.05, 0.2], lambdas=[1e-2, 1e-4], cauchy_scales=[0.3, 1.0, 3.0],
                    cv_folds=3)
    X, y, _ = qs_robust.draw(settings["model"], 40, rng_for(2, "cv"))
    _, means = qs_robust.cross_validate("QS", X, y, settings, seed=1)
    assert len(calls) == 3 * 2 and len(means) == 2 * 2 * 3


def test_robust_job_rows():
    settings = dict(CONFIG["qs_robust"], n_test=50, repetitions_per_job=2, n_repetitions=3, sigmas=[0.1],
                    lambdas=[1e-3], cauchy_scales=[0.3], cv_folds=2)
    exp = get("qs_robust")
    rows, history = exp.run({}, settings, seed=0, dataset="n40", method="QS", split=1)
    assert history is None
    errors = [r for r in rows if r["metric"] == "test_error"]
    assert [r["split"] for r in errors] == [2]  # block 1 of 2 repetitions holds repetition 2 only
    assert errors[0]["selected"] and errors[0]["value"] > 0
    assert {r["metric"] for r in rows if not r["selected"]} == {"sigma", "cauchy_scale"}
    again, _ = exp.run({}, settings, seed=0, dataset="n40", method="QS", split=1)
    assert [r["value"] for r in again if r["metric"] == "test_error"] == [errors[0]["value"]]
    with pytest.raises(ConfigError, match="unknown qs_robust method"):
        exp.run({}, settings, seed=0, dataset="n40", method="SVR", split=0)


def test_usps_halves_and_runs():
    X = np.random.default_rng(0).uniform(-1, 1, size=(4, 256))
    upper, lower = qs_usps.halves(X)
    np.testing.assert_allclose(upper, (X[:, :128] + 1) / 2)
    np.testing.assert_allclose(lower.sum(axis=1), 1.0)
    y = np.repeat(np.arange(10), 30)
    train, test, clf = qs_usps.draw_run(y, 100, 150, rng_for(0, "u"))
    assert np.array_equal(np.bincount(y[train]), np.full(10, 10))
    assert len(test) == 150 and len(clf) == 50
    assert len(np.unique(np.concatenate([train, test, clf]))) == 300
    with pytest.raises(ConfigError, match="leaves no image"):
        qs_usps.draw_run(y, 100, 200, rng_for(0, "u"))
    assert len(get("qs_usps").jobs(CONFIG)) == 20


def test_usps_bandwidth_sensitivity_jobs_and_settings():
    exp, base = get("qs_usps_bandwidth"), get("qs_usps")
    jobs = exp.jobs(CONFIG)
    names = ["KDE_output_sigma=0.02", "KDE_output_sigma=0.05", "KDE_output_sigma=0.1", "KDE_output_sigma=0.2", "QS"]
    assert jobs == [("usps", m, k) for m in names for k in range(10)]
    kde = exp.settings(CONFIG, "usps", "KDE_output_sigma=0.05")
    assert kde == {**base.settings(CONFIG, "usps", "KDE"), "output_sigma": 0.05, "base": "KDE"}
    assert qs_usps.space_of(kde["base"], kde).sigma == 0.05                      # trained with its bandwidth
    assert exp.settings(CONFIG, "usps", "QS")["output_sigma"] == CONFIG["qs_usps"]["output_sigma"]
    assert exp.grids(CONFIG, "usps", "QS") == {"lam": CONFIG["qs_usps"]["lambdas"]}
    with pytest.raises(ConfigError, match="'KDE' is not a run of qs_usps_bandwidth"):
        exp.settings(CONFIG, "usps", "KDE")


def test_usps_selection_matches_explicit_refits():
    from structpred.estimators import QS
    from structpred.features.kernels import median_distance

    rng = np.random.default_rng(2)
    X = rng.random((40, 6))
    Y = rng.random((40, 128)) + np.tile(X, 22)[:, :128]
    Y /= Y.sum(axis=1, keepdims=True)
    settings = {"sigma_factors": [0.5, 2.0], "lambdas": [1e-1, 1e-3], "cv_folds": 2, "output_sigma": 0.2}
    space = qs_usps.space_of("QS", settings)
    sigma, lam = qs_usps.select(space, X, Y, settings, seed=3)
    folds = list(KFold(2, shuffle=True, random_state=3).split(X))
    grid = [(f * median_distance(X), lam_) for f in settings["sigma_factors"] for lam_ in settings["lambdas"]]
    cv = [np.mean([QS(loss=space, sigma=s, lam=lm).fit(X[tr], Y[tr]).task_loss(X[va], Y[va]) for tr, va in folds])
          for s, lm in grid]
    assert (sigma, lam) == pytest.approx(grid[int(np.argmin(cv))])
