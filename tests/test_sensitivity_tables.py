"""The sensitivity tables of the departures' causes: M4N Table 1's ordinal protocol variants
(``m4n_ordinal_protocol``), QS's robust test error under every definition (``qs_robust_metrics``),
MovieLens's rank loss under every normalisation (``qs_movielens_normalisation``) and AGM Table 2's
CRF decoded three ways (``agm_srl_decoding``); the registry's ``runs_of`` and ``reference_key``."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
import yaml

from structpred.data.discretize import BINNINGS, SCHEMES, bin_target
from structpred.errors import ConfigError, DataError
from structpred.papers.agm import srl_decoding as agm_srl_decoding
from structpred.papers.m4n import protocol as m4n_protocol
from structpred.papers.qs import movielens_normalisation as qsn, robust_metrics as qrm
from structpred.papers.registry import get

CONFIG = yaml.safe_load(open("config/config.yaml"))


# --- binning on the log target --------------------------------------------------------------

def test_kmeans_log_is_kmeans_on_the_logarithm_with_edges_in_target_units():
    rng = np.random.default_rng(0)
    t = np.exp(rng.normal(3.0, 1.0, 300))
    y, edges = bin_target(t, 6, "kmeans_log")
    y_log, edges_log = bin_target(np.log(t), 6, "kmeans")
    assert np.array_equal(y, y_log)
    assert np.allclose(edges[1:-1], np.exp(edges_log[1:-1])) and edges[0] == t.min() and edges[-1] == t.max()
    assert np.all(np.diff(y[np.argsort(t)]) >= 0)                  # monotone in the target
    assert "kmeans_log" in SCHEMES and "kmeans_log" not in BINNINGS  # the audit lists its own schemes
    with pytest.raises(DataError, match="positive target"):
        bin_target(t - t.min(), 6, "kmeans_log")


# --- m4n_ordinal_protocol -------------------------------------------------------------------

def test_protocol_jobs_and_settings_change_one_thing_of_table1():
    exp = get("m4n_ordinal_protocol")
    t1 = get("m4n_table1")
    jobs = exp.jobs(CONFIG)
    assert ("machine@table1", "M3N", 0) in jobs and len({d for d, _, _ in jobs}) >= 7
    assert exp.view(CONFIG, "machine@kmeans_log") == "machine"
    base = exp.settings(CONFIG, "machine@table1", "M4N")
    assert {k: base[k] for k in t1.settings(CONFIG, "machine", "M4N")} == t1.settings(CONFIG, "machine", "M4N")
    assert base["binning"] == "kmeans" and base["loss_scale"] == "absolute" and base["fractions"] == [0.6, 0.2, 0.2]
    assert exp.settings(CONFIG, "machine@equal_width_log", "M3N")["binning"] == "equal_width_log"
    assert exp.settings(CONFIG, "machine@loss_normalised", "M3N")["loss_scale"] == "normalised"
    assert exp.settings(CONFIG, "machine@split_70_15_15", "CRF")["fractions"] == [0.7, 0.15, 0.15]
    assert exp.numeric_paths(CONFIG, "machine@table1", "CRF") == ("multiclass.CRF", "features.nystrom")
    with pytest.raises(ConfigError, match="unknown variant"):
        exp.settings(CONFIG, "machine@nope", "M3N")
    with pytest.raises(ConfigError, match="is not <view>@<variant>"):
        m4n_protocol.parse_dataset("machine")
    with pytest.raises(ConfigError, match="not an ordinal dataset"):
        exp.settings(CONFIG, "iris@table1", "M3N")


def test_a_shrunk_table1_leaves_out_the_views_it_does_not_list():
    config = {**CONFIG, "m4n_table1": {**CONFIG["m4n_table1"],
                                       "tasks": {"ord": {"loss": "ordinal", "datasets": ["machine"]}}},
              "m4n_ordinal_protocol": {**CONFIG["m4n_ordinal_protocol"],
                                       "runs": {"machine": {"variants": ["table1"], "methods": ["M3N"]},
                                                "auto": {"variants": ["table1"]}}}}
    assert {d for d, _, _ in get("m4n_ordinal_protocol").jobs(config)} == {"machine@table1"}


@pytest.fixture(scope="module")
def ordinal_view(tmp_path_factory):
    """A tiny ordinal view: 60 rows, a skewed positive target cut into 4 equal-frequency labels."""
    from structpred.data.discretize import equal_frequency_bins

    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3))
    target = np.exp(X[:, 0] + 0.3 * rng.normal(size=60))
    path = tmp_path_factory.mktemp("ord") / "machine.npz"
    meta = {"parsed": [3, 60, 4], "task": "ord", "view": "machine"}
    np.savez(path, meta=np.array(json.dumps(meta)), X=X, y=equal_frequency_bins(target, 4), target=target)
    return str(path)


def _tiny(settings):
    return {**settings, "lambdas": [0.25, 0.0625], "n_passes": 3, "n_components": 10, "eval_every": None,
            "oracle_iterations": 3 if settings["method"] == "M4N" else None}


def test_protocol_variants_share_table1s_rows_and_report_losses_in_absolute_units(ordinal_view):
    exp = get("m4n_ordinal_protocol")
    run = lambda variant, method: exp.run(  # noqa: E731
        {"view": ordinal_view}, _tiny(exp.settings(CONFIG, f"machine@{variant}", method)), seed=0,
        dataset=f"machine@{variant}", method=method, split=1)
    rows, _ = run("table1", "M3N")
    assert {r["variant"] for r in rows} == {"table1"} and {r["dataset"] for r in rows} == {"machine"}
    # the same split and centres as a Table 1 job: run_job on the same features gives the same rows
    from structpred.data.store import load
    from structpred.papers.m4n.tables import M4NJob, run_job
    from structpred.tables.splits import SplitFeatures, build_split_features

    arrays, _ = load(ordinal_view)
    s = _tiny(exp.settings(CONFIG, "machine@table1", "M3N"))
    f = build_split_features(arrays, SplitFeatures(fractions=s["fractions"], n_components=10, seed=0, binning="kmeans"),
                             view="machine", split=1)
    fits = {k: s[k] for k in get("m4n_table1").settings(CONFIG, "machine", "M3N")}   # Table 1's keys, tiny values
    job = M4NJob.for_split(fits, n_labels=4, seed=0, dataset="machine", split=1)
    direct, _ = run_job(f, job, experiment="m4n_ordinal_protocol", dataset="machine", method="M3N", split_index=1)
    strip = lambda rs: [{k: v for k, v in r.items() if k != "variant"} for r in rs if r["metric"] != "seconds"]  # noqa: E731
    assert strip(rows) == strip(direct)
    # trained on |i - j| / 3, the losses are reported in |i - j| (integers over the test rows, times 1/n)
    scaled, _ = run("loss_normalised", "M3N")
    n_test = len(f["y_test"])
    for r in scaled:
        if r["metric"] == "test_loss":
            assert abs(r["value"] * n_test - round(r["value"] * n_test)) < 1e-9
    assert m4n_protocol.scaled_rows([{"metric": "test_loss", "value": 0.5}, {"metric": "gap", "value": 0.5}], 3.0) \
        == [{"metric": "test_loss", "value": 1.5}, {"metric": "gap", "value": 0.5}]


def test_a_variant_table_sets_the_papers_cell_beside_every_variant(tmp_path):
    from structpred.report.aggregate import _table_and_tests

    rows = [{"experiment": "m4n_ordinal_protocol", "task": "ord", "dataset": "machine", "method": m, "split": k,
             "lam": 0.5, "selected": True, "metric": "test_loss", "value": v + 0.01 * k, "reference": None,
             "detail": None, "variant": var}
            for var, v in (("table1", 0.5), ("kmeans_log", 0.7)) for m in ("M3N", "CRF") for k in range(4)]
    table, tests = _table_and_tests("m4n_ordinal_protocol", pd.DataFrame(rows), "config/references.yaml", CONFIG)
    assert list(table.columns[:5]) == ["task", "dataset", "method", "variant", "metric"]
    paper = table.set_index(["method", "variant"])["reference"]
    assert paper[("M3N", "table1")] == paper[("M3N", "kmeans_log")] == 0.634
    assert paper[("CRF", "kmeans_log")] == 0.628
    assert set(tests["variant"]) == {"table1", "kmeans_log"}


# --- qs_robust_metrics ----------------------------------------------------------------------

def test_every_definition_of_the_test_error():
    pred, f, y = np.array([1.0, 2.0, 0.0]), np.array([0.0, 2.0, 0.0]), np.array([0.0, 0.0, 3.0])
    e = qrm.errors(pred, f, y)
    assert e["mse_f"] == pytest.approx(1 / 3) and e["rmse_f"] == pytest.approx(np.sqrt(1 / 3))
    assert e["mae_f"] == pytest.approx(1 / 3) and e["root_mae_f"] == pytest.approx(np.sqrt(1 / 3))
    assert e["mse_y"] == pytest.approx((1 + 4 + 9) / 3) and e["mae_y"] == pytest.approx(2.0)
    assert set(e) == set(qrm.DEFINITIONS)


def test_the_robust_metrics_job_refits_qs_robusts_choices_and_reproduces_its_error(tmp_path):
    from structpred.tables.results import make_rows, write_csv

    exp, base = get("qs_robust_metrics"), get("qs_robust")
    assert exp.runs_of == "qs_robust" and exp.run_inputs(CONFIG, "n50", "QS") == [("n50", "QS", None)]
    settings = {**base.settings(CONFIG, "n50", "QS"), "n_test": 60, "n_repetitions": 2, "repetitions_per_job": 2,
                "cv_folds": 2, "sigmas": [0.1, 0.2], "lambdas": [1e-2, 1e-4], "cauchy_scales": [0.3, 1.0]}
    for method in ("QS", "KRR", "RNW"):
        rows, _ = base.run({}, settings, seed=0, dataset="n50", method=method, split=0)
        path = tmp_path / f"{method}.csv"
        write_csv(make_rows(rows), path)
        out, _ = exp.run({"runs": [str(path)]}, {**settings, "definitions": list(qrm.DEFINITIONS)}, seed=0,
                         dataset="n50", method=method, split=0)
        assert max(abs(r["value"]) for r in out if r["metric"] == "archived_diff") < 1e-9
        got = {(r["split"], r["definition"]): r["value"] for r in out if r["metric"] == "test_error"}
        assert len(got) == 2 * len(qrm.DEFINITIONS)
        archived = {r["split"]: r["value"] for r in rows if r["metric"] == "test_error"}
        assert all(abs(got[(k, "mse_f")] - v) < 1e-9 for k, v in archived.items())


def test_nearness_counts_cells_within_the_ledgers_tolerance():
    table = pd.DataFrame({"definition": ["a", "a", "b", "b"], "mean": [0.1, 0.5, 0.2, 0.2],
                          "reference": [0.105, 1.0, 0.2, np.nan]})
    near = qrm.nearness(table, "definition", {"abs": 0.01, "rel": 0.1}).set_index("definition")
    assert near.loc["a", "within_tolerance"] == 1 and near.loc["a", "cells"] == 2
    assert near.loc["b", "cells"] == 1 and near.loc["b", "mean_abs_log_ratio"] == 0.0


# --- qs_movielens_normalisation ------------------------------------------------------------

def test_pair_terms_against_enumeration():
    from structpred.outputs import PairwiseRanking

    rng = np.random.default_rng(1)
    for _ in range(20):
        m = int(rng.integers(2, 7))
        r = rng.integers(1, 6, m).astype(float)
        pos = rng.permutation(m)
        L = Z = P = 0.0
        for j, k in itertools.permutations(range(m), 2):
            if r[j] > r[k]:
                Z += r[j] - r[k]
                P += 1
                L += (r[j] - r[k]) * (pos[j] > pos[k])   # the better movie ranked below
        assert qsn.pair_terms(r, pos) == pytest.approx((L, Z, P, m * (m - 1) / 2))
        if Z > 0:   # the table's own normalisation is qs_movielens's loss
            assert L / Z == pytest.approx(float(PairwiseRanking(m).loss(r, pos)))


def test_normalised_losses_per_user_and_pooled():
    terms = np.array([[1.0, 4.0, 2.0, 3.0], [0.0, 0.0, 0.0, 1.0], [3.0, 6.0, 3.0, 6.0]])   # a tie-only user
    out = qsn.normalised_losses(terms)
    assert out["max"] == pytest.approx((0.25 + 0 + 0.5) / 3) and out["pairs"] == pytest.approx((0.5 + 0 + 1) / 3)
    assert out["all_pairs"] == pytest.approx((1 / 3 + 0 + 0.5) / 3) and out["pooled_max"] == pytest.approx(0.4)


def test_archived_choice_reads_lambda_and_qs_constant():
    rows = pd.DataFrame([
        {"metric": "rank_loss", "selected": True, "lam": 1000.0, "value": 0.33},
        {"metric": "intercept", "selected": False, "lam": 1000.0, "value": 10.0},
        {"metric": "cv_rank_loss", "selected": False, "lam": 1.0, "value": 0.4}])
    assert qsn.archived_choice(rows) == (10.0, 1000.0, 0.33)
    assert np.isnan(qsn.archived_choice(rows.iloc[[0]])[0])
    exp = get("qs_movielens_normalisation")
    assert exp.runs_of == "qs_movielens" and exp.jobs(CONFIG) == get("qs_movielens").jobs(CONFIG)


def test_runs_of_names_the_other_tables_files(tmp_path):
    from structpred.runs.archive import upstream

    files, selection = upstream(CONFIG, "qs_robust_metrics", "n100", "KRR", 3)
    assert files == ["qs_robust/n100/KRR/split3.csv"] and selection is None
    files, _ = upstream(CONFIG, "qs_movielens_normalisation", "movielens", "Hinge", 7)
    assert files == ["qs_movielens/movielens/Hinge/split7.csv"]


# --- agm_srl_decoding -----------------------------------------------------------------------

def test_order_map_and_cost_space():
    from structpred.data.srl import class_order
    from structpred.outputs import TreeArray

    assert np.array_equal(agm_srl_decoding.order_map(2, 2), np.arange(9))
    r1, _ = class_order(1)
    r3, _ = class_order(3)
    p = agm_srl_decoding.order_map(1, 3)
    assert np.array_equal(p[r1], r3)          # class c: rank r1[c] under order 1 -> rank r3[c] under order 3
    space = agm_srl_decoding.cost_space(1, 3, 9)
    parents = np.array([-1, 0, 0, 1])
    y, pred = TreeArray(np.array([0, 4, 8, 2]), parents), TreeArray(np.array([1, 4, 0, 2]), parents)
    expected = np.mean(np.abs(p[[0, 4, 8, 2]] - p[[1, 4, 0, 2]]))
    assert float(space.loss(y, pred)) == pytest.approx(expected)


def test_decodings_on_a_small_tree():
    """bayes for the training order is the space's own Bayes decoding, marginal the per-node argmax
    of the marginals, map the max-product labelling; marginal and map do not depend on the order."""
    from structpred.outputs import Tree

    rng = np.random.default_rng(0)
    parents = np.array([-1, 0, 0, 1, 1])
    space = Tree(9, "absolute", joint_map="tree_hashed")
    from structpred.outputs import TreeArray

    v = TreeArray(rng.normal(size=space.dim(5)), parents)

    class Fitted:
        def predict_proba(self, X):
            return [space.marginals(v)]

        def scores(self, X):
            return [v]

    out = agm_srl_decoding.decode_all(Fitted(), space, None, 0, [0, 2])
    m = space.marginals(v)
    U = np.asarray(m)[: 5 * 9].reshape(5, 9)
    assert np.array_equal(np.asarray(out[("bayes", 0)][0]), np.asarray(space.bayes_decode([m])[0]))
    assert np.array_equal(np.asarray(out[("marginal", 0)][0]), U.argmax(axis=1))
    assert np.array_equal(np.asarray(out[("map", 2)][0]), np.asarray(space.decode([v])[0]))
    assert out[("marginal", 0)] is out[("marginal", 2)] and out[("map", 0)] is out[("map", 2)]


def test_decoding_fits_and_settings():
    exp = get("agm_srl_decoding")
    assert [d for d, _, _ in exp.jobs(CONFIG)][:2] == ["full", "subsample"]
    s = exp.settings(CONFIG, "full", "CRF")
    assert s["subsample"] == {"train": None} and s["source"] == "agm_srl_full" and s["cost_orders"] == [0, 1, 2, 3, 4]
    s = exp.settings(CONFIG, "order3", "CRF")
    assert s["subsample"] == {"train": 2000} and s["class_order_seed"] == 3 and s["lam"] == 1e-4
    with pytest.raises(ConfigError, match="only the CRF"):
        exp.settings(CONFIG, "full", "AGM")


@pytest.fixture(scope="module")
def srl_view(tmp_path_factory, mirror):
    from structpred.data.store import prepare

    path = tmp_path_factory.mktemp("srl") / "conll2005.npz"
    prepare("conll2005", mirror, path)
    return str(path)


def test_the_decoding_job_refits_an_archived_crf_and_its_bayes_row_is_the_tables(srl_view, tmp_path):
    """A fit of agm_srl's CRF (its seed, lambda and propositions) decoded here by bayes under its own
    class order gives agm_srl's test tree losses; the other orders and decodings are scored too."""
    small = {"subsample": {"train": 30, "devel": 20, "test.wsj": 20, "test.brown": 10}, "n_bits": 10, "n_passes": 2}
    table = get("agm_srl")
    rows, _ = table.run({"view": srl_view}, {**table.settings(CONFIG, "conll2005", "CRF"), **small,
                                              "lambdas": [1e-2]}, seed=0, dataset="conll2005", method="CRF", split=0)
    exp = get("agm_srl_decoding")
    settings = {**exp.settings(CONFIG, "subsample", "CRF"), **small, "lam": 1e-2, "cost_orders": [0, 2]}
    out, _ = exp.run({"view": srl_view}, settings, seed=0, dataset="subsample", method="CRF", split=0,
                     checkpoint=tmp_path / "fits")
    losses = lambda rs, **kw: [r["value"] for r in rs if r["metric"] == "tree_loss"  # noqa: E731
                                and all(r.get(k) == v for k, v in kw.items())]
    assert losses(out, decoding="bayes", cost_order=0) == losses(rows)
    assert {(r["decoding"], r["cost_order"]) for r in out if r["metric"] == "tree_loss"} == \
        {(d, c) for d in agm_srl_decoding.DECODINGS for c in (0, 2)}
    assert all(len(losses(out, decoding=d, cost_order=c)) == 20 for d in agm_srl_decoding.DECODINGS for c in (0, 2))
    again, _ = exp.run({"view": srl_view}, settings, seed=0, dataset="subsample", method="CRF", split=0,
                       checkpoint=tmp_path / "fits")
    assert again == out                                   # the kept fit is read back
