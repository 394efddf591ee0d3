"""AGM Table 2 (SRL): jobs and settings of the paper config, the two losses of the table, the
relabelling by class rank, and errors."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from structpred.data.srl import SRL_CLASSES, class_order, ordinal_loss
from structpred.errors import ConfigError
from structpred.papers.agm import srl as agm_srl
from structpred.papers.registry import get
from structpred.outputs import Tree, TreeArray

CONFIG = yaml.safe_load(open("config/config.yaml"))


def test_jobs_and_settings_of_the_paper_config():
    exp = get("agm_srl")
    assert exp.jobs(CONFIG) == [("conll2005", m, 0) for m in ("AGM", "CRF", "SSVM", "M4N")]
    s = exp.settings(CONFIG, "conll2005", "AGM")
    assert s["game"] == "exact" and s["subsample"] == {"train": 2000} and exp.view(CONFIG, "conll2005") == "conll2005"


def test_the_ordinal_loss_is_the_absolute_loss_on_ranks():
    rank, names = class_order(0)
    C, order = ordinal_loss(0)
    assert order == names and sorted(names) == sorted(SRL_CLASSES)
    i, j = np.meshgrid(np.arange(9), np.arange(9), indexing="ij")
    np.testing.assert_array_equal(C, np.abs(rank[i] - rank[j]))
    assert [names[r] for r in rank] == list(SRL_CLASSES)  # rank[k] is class k's place in the order


def test_tree_losses_per_tree_and_pooled():
    space = Tree(9, "absolute")
    y = [TreeArray(np.array([0, 1, 2]), np.array([-1, 0, 0])), TreeArray(np.array([4]), np.array([-1]))]
    pred = [TreeArray(np.array([0, 3, 2]), np.array([-1, 0, 0])), TreeArray(np.array([1]), np.array([-1]))]
    per_tree, node = agm_srl.tree_losses(space, y, pred)
    np.testing.assert_allclose(per_tree, [2 / 3, 3.0])
    assert node == pytest.approx((2 + 3) / 4)


def test_unknown_method_is_a_clear_error():
    with pytest.raises(ConfigError, match="unknown agm_srl method 'HMM'"):
        agm_srl.estimator("HMM", Tree(9, "absolute"), 0.1, get("agm_srl").settings(CONFIG, "conll2005", "AGM"), 0)


def test_the_orders_table_runs_each_order_with_agm_srl_settings():
    exp, base = get("agm_srl_orders"), get("agm_srl")
    jobs = exp.jobs(CONFIG)
    assert jobs == [(f"order{k}", m, 0) for k in range(5) for m in ("AGM", "CRF", "SSVM")]   # M4N: agm_srl only
    grid = CONFIG["agm_srl_orders"]["lambdas"]
    s = exp.settings(CONFIG, "order3", "AGM")
    assert s == {**base.settings(CONFIG, "conll2005", "AGM"), "class_order_seed": 3, "lambdas": grid}
    # SSVM's grid alone is widened below (order 2 chose 1e-6): the other methods' jobs keep their settings
    s = exp.settings(CONFIG, "order3", "SSVM")
    assert s == {**base.settings(CONFIG, "conll2005", "SSVM"), "class_order_seed": 3, "lambdas": [*grid, 1e-7, 1e-8]}
    assert "extra_lambdas" not in s
    assert exp.resumable and base.resumable
    with pytest.raises(ConfigError, match="'order9' is not a class order of agm_srl_orders"):
        exp.settings(CONFIG, "order9", "AGM")


@pytest.fixture(scope="module")
def srl_view(tmp_path_factory, mirror):
    from structpred.data.store import prepare

    path = tmp_path_factory.mktemp("srl") / "conll2005.npz"
    prepare("conll2005", mirror, path)
    return str(path)


def test_a_stopped_job_resumes_from_its_kept_fits(srl_view, tmp_path):
    exp = get("agm_srl_orders")
    settings = {**exp.settings(CONFIG, "order1", "SSVM"), "subsample": {"train": 40, "devel": 20, "test.wsj": 20},
                "n_bits": 10, "lambdas": [1e-2, 1e-3], "n_passes": 2}
    run = lambda: exp.run({"view": srl_view}, settings, seed=0, dataset="order1", method="SSVM", split=0,  # noqa: E731
                          checkpoint=tmp_path / "fits")
    rows, history = run()
    kept = sorted(p.name for p in (tmp_path / "fits").glob("*/*"))
    assert kept == ["lam=0.001.history.csv", "lam=0.001.json", "lam=0.01.history.csv", "lam=0.01.json"]
    assert {r["dataset"] for r in rows} == {"order1"} and len([r for r in rows if r["metric"] == "tree_loss"]) == 20
    again, history_again = run()                       # every fit read back: the same rows, timings included
    assert again == rows and history_again.equals(history)
    for path in (tmp_path / "fits").glob("*/lam=0.001.*"):   # a job stopped after its first lambda
        path.unlink()
    resumed, _ = run()
    strip = lambda rs: [r for r in rs if r["metric"] != "seconds"]  # noqa: E731
    assert strip(resumed) == strip(rows)


def test_lambda_on_a_subsample_then_the_refit_on_more_propositions(srl_view, tmp_path):
    """refit_train: lambda chosen on 30 training propositions, the final model fit at it on 60
    (its own kept fit), tested on section 23; without the refit the test rows are the chosen
    subsample fit's."""
    exp = get("agm_srl")
    base = {**exp.settings(CONFIG, "conll2005", "CRF"),
            "subsample": {"train": 30, "devel": 20, "test.wsj": 20, "test.brown": 15},
            "n_bits": 10, "lambdas": [1e-2, 1e-3], "n_passes": 2}
    kw = dict(seed=0, dataset="conll2005", method="CRF", split=0)
    plain, _ = exp.run({"view": srl_view}, base, **kw)
    refit, _ = exp.run({"view": srl_view}, {**base, "refit_train": 60}, checkpoint=tmp_path / "fits", **kw)
    value = lambda rows, metric: [r["value"] for r in rows if r["metric"] == metric]  # noqa: E731
    assert value(refit, "val_loss") == value(plain, "val_loss")          # the same selection fits
    chosen = {r["lam"] for r in plain if r["metric"] == "tree_loss"}
    assert {r["lam"] for r in refit if r["metric"] == "tree_loss"} == chosen
    assert value(refit, "refit_train_propositions") == [60.0]
    assert len(value(refit, "tree_loss_brown")) == 15 and len(value(refit, "node_loss_brown")) == 1   # Brown: extra
    assert value(refit, "tree_loss") != value(plain, "tree_loss") and len(value(refit, "tree_loss")) == 20
    assert len(list((tmp_path / "fits").iterdir())) == 2                 # the grid's fits and the refit's
    again, _ = exp.run({"view": srl_view}, {**base, "refit_train": 60}, checkpoint=tmp_path / "fits", **kw)
    assert again == refit                                                # everything read back
