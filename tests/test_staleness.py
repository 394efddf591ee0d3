"""Numerics fingerprints and the run archive's status (fresh / stale / unknown), and the CI guard:
a one-ulp change in a kernel must make it fail, naming the path and the experiment."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from structpred.cli import main
from structpred.runs import numerics, staleness
from structpred.papers.registry import get

ROOT = Path(__file__).resolve().parents[1]
MACHINE = "test-machine"


def write_job(archive, experiment, dataset, method, split, seconds=1.0, record=None):
    """A minimal archived job file (and its numerics record)."""
    path = Path(archive) / experiment / dataset / method / f"split{split}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"experiment": experiment, "dataset": dataset, "method": method, "split": split,
                  "metric": ["test_loss", "seconds"], "value": [0.25, seconds], "detail": ["", "cpu"]}
                 ).to_csv(path, index=False)
    if record is not None:
        staleness.record_path(path).write_text(json.dumps(record))
    return path


def rec(fps, commit="abc1234567890", machine=MACHINE, **more):
    return {"commit": commit, "machine": machine, "fingerprints": fps, **more}


def test_every_declared_path_exists_and_every_path_is_used():
    """Over the paper config and the smoke config (whose AGM table has an M4N column)."""
    paper = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    smoke = yaml.safe_load((ROOT / "config/smoke.yaml").read_text())
    used = set()
    def over(base, top):   # Snakemake's merge of a --configfile over the default one
        return {k: over(base[k], v) if isinstance(v, dict) and isinstance(base.get(k), dict) else v
                for k, v in {**base, **top}.items()} if isinstance(top, dict) else top

    for config in (paper, over(paper, smoke)):
        for name in config["experiments"]:
            exp = get(name)
            for dataset, method, _ in exp.jobs(config):
                paths = exp.numeric_paths(config, dataset, method)
                assert set(paths) <= set(numerics.PATHS), (name, dataset, method, paths)
                used |= set(paths)
    assert used == set(numerics.PATHS)
    config = paper
    # the chain experiments do not depend on the permutation kernels, and the other way round
    m4n = get("m4n_table1")
    assert m4n.numeric_paths(config, "ocr", "M4N") == ("chain.M4N", "features.nystrom")
    assert m4n.numeric_paths(config, "rnk_wine", "M4N") == ("permutation.M4N", "features.nystrom")
    assert get("casimir_ner").numeric_paths(config, "fig5a_c1", "Casimir-SVRG-const_mu=8") == ("ner.Casimir-SVRG-const",)
    assert get("agm_emotion_converged").numeric_paths(config, "ck", "AGM") == ("chain_game.qp",)
    assert get("agm_emotion_converged").numeric_paths(config, "ck", "CRF") == ("chain_game.CRF",)


def test_bits_see_one_ulp_and_shapes():
    a = np.linspace(0.1, 1, 6)
    b = a.copy()
    b[3] = np.nextafter(b[3], 2.0)
    assert numerics._bits([a]) != numerics._bits([b])
    assert numerics._bits([a]) != numerics._bits([a.reshape(2, 3)])
    assert numerics._bits([a, [a]]) == numerics._bits([a.copy(), [a.copy()]])


def test_a_fingerprint_is_the_same_when_recomputed():
    first = numerics.fingerprint("multiclass.M3N")
    numerics.fingerprint.cache_clear()
    assert numerics.fingerprint("multiclass.M3N") == first
    assert len(first) == 16 and int(first, 16) >= 0
    assert "|" in numerics.machine_class()


def test_status_fresh_stale_and_unknown(tmp_path):
    now = {"chain.M4N": "new", "permutation.M4N": "same", "features.nystrom": "nys"}
    write_job(tmp_path, "chains", "ocr", "M4N", 0, record=rec({"chain.M4N": "old", "features.nystrom": "nys"}))
    write_job(tmp_path, "chains", "ocr", "M4N", 1, record=rec({"chain.M4N": "new", "features.nystrom": "nys"}))
    write_job(tmp_path, "ranks", "rnk", "M4N", 0, record=rec({"permutation.M4N": "same", "features.nystrom": "nys"}))
    write_job(tmp_path, "old", "iris", "M3N", 0)
    write_job(tmp_path, "elsewhere", "iris", "M3N", 0, record=rec({"multiclass.M3N": "x"}, machine="other"))
    write_job(tmp_path, "differs", "iris", "M3N", 0, record=rec({"multiclass.M3N": "x"}, reproduced=False))
    table = staleness.status_table(tmp_path, now, MACHINE).set_index("experiment")
    assert table.loc["ranks", "status"] == "fresh" and table.loc["ranks", "fresh"] == 1
    chains = table.loc["chains"]
    assert (chains["status"], chains["stale"], chains["fresh"], chains["moved_paths"], chains["since"]) == \
        ("stale", 1, 1, "chain.M4N", "abc1234567")
    assert table.loc["old", "status"] == "unknown" and "no numerics record" in table.loc["old", "detail"]
    assert table.loc["elsewhere", "status"] == "unknown" and "another machine class" in table.loc["elsewhere", "detail"]
    assert table.loc["differs", "status"] == "stale" and "differed" in table.loc["differs", "detail"]


def test_a_job_is_stale_once_a_job_it_read_is_rerun_with_other_numbers(tmp_path):
    """qs_movielens_normalisation refits qs_movielens's choices: a rerun of those that moves their
    rows makes it stale, whether its record keeps the digests it read or (older records) git has
    the input as archived at the job's commit; timings alone move nothing."""
    from structpred.runs.archive import load_config, result_digest
    config, fps = load_config(ROOT), {"qs.ranking": "f"}
    up = write_job(tmp_path / "runs", "qs_movielens", "movielens", "QS", 3, seconds=5.0, record=rec(fps))
    write_job(tmp_path / "runs", "qs_movielens", "movielens", "QS", 4, record=rec(fps))
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "archive"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    read = {"qs_movielens/movielens/QS/split3.csv": result_digest(up)}
    write_job(tmp_path / "runs", "qs_movielens_normalisation", "movielens", "QS", 3, record=rec(fps, inputs=read))
    write_job(tmp_path / "runs", "qs_movielens_normalisation", "movielens", "QS", 4,
              record=rec(fps, commit=commit + "+dirty"))        # older record: no digests, git then
    write_job(tmp_path / "runs", "qs_movielens_normalisation", "movielens", "Hinge", 3,
              record=rec(fps, commit="0" * 40))                  # git lacks its commit: not judged
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "downstream"], check=True)

    def statuses():
        jobs = staleness.job_table(tmp_path / "runs", fps, MACHINE, config)
        jobs = jobs[jobs["experiment"] == "qs_movielens_normalisation"]
        return dict(zip(jobs["method"] + jobs["split"], zip(jobs["status"], jobs["detail"])))

    assert {k: v[0] for k, v in statuses().items()} == {"QS3": "fresh", "QS4": "fresh", "Hinge3": "fresh"}
    write_job(tmp_path / "runs", "qs_movielens", "movielens", "QS", 3, seconds=9.0, record=rec(fps))
    assert statuses()["QS3"][0] == "fresh"                     # another time only
    text = (tmp_path / "runs/qs_movielens/movielens/QS/split4.csv").read_text()
    (tmp_path / "runs/qs_movielens/movielens/QS/split4.csv").write_text(text.replace("0.25", "0.26"))
    (tmp_path / "runs/qs_movielens/movielens/QS/split3.csv").write_text(text.replace("0.25", "0.26"))
    now = statuses()
    assert now["QS3"] == now["QS4"] == ("stale", "read archived qs_movielens jobs that were rerun since with other numbers")
    assert now["Hinge3"][0] == "fresh"
    table = staleness.status_table(tmp_path / "runs", fps, MACHINE, config).set_index("experiment")
    assert table.loc["qs_movielens_normalisation", ["status", "stale", "fresh"]].tolist() == ["stale", 2, 1]


def test_compare_status_names_the_experiment_and_the_paths(tmp_path):
    write_job(tmp_path, "chains", "ocr", "M4N", 0, record=rec({"chain.M4N": "a"}))
    committed = staleness.status_table(tmp_path, {"chain.M4N": "a"}, MACHINE)
    assert staleness.compare_status(committed, committed) == []
    moved = staleness.status_table(tmp_path, {"chain.M4N": "b"}, MACHINE)
    lines = staleness.compare_status(committed, moved)
    assert len(lines) == 1 and lines[0].startswith("chains: committed fresh") and "chain.M4N" in lines[0]
    # marked stale in the committed table: the guard passes
    assert staleness.compare_status(moved, moved) == []
    # a table committed on another machine class is not compared
    assert staleness.compare_status(committed.assign(machine="other"), moved) == []
    assert "no committed status" in staleness.compare_status(None, moved)[0]


def test_guard_sample_covers_paths_cheapest_first_within_budget(tmp_path, monkeypatch):
    fps = {"a": "1", "b": "2", "c": "3"}
    monkeypatch.setattr(staleness, "PATHS", fps)
    monkeypatch.setattr(staleness, "fingerprints", lambda names=None: {n: fps[n] for n in names})
    monkeypatch.setattr(staleness, "machine_class", lambda: MACHINE)
    write_job(tmp_path, "e1", "d", "m", 0, seconds=5, record=rec({"a": "1"}))
    write_job(tmp_path, "e1", "d", "m", 1, seconds=2, record=rec({"a": "1", "b": "2"}))
    write_job(tmp_path, "e2", "d", "m", 0, seconds=500, record=rec({"c": "3"}))
    write_job(tmp_path, "e3", "d", "m", 0, seconds=1, record=rec({"b": "stale"}))
    sample, unguarded = staleness.guard_sample(tmp_path, budget_seconds=100)
    assert sample[["experiment", "split"]].values.tolist() == [["e1", "1"]]
    assert unguarded == ["c"]


def test_status_cli_writes_the_table_and_refuses_a_malformed_record(tmp_path, capsys):
    write_job(tmp_path / "runs", "old", "iris", "M3N", 0)
    out = tmp_path / "staleness.csv"
    assert main(["runs", "status", "--archive", str(tmp_path / "runs"), "--write", str(out)]) == 0
    text = capsys.readouterr().out
    assert "1 archived experiments: 0 fresh, 0 verified, 0 stale, 1 unknown" in text
    assert pd.read_csv(out)["status"].tolist() == ["unknown"]
    bad = write_job(tmp_path / "runs", "bad", "iris", "M3N", 0)
    staleness.record_path(bad).write_text("{not json")
    assert main(["runs", "status", "--archive", str(tmp_path / "runs")]) == 2
    assert "not a numerics record" in capsys.readouterr().err


def test_ledger_and_index_say_when_a_table_rests_on_a_stale_archive(tmp_path):
    from structpred.report.archive_status import describe

    row = {"status": "stale", "jobs": 4, "stale": 1, "fresh": 3, "unknown": 0, "moved_paths": "chain.M4N",
           "since": "abc", "detail": ""}
    assert describe(row).startswith("STALE: 1 of 4") and "chain.M4N" in describe(row)
    assert describe({**row, "status": "fresh"}).startswith("fresh")


ONE_ULP = ("            out[t, j] = thU[t, j] + eta * (U[t, j] + g[t, j])\n",
           "            out[t, j] = thU[t, j] + eta * (U[t, j] + g[t, j]) * (1.0 + 2.220446049250313e-16)\n")


@pytest.mark.slow
def test_the_guard_fails_on_a_one_ulp_change_in_a_kernel(tmp_path):
    """The chain SP-MP's mirror step changed by one ulp in a copy of the package: the guard, run on
    an archive whose records HEAD made, names the path and the experiment and exits 1; unchanged,
    it passes."""
    archive, status = tmp_path / "runs", tmp_path / "staleness.csv"
    fps = numerics.fingerprints(["chain.M4N", "permutation.M4N"])
    write_job(archive, "m4n_chain", "ocr", "M4N", 0, record=rec({"chain.M4N": fps["chain.M4N"]},
                                                                 machine=numerics.machine_class()))
    write_job(archive, "m4n_ranks", "rnk", "M4N", 0, record=rec({"permutation.M4N": fps["permutation.M4N"]},
                                                                 machine=numerics.machine_class()))
    staleness.status_table(archive).to_csv(status, index=False)
    src = tmp_path / "src"
    # with its __pycache__: numba's caches of the two paths, which the fingerprints above just made,
    # so that only the changed kernel file compiles again (numba keys a cache on its source file's
    # mtime and size; a stale cache of a caller in another file could only hide the change, which
    # the second guard below would then miss, failing this test)
    shutil.copytree(ROOT / "src" / "structpred", src / "structpred")
    kernel = src / "structpred" / "outputs" / "_chain_kernels.py"
    text = kernel.read_text()
    assert text.count(ONE_ULP[0]) == 1, "the mirror step's line moved: update ONE_ULP"

    def guard():
        env = {**os.environ, "PYTHONPATH": str(src)}
        return subprocess.run([sys.executable, "-m", "structpred.cli", "runs", "guard", "--archive", str(archive),
                               "--status", str(status), "--no-reruns"], env=env, capture_output=True, text=True,
                              cwd=tmp_path, timeout=900)

    same = guard()
    assert same.returncode == 0, same.stderr
    kernel.write_text(text.replace(*ONE_ULP))
    moved = guard()
    assert moved.returncode == 1, moved.stdout + moved.stderr
    assert "m4n_chain: committed fresh" in moved.stderr and "chain.M4N" in moved.stderr
    assert "m4n_ranks" not in moved.stderr   # the permutation path did not move


def test_fingerprints_do_not_depend_on_the_blas_threads():
    """A job of one thread records its paths' fingerprints; ``runs status`` beside it may have more
    BLAS threads. The NER M3N path's long dot products give other bits on two OpenBLAS threads,
    so fingerprints are taken on one, whatever the caller's limit."""
    from threadpoolctl import threadpool_limits

    from structpred.runs import numerics

    numerics.fingerprint.cache_clear()
    with threadpool_limits(limits=2, user_api="blas"):
        two = numerics.fingerprint("ner_heldout.M3N")
    numerics.fingerprint.cache_clear()
    with threadpool_limits(limits=1, user_api="blas"):
        one = numerics.fingerprint("ner_heldout.M3N")
    assert one == two


def test_a_job_is_stale_once_its_config_block_gives_it_other_settings(tmp_path):
    """A widened grid moves no fingerprint: a record keeps its settings' digest and is stale when
    today's block gives other settings; an older record (no digest) is compared with the settings
    that the config committed at its commit gives, naming the keys; no such config: not judged."""
    from structpred.runs.archive import load_config
    config, fps = load_config(ROOT), {"qs.ranking": "f"}
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text((ROOT / "config" / "config.yaml").read_text())
    settings = get("qs_movielens").settings(config, "movielens", "Hinge")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "config"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    runs = tmp_path / "runs"
    write_job(runs, "qs_movielens", "movielens", "Hinge", 0, record=rec(fps, settings=numerics.settings_digest(settings)))
    write_job(runs, "qs_movielens", "movielens", "Hinge", 1, record=rec(fps, commit=commit))   # older: git's config
    write_job(runs, "qs_movielens", "movielens", "Hinge", 2, record=rec(fps, commit="0" * 40))  # git lacks it

    def statuses(cfg):
        jobs = staleness.job_table(runs, fps, MACHINE, cfg)
        return dict(zip(jobs["split"], zip(jobs["status"], jobs["detail"])))

    assert statuses(config) == {"0": ("fresh", ""), "1": ("fresh", ""), "2": ("fresh", "")}
    wider = {**config, "qs_movielens": {**config["qs_movielens"], "lambdas": {
        **config["qs_movielens"]["lambdas"], "Hinge": [10.0, *config["qs_movielens"]["lambdas"]["Hinge"]]}}}
    assert get("qs_movielens").settings(wider, "movielens", "Hinge") != settings
    assert statuses(wider) == {"0": ("stale", "ran with other settings than today's qs_movielens block"),
                               "1": ("stale", "ran with other settings (lambdas) than today's qs_movielens block"),
                               "2": ("fresh", "")}
    # the digest is the settings' canonical JSON: key order aside, and 1.0e-3 and 0.001 are one float
    assert numerics.settings_digest({"b": [1.0e-3], "a": 1}) == numerics.settings_digest({"a": 1, "b": [0.001]})
    assert numerics.settings_digest({"a": 1}) != numerics.settings_digest({"a": 2})


def test_the_foreign_guard_samples_jobs_fresh_on_the_archive_class(tmp_path):
    """A record made on the archive's class is fresh there by everything but its fingerprints, which
    another class cannot compute; a record from a third class or one whose rerun differed is not."""
    write_job(tmp_path, "e", "d", "m", 0, seconds=2, record=rec({"a": "1"}, machine="archive-class"))
    write_job(tmp_path, "e", "d", "m", 1, seconds=1, record=rec({"a": "1"}, machine="third-class"))
    write_job(tmp_path, "e", "d", "m", 2, seconds=1, record=rec({"a": "1"}, machine="archive-class", reproduced=False))
    jobs = staleness.job_table(tmp_path, machine="archive-class", config={}, as_recorded=True)
    assert dict(zip(jobs["split"], jobs["status"])) == {"0": "fresh", "1": "unknown", "2": "stale"}


def test_the_guard_cli_with_no_job_to_rerun_says_so_without_a_traceback(tmp_path, monkeypatch, capsys):
    """The defect this replaces: no job fresh on the archive's class made an empty frame and a KeyError."""
    from structpred.cli import main

    write_job(tmp_path / "runs", "e", "d", "m", 0, record=rec({"a": "1"}, machine="third-class"))
    status = tmp_path / "staleness.csv"
    pd.DataFrame([{"experiment": "e", "status": "unknown", "jobs": 1, "fresh": 0, "stale": 0, "unknown": 1,
                   "moved_paths": "", "since": "", "detail": "", "machine": "archive-class"}]).to_csv(status, index=False)
    monkeypatch.setattr(staleness, "machine_class", lambda: "x86_64 NeverSeenVendor neverseen | numpy AVX2 | openblas Haswell")
    monkeypatch.chdir(ROOT)
    assert main(["runs", "guard", "--archive", str(tmp_path / "runs"), "--status", str(status)]) == 0
    err = capsys.readouterr().err
    assert "tolerance and verdicts tiers" in err and "no archived job fresh on archive-class" in err


def test_fingerprints_are_cached_per_code_and_machine_class(tmp_path, monkeypatch):
    """``runs status`` in seconds: a fingerprint this code computed on this machine class is read
    back; a corrupt cache file is recomputed; another kernel setting is another key."""
    monkeypatch.setenv("STRUCTPRED_CACHE", str(tmp_path))
    calls = []
    monkeypatch.setattr(numerics, "fingerprint", lambda name: calls.append(name) or "0123456789abcdef")
    assert numerics.fingerprints(["multiclass.M3N"]) == {"multiclass.M3N": "0123456789abcdef"}
    assert numerics.fingerprints(["multiclass.M3N"]) == {"multiclass.M3N": "0123456789abcdef"}
    assert calls == ["multiclass.M3N"]
    (cached,) = tmp_path.glob("fingerprints/*/multiclass.M3N")
    assert cached.parent.name == numerics.code_key()
    cached.write_text("not a fingerprint")
    numerics.fingerprints(["multiclass.M3N"])
    assert calls == ["multiclass.M3N"] * 2 and cached.read_text() == "0123456789abcdef\n"
    key = numerics.code_key()
    numerics.code_key.cache_clear()
    monkeypatch.setenv("STRUCTPRED_VECTOR_WIDTH", "a-width-no-one-sets")
    try:
        assert numerics.code_key() != key
    finally:
        numerics.code_key.cache_clear()
