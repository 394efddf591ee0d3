"""Splits, seeding, atomic writes, Table 2 method labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from structpred.errors import ConfigError
from structpred.papers.registry import get
from structpred.tables.seeding import int_seed, rng_for
from structpred.tables.splits import random_split, subsample_indices
from structpred.io import atomic_open, write_text


def test_random_split_partitions_all_rows():
    tr, va, te = random_split(150, [0.6, 0.2, 0.2], rng_for(0, "iris", "split", 3))
    assert (len(tr), len(va), len(te)) == (90, 30, 30)
    assert np.array_equal(np.sort(np.concatenate([tr, va, te])), np.arange(150))


def test_splits_are_deterministic_and_differ_between_splits():
    a = random_split(100, [0.6, 0.2, 0.2], rng_for(0, "wine", "split", 1))
    b = random_split(100, [0.6, 0.2, 0.2], rng_for(0, "wine", "split", 1))
    c = random_split(100, [0.6, 0.2, 0.2], rng_for(0, "wine", "split", 2))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[0], c[0])


def test_seeds_are_stable_across_processes():
    # crc32-based keys: this value must never change, or published tables change
    assert int_seed(0, "letter", "subsample") == int_seed(0, "letter", "subsample")
    assert rng_for(0, "x").integers(1 << 30) == rng_for(0, "x").integers(1 << 30)
    assert int_seed(0, "a") != int_seed(0, "b")


def test_bad_fractions_and_tiny_data_are_errors():
    with pytest.raises(ConfigError, match="sum to 1"):
        random_split(100, [0.6, 0.3, 0.2], rng_for(0))
    with pytest.raises(ConfigError, match="too few"):
        random_split(3, [0.6, 0.2, 0.2], rng_for(0))


def test_subsample():
    idx = subsample_indices(20000, 15000, rng_for(0, "letter", "subsample"))
    assert len(idx) == 15000 and len(np.unique(idx)) == 15000 and np.all(np.diff(idx) > 0)
    assert np.array_equal(subsample_indices(10, None, rng_for(0)), np.arange(10))


def test_table2_methods_are_config_data_and_the_report_reads_them_there():
    """A Table 2 method's (K, warm start) comes from the config's configurations, never from its
    label: a relabelled configuration renders under its settings, an unknown label is an error."""
    from structpred.papers.m4n.report import _with_k_and_start

    spec = get("m4n_table2")
    config = {"m4n_table2": {"oracle_iterations": [10, 30], "warm_start": [True, False]}}
    assert spec.configurations(config) == {"M4N-K10-warm": (10, True), "M4N-K10-cold": (10, False),
                                           "M4N-K30-warm": (30, True), "M4N-K30-cold": (30, False)}
    table = pd.DataFrame({"method": ["fast", "slow"]})
    out = _with_k_and_start(table, {"fast": (5, True), "slow": (5, False)})
    assert list(out["K"]) == [5, 5] and list(out["start"]) == ["warm", "cold"]
    with pytest.raises(ConfigError, match="M4N-K7-warm"):
        _with_k_and_start(pd.DataFrame({"method": ["M4N-K7-warm"]}), spec.configurations(config))


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.csv"
    write_text(target, "old\n")
    with pytest.raises(RuntimeError):
        with atomic_open(target) as fh:
            fh.write("half")
            raise RuntimeError("crash")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_job_settings_depend_only_on_the_job():

    def job_settings(config, experiment, dataset, method):
        return get(experiment).settings(config, dataset, method)

    config = {"m4n_table1": {"tasks": {"mc": {"loss": "zero_one", "datasets": ["iris"]},
                                       "ord": {"loss": "ordinal", "datasets": ["auto"]}},
                             "methods": ["M3N", "M4N"], "lambdas": [0.5], "n_passes": 3,
                             "oracle_iterations": 7, "warm_start": True, "eval_every": 2},
              "m4n_table2": {"task": "ord", "loss": "ordinal", "lambdas": [0.1], "n_passes": 100,
                             "eval_every": 10, "oracle_iterations": [10, 30], "warm_start": [True, False]}}
    assert job_settings(config, "m4n_table1", "auto", "M4N") == {
        "task": "ord", "method": "M4N", "loss": "ordinal", "lambdas": [0.5], "n_passes": 3,
        "oracle_iterations": 7, "warm_start": True, "eval_every": 2}
    m3n = job_settings(config, "m4n_table1", "iris", "M3N")
    assert m3n["oracle_iterations"] is None and m3n["loss"] == "zero_one"
    t2 = job_settings(config, "m4n_table2", "auto", "M4N-K30-cold")
    assert (t2["oracle_iterations"], t2["warm_start"], t2["n_passes"]) == (30, False, 100)
    with pytest.raises(ConfigError, match="'M4N-K50-cold' is not a configuration of m4n_table2 here"):
        job_settings(config, "m4n_table2", "auto", "M4N-K50-cold")
    with pytest.raises(ConfigError, match="not in any task"):
        job_settings(config, "m4n_table1", "wine", "M3N")


def test_lambda_grid_in_parallel_gives_the_same_results():
    """``n_jobs`` only changes where the lambdas are fitted: records (but the timings), the
    selected lambda and the chosen history are the same as sequentially."""
    from structpred.papers.m4n.tables import M4NJob, fit_lambda_grid

    rng = np.random.default_rng(3)
    split = {}
    for part, n in (("train", 60), ("val", 30), ("test", 30)):
        y = rng.integers(0, 3, size=n)
        split[f"X_{part}"] = rng.normal(size=(n, 4)) + y[:, None]
        split[f"y_{part}"] = y
    job = M4NJob(task="mc", method="M4N", loss="zero_one", n_labels=3, lambdas=[1.0, 0.1, 0.01], n_passes=3,
                 oracle_iterations=5, warm_start=True, random_state=0)
    runs = [fit_lambda_grid(split, job, n_jobs=n) for n in (1, 2)]
    (rec1, hist1), (rec2, hist2) = runs
    drop = lambda recs: [{k: v for k, v in r.items() if k != "seconds"} for r in recs]  # noqa: E731
    assert drop(rec1) == drop(rec2)
    assert [r["lam"] for r in rec1] == [1.0, 0.1, 0.01]
    assert sum(r["selected"] for r in rec1) == 1
    cols = [c for c in hist1.columns if c != "seconds"]
    assert hist1[cols].equals(hist2[cols])


def test_registry_declares_every_configured_experiment():
    """Each experiment of the paper config is registered with its hooks; the workflow needs
    nothing else to run it."""
    import yaml

    from structpred.papers.registry import EXPERIMENTS, INPUT_KINDS, get

    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.yaml").read_text())
    for name in config["experiments"]:
        exp = get(name)
        assert exp is EXPERIMENTS[name] and exp.title and set(exp.needs) <= set(INPUT_KINDS)
        jobs = exp.jobs(config)
        assert jobs and len(set(jobs)) == len(jobs)
        dataset, method, _ = jobs[0]
        assert isinstance(exp.settings(config, dataset, method), dict)
        assert exp.threads(config, dataset, method) >= 1
    with pytest.raises(ConfigError, match="unknown experiment 'm4n_tabel1'"):
        get("m4n_tabel1")


def test_binning_reaches_the_split_features_and_the_sensitivity_table_reuses_table1():
    """A dataset's binning changes its feature settings (and only its own), relabels the split
    from the view's target, and ``m4n_binning`` runs Table 1's settings on its datasets."""
    import yaml

    from structpred.data.discretize import bin_target
    from structpred.tables.splits import SplitFeatures, build_split_features

    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.yaml").read_text())
    t1, sens = get("m4n_table1"), get("m4n_binning")
    assert t1.feature_settings(config, "abalone")["binning"] == "kmeans"
    assert "binning" not in t1.feature_settings(config, "stocks")  # the view's labels: files unchanged
    assert sens.feature_settings(config, "abalone")["binning"] == "equal_frequency"
    assert {d for d, _, _ in sens.jobs(config)} == {"machine", "abalone", "auto"}
    assert len(sens.jobs(config)) == 3 * 3 * config["m4n_table1"]["n_splits"]
    assert sens.settings(config, "auto", "M4N") == t1.settings(config, "auto", "M4N")
    assert sens.references_of == "m4n_table1"

    rng = np.random.default_rng(0)
    target = np.exp(rng.normal(size=60))
    arrays = {"X": rng.normal(size=(60, 3)), "y": bin_target(target, 4, "equal_frequency")[0], "target": target}
    kw = dict(seed=0, fractions=[0.6, 0.2, 0.2], n_components=5)
    plain = build_split_features(arrays, SplitFeatures(**kw), view="toy", split=0)
    binned = build_split_features(arrays, SplitFeatures(**kw, binning="equal_width"), view="toy", split=0)
    want, edges = bin_target(target, 4, "equal_width")
    for part in ("train", "val", "test"):
        np.testing.assert_array_equal(plain[f"y_{part}"], arrays["y"][plain[f"index_{part}"]])
        np.testing.assert_array_equal(binned[f"y_{part}"], want[binned[f"index_{part}"]])
        np.testing.assert_array_equal(binned[f"X_{part}"], plain[f"X_{part}"])
    np.testing.assert_array_equal(binned["bin_edges"], edges)
    with pytest.raises(ConfigError, match="no regression target"):
        build_split_features({"X": arrays["X"], "y": arrays["y"]}, SplitFeatures(**kw, binning="kmeans"), view="toy",
                             split=0)


def test_audit_lists_every_binning_of_an_ordinal_view():
    from structpred.data.discretize import bin_target
    from structpred.papers.datasets.audit import binning_note

    target = np.arange(1.0, 21.0)
    note = binning_note({"y": bin_target(target, 4, "equal_frequency")[0], "target": target})
    assert "equal_frequency bins counts=5/5/5/5 edges=1/5.5/10.5/15.5/20" in note
    assert "equal_width bins counts=5/5/5/5 edges=1/5.75/10.5/15.25/20" in note
    assert "kmeans bins counts=" in note and "equal_width_log bins counts=" in note
    assert binning_note({"y": np.zeros(3, dtype=int)}) == ""
