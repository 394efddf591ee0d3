"""A resumable M4N Table 1 job: each finished lambda fit is kept, a stopped job resumes from
the kept fits and writes the same bytes as one that ran through; changed settings or inputs
never reuse a kept fit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from structpred.errors import ConfigError
from structpred.tables.fit_cache import FitCache, LambdaFitted, fit_grid, only_lambda
from structpred.papers.registry import get
from structpred.tables.results import make_rows, write_csv
from structpred.tables.splits import save_split

SETTINGS = {"task": "mc", "method": "M4N", "loss": "zero_one", "lambdas": [0.5, 0.125, 0.03125], "n_passes": 4,
            "oracle_iterations": 5, "warm_start": True, "eval_every": 2}


@pytest.fixture
def split_file(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {}
    for part, n in (("train", 60), ("val", 30), ("test", 30)):
        y = rng.integers(0, 3, size=n)
        arrays[f"X_{part}"], arrays[f"y_{part}"] = rng.normal(size=(n, 4)) + y[:, None], y
    path = tmp_path / "split0.npz"
    save_split(path, arrays, {"n_labels": 3})
    return path


class SessionEnds(Exception):
    """The job's process stopped midway (a session's end, a cluster's time limit)."""


def job_bytes(out, rows, history):
    """The job's two files as written, but for the fits' timings (which no two runs share)."""
    rows = make_rows(rows)
    write_csv(rows[rows["metric"] != "seconds"], out / "rows.csv")
    write_csv(history.drop(columns="seconds"), out / "history.csv")
    return (out / "rows.csv").read_bytes(), (out / "history.csv").read_bytes()


def test_a_stopped_job_resumes_from_its_finished_fits(split_file, tmp_path, monkeypatch):
    import structpred.papers.m4n.tables as m4n

    exp, kw = get("m4n_table1"), dict(seed=0, dataset="toy", method="M4N", split=0)
    assert exp.resumable
    (tmp_path / "through").mkdir()     # the job run through, without a checkpoint
    through = job_bytes(tmp_path / "through", *exp.run({"features": split_file}, SETTINGS, **kw))

    calls, real, stop = [], m4n.fit_one_lambda, [3]    # the first run stops in its third fit

    def fit(parts, job, lam, checkpoint=None):
        calls.append(lam)
        if len(calls) == stop[0]:
            stop[0] = None
            raise SessionEnds
        return real(parts, job, lam, checkpoint)

    monkeypatch.setattr(m4n, "fit_one_lambda", fit)
    ckpt = tmp_path / "split0.fits"
    with pytest.raises(SessionEnds):
        exp.run({"features": split_file}, SETTINGS, checkpoint=ckpt, **kw)
    (digest,) = [p.name for p in ckpt.iterdir()]
    assert sorted(p.name for p in (ckpt / digest).iterdir()) == [
        "lam=0.125.history.csv", "lam=0.125.json", "lam=0.5.history.csv", "lam=0.5.json"]
    calls.clear()
    (tmp_path / "resumed").mkdir()
    resumed = job_bytes(tmp_path / "resumed", *exp.run({"features": split_file}, SETTINGS, checkpoint=ckpt, **kw))
    assert calls == [0.03125]                       # only the fit that had not finished
    assert resumed == through                       # byte for byte, but for the timings
    # other settings or another input file: a new folder, nothing reused
    calls.clear()
    exp.run({"features": split_file}, {**SETTINGS, "n_passes": 2}, checkpoint=ckpt, **kw)
    assert calls == [0.5, 0.125, 0.03125] and len(list(ckpt.iterdir())) == 2


def test_kept_fits_round_trip_exactly(tmp_path):
    cache = FitCache(tmp_path, {"a": 1})
    record = {"lam": 0.1, "val_loss": 1 / 3, "test_loss": 0.1 + 0.2, "seconds": 1e-7, "gap": 2.0 ** -60, "passes": 7}
    history = pd.DataFrame({"pass": [1, 2], "primal": [np.pi, np.e / 7], "gap": [np.nan, 1e-300], "lam": 0.1})
    assert cache.load(0.1) is None
    cache.save(0.1, record, history)
    rec, hist = cache.load(0.1)
    assert rec == record and list(rec) == list(record)          # values and key order
    pd.testing.assert_frame_equal(hist, history)
    assert FitCache(tmp_path, {"a": 2}).load(0.1) is None


def test_a_job_stopped_inside_a_fit_resumes_after_its_last_pass(split_file, tmp_path, monkeypatch):
    """The session ends in the middle of the second lambda's fit, after its second pass: the rerun
    takes the first fit from the cache, the second from its per-pass checkpoint (two passes left),
    and writes the job's bytes of a run through; the checkpoint is gone once the fit is kept."""
    import structpred.solvers.driver as driver

    exp, kw = get("m4n_table1"), dict(seed=0, dataset="toy", method="M4N", split=0)
    (tmp_path / "through").mkdir()
    through = job_bytes(tmp_path / "through", *exp.run({"features": split_file}, SETTINGS, **kw))

    real_save, seen, stop = driver.save_checkpoint, [], [True]

    def save_then_stop(path, saved):
        real_save(path, saved)
        seen.append((path.name, saved["pass"]))
        if stop[0] and path.name == "lam=0.125.passes.pkl" and saved["pass"] == 2:
            stop[0] = False
            raise SessionEnds

    monkeypatch.setattr(driver, "save_checkpoint", save_then_stop)
    ckpt = tmp_path / "split0.fits"
    with pytest.raises(SessionEnds):
        exp.run({"features": split_file}, SETTINGS, checkpoint=ckpt, **kw)
    (folder,) = list(ckpt.iterdir())
    assert (folder / "lam=0.125.passes.pkl").is_file() and not (folder / "lam=0.5.passes.pkl").exists()
    seen.clear()
    (tmp_path / "resumed").mkdir()
    resumed = job_bytes(tmp_path / "resumed", *exp.run({"features": split_file}, SETTINGS, checkpoint=ckpt, **kw))
    assert [p for name, p in seen if name == "lam=0.125.passes.pkl"] == [3, 4]   # resumed after pass 2
    assert resumed == through
    assert not list(folder.glob("*.passes.pkl"))


def _blas_threads(lam, checkpoint=None):
    """A stand-in fit that records the BLAS threads it runs on."""
    from threadpoolctl import threadpool_info
    threads = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
    return {"lam": lam, "blas_threads": threads}, pd.DataFrame({"pass": [1]})


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_each_fit_of_a_grid_runs_on_one_blas_thread(n_jobs, monkeypatch):
    """A job's threads fit its lambdas side by side; each fit on one BLAS thread whatever the job's
    (a worker inherits OPENBLAS_NUM_THREADS, which Snakemake sets to the job's threads)."""
    from threadpoolctl import threadpool_info, threadpool_limits
    if not any(i.get("user_api") == "blas" for i in threadpool_info()):
        pytest.skip("no BLAS library loaded")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    with threadpool_limits(limits=2, user_api="blas"):
        records = [r for r, _ in fit_grid(_blas_threads, [1.0, 0.1], n_jobs=n_jobs)]
    assert [r["lam"] for r in records] == [1.0, 0.1]
    assert all(r["blas_threads"] and set(r["blas_threads"]) == {1} for r in records)


def _counted(lam, checkpoint=None):
    """A stand-in fit that leaves a trace of each call (its lambda) in a file beside the cache."""
    with open(Path(checkpoint).parents[2] / "calls.txt", "a") as fh:   # <tmp>/split0.fits/<digest>/lam=...pkl
        fh.write(f"{lam}\n")
    return {"lam": lam, "val_loss": 1 / (1 + lam), "seconds": 0.5}, pd.DataFrame({"pass": [1], "lam": [lam]})


def test_a_lambda_job_fits_its_one_lambda_and_the_job_then_reads_the_whole_grid(tmp_path):
    """Under only_lambda(i) the grid fits its i-th lambda into the cache and stops (LambdaFitted);
    once every lambda's job has run, the grid fits nothing and gives each job's record."""
    cache, grid = FitCache(tmp_path / "split0.fits", {"a": 1}), [0.5, 0.25, 0.125]
    calls = tmp_path / "calls.txt"
    for i in (2, 0, 1):
        with only_lambda(i), pytest.raises(LambdaFitted) as done:
            fit_grid(_counted, grid, cache=cache)
        assert done.value.lam == grid[i] and done.value.record["val_loss"] == 1 / (1 + grid[i]) and done.value.whole
    assert calls.read_text().split() == ["0.125", "0.5", "0.25"]
    with only_lambda(1), pytest.raises(LambdaFitted) as again:   # already kept: read, not refitted
        fit_grid(_counted, grid, cache=cache)
    assert not again.value.whole and len(calls.read_text().split()) == 3
    records = [r for r, _ in fit_grid(_counted, grid, cache=cache)]       # the job: every fit from the cache
    assert [r["lam"] for r in records] == grid and len(calls.read_text().split()) == 3
    with only_lambda(3), pytest.raises(ConfigError, match="below the grid's 3 lambdas"):
        fit_grid(_counted, grid, cache=cache)
    with only_lambda(0), pytest.raises(ConfigError, match="no cache"):
        fit_grid(_counted, grid)


def test_lambda_jobs_are_the_grid_on_the_listed_datasets_of_a_resumable_experiment():
    import yaml
    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config/config.yaml").read_text())
    table1 = get("m4n_table1")
    assert config["m4n_table1"]["lambda_jobs"] == ["ocr"]
    assert table1.lambda_jobs(config, "ocr", "M4N") == len(config["m4n_table1"]["lambdas"]) == 10
    assert table1.lambda_jobs(config, "iris", "M4N") == 0
    ner = get("casimir_ner_heldout")
    assert config[ner.name]["lambda_jobs"] == ["conll2003"]
    assert ner.lambda_jobs(config, "conll2003", "M3N") == 5    # its widened grid
    assert ner.lambda_jobs(config, "conll2003", "M4N") == 4    # the block's
    assert ner.lambda_jobs({**config, ner.name: {**config[ner.name], "lambda_jobs": []}}, "conll2003", "M3N") == 0
    assert not get("qs_robust").resumable and get("qs_robust").lambda_jobs(config, "ocr", "QS") == 0
