"""``structpred runs rerun``: which jobs it reruns (not fresh, or not archived), what it clears from
``results/`` before Snakemake runs, and what it copies into the archive when a chunk ends."""

import json
from pathlib import Path

import pandas as pd
import yaml

from structpred.cli import main
from structpred.runs import numerics, rerun
from structpred.papers.registry import get
from tests.test_staleness import rec, write_job

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "config/config.yaml").read_text())


def test_pending_jobs_are_those_not_fresh_here(tmp_path):
    jobs = get("qs_robust").jobs(CONFIG)
    (d0, m0, k0), (d1, m1, k1), (d2, m2, k2) = jobs[:3]
    here, fp = numerics.machine_class(), numerics.fingerprint("qs.cauchy")
    write_job(tmp_path, "qs_robust", d0, m0, k0, record=rec({"qs.cauchy": fp}, machine=here))        # fresh
    write_job(tmp_path, "qs_robust", d1, m1, k1, record=rec({"qs.cauchy": "0" * 16}, machine=here))  # stale
    write_job(tmp_path, "qs_robust", d2, m2, k2, record=rec({"qs.cauchy": fp}, machine="elsewhere"))  # unknown
    pending = rerun.pending_jobs("qs_robust", CONFIG, rerun.fresh_jobs(tmp_path, CONFIG))
    assert len(pending) == len(jobs) - 1
    assert f"qs_robust/{d0}/{m0}/split{k0}.csv" not in pending
    assert pending[:2] == [f"qs_robust/{d1}/{m1}/split{k1}.csv", f"qs_robust/{d2}/{m2}/split{k2}.csv"]


def test_clear_unfresh_keeps_todays_results_and_removes_older_ones(tmp_path):
    current = {"qs.cauchy": "a" * 16}
    old = write_job(tmp_path, "e", "d", "m", 0, record=rec({"qs.cauchy": "b" * 16}))
    new = write_job(tmp_path, "e", "d", "m", 1, record=rec({"qs.cauchy": "a" * 16}))
    bare = write_job(tmp_path, "e", "d", "m", 2)
    for p in (old, new, bare):
        Path(str(p).removesuffix(".csv") + ".history.csv").write_text("pass\n0\n")
    for k in (0, 1):   # kept fits: the older code's go with its rows, today's stay
        (tmp_path / f"e/d/m/split{k}.fits").mkdir()
        (tmp_path / f"e/d/m/split{k}.fits/lambda0.json").write_text("{}")
    rerun.clear_unfresh(tmp_path, ["e/d/m/split0.csv", "e/d/m/split1.csv", "e/d/m/split2.csv"], current, "test-machine")
    assert sorted(p.name for p in (tmp_path / "e/d/m").iterdir()) == [
        "split1.csv", "split1.fits", "split1.history.csv", "split1.numerics.json"]


def test_archive_job_copies_a_finished_jobs_files_and_skips_an_unfinished_one(tmp_path):
    results, archive = tmp_path / "results", tmp_path / "runs"
    done = write_job(results, "e", "d", "m", 0, record=rec({"p": "1" * 16}))
    Path(str(done).removesuffix(".csv") + ".history.csv").write_text("pass\n0\n")
    (done.parent / "selection.csv").write_text("lam\n0.5\n")
    (done.parent / "split0.fits").mkdir()                    # its lambda jobs' records (rule fit_lambda)
    for i in range(2):
        (done.parent / f"split0.fits/lambda{i}.json").write_text(f'{{"lam": {i}}}\n')
    write_job(results, "e", "d", "m", 1)                     # rows but no record: not finished
    write_job(archive, "e", "d", "m", 0, seconds=9.0)        # the archived file it replaces
    assert rerun.archive_job(results, archive, "e/d/m/split0.csv")
    assert not rerun.archive_job(results, archive, "e/d/m/split1.csv")
    for name in ("split0.csv", "split0.history.csv", "split0.numerics.json", "selection.csv",
                 "split0.fits/lambda0.json", "split0.fits/lambda1.json"):
        assert (archive / "e/d/m" / name).read_bytes() == (results / "e/d/m" / name).read_bytes(), name
    assert not (archive / "e/d/m/split1.csv").exists()


def test_an_unknown_experiment_is_one_line_and_exit_2(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["runs", "rerun", "--experiment", "no_such_table"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no_such_table" in err


def test_a_rerun_reads_other_experiments_fresh_archived_jobs_rather_than_recomputing_them(tmp_path):
    """qs_movielens_normalisation's jobs read qs_movielens's: a fresh archived one (rows and
    history) is placed in ``results/``; a stale one, or one ``results/`` already holds, is not."""
    here, fp = numerics.machine_class(), numerics.fingerprint("qs.ranking")
    archive, results = tmp_path / "runs", tmp_path / "results"
    for k, f in ((0, fp), (1, "0" * 16), (2, fp)):
        path = write_job(archive, "qs_movielens", "movielens", "QS", k, record=rec({"qs.ranking": f}, machine=here))
        Path(str(path).removesuffix(".csv") + ".history.csv").write_text("pass\n0\n")
    write_job(results, "qs_movielens", "movielens", "QS", 2)
    part = [f"qs_movielens_normalisation/movielens/QS/split{k}.csv" for k in range(3)]
    fresh = rerun.fresh_jobs(archive, CONFIG)
    assert rerun.archived_inputs(part, "qs_movielens_normalisation", CONFIG, results, fresh) == [
        "qs_movielens/movielens/QS/split0.csv", "qs_movielens/movielens/QS/split0.history.csv"]
    # an experiment's own jobs (a tuning grid) are its rerun's to recompute
    assert rerun.archived_inputs(["qs_movielens/movielens/QS/split1.csv"], "qs_movielens", CONFIG, results,
                                 fresh) == []


def test_an_unknown_dataset_method_or_split_is_one_line_and_exit_2(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["runs", "rerun", "--experiment", "matrix", "--dataset", "ck", "--dataset", "nowhere"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "matrix has no dataset nowhere" in err
    assert main(["runs", "rerun", "--experiment", "casimir_ner_heldout", "--method", "QS", "--method", "BCFW"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "casimir_ner_heldout has no method BCFW" in err
    assert main(["runs", "rerun", "--experiment", "casimir_ner_heldout", "--split", "3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "casimir_ner_heldout has no split 3; its splits: 0" in err


def test_a_rerun_takes_the_datasets_methods_and_splits_asked_in_the_order_given():
    paths = [f"e/{d}/{m}/split{k}.csv" for d in ("a", "b") for m in ("M3N", "QS", "SGD") for k in (0, 1)]
    assert rerun.select_jobs(paths) == paths
    assert rerun.select_jobs(paths, datasets=["b"]) == paths[6:]
    assert rerun.select_jobs(paths, methods=["SGD", "QS"]) == [
        "e/a/SGD/split0.csv", "e/a/SGD/split1.csv", "e/b/SGD/split0.csv", "e/b/SGD/split1.csv",
        "e/a/QS/split0.csv", "e/a/QS/split1.csv", "e/b/QS/split0.csv", "e/b/QS/split1.csv"]
    assert rerun.select_jobs(paths, datasets=["a"], methods=["M3N"]) == ["e/a/M3N/split0.csv", "e/a/M3N/split1.csv"]
    assert rerun.select_jobs(paths, datasets=["a"], splits=[1]) == ["e/a/M3N/split1.csv", "e/a/QS/split1.csv",
                                                                    "e/a/SGD/split1.csv"]
    assert rerun.select_jobs(paths, methods=["QS"], splits=[0, 7]) == ["e/a/QS/split0.csv", "e/b/QS/split0.csv"]


def test_a_reused_upstream_job_comes_with_its_lambda_jobs_records(tmp_path):
    """A job whose lambdas are jobs of their own (m4n_table1 on ocr) is reused with their records, or
    Snakemake refits its lambdas; without them in the archive it is recomputed, not half-placed."""
    from structpred.runs.archive import lambda_fit_paths, reuse_plan

    ocr = "m4n_table1/ocr/M4N/split0.csv"
    assert lambda_fit_paths(CONFIG, ocr) == [f"m4n_table1/ocr/M4N/split0.fits/lambda{i}.json" for i in range(10)]
    assert lambda_fit_paths(CONFIG, "m4n_table1/iris/M4N/split0.csv") == []
    archive = tmp_path / "runs"
    write_job(archive, "m4n_table1", "ocr", "M4N", 0)
    (archive / "m4n_table1/ocr/M4N/split0.history.csv").write_text("pass\n0\n")
    jobs = pd.DataFrame({"experiment": ["matrix"], "dataset": ["ocr"], "method": ["M4N"], "split": [0]})
    reuse, redo = reuse_plan(archive, jobs, CONFIG)
    assert ocr not in reuse and ocr in redo
    for path in lambda_fit_paths(CONFIG, ocr):
        (archive / path).parent.mkdir(parents=True, exist_ok=True)
        (archive / path).write_text("{}")
    reuse, redo = reuse_plan(archive, jobs, CONFIG)
    assert set(lambda_fit_paths(CONFIG, ocr)) | {ocr} <= set(reuse) and ocr not in redo


def _fit(folder, digest, lam, history=True):
    (folder / digest).mkdir(parents=True, exist_ok=True)
    (folder / digest / f"lam={lam}.json").write_text(f'{{"lam": {lam}, "val_loss": 0.5}}\n')
    if history:
        (folder / digest / f"lam={lam}.history.csv").write_text("pass,gap\n1,0.25\n")


def test_keep_and_restore_fits_move_only_finished_fits_of_the_same_code(tmp_path):
    results, archive, fresh = tmp_path / "results", tmp_path / "runs", tmp_path / "elsewhere"
    path, fp = "e/d/m/split0.csv", {"chain.M4N": "a" * 16}
    fits = results / "e/d/m/split0.fits"
    _fit(fits, "0123", 0.5)
    _fit(fits, "0123", 0.25)
    _fit(fits, "0123", 0.125, history=False)                 # a record without history: still being written
    (fits / "0123/lam=0.0625.passes.pkl").write_bytes(b"x" * 64)   # the running fit's checkpoint
    (fits / "lambda0.json").write_text("{}")                 # a lambda job's record: not a kept fit
    assert rerun.keep_fits(results, archive, path, fp, "m1") == 2
    kept = archive / "e/d/m/split0.fits"
    assert sorted(str(p.relative_to(kept)) for p in kept.rglob("*") if p.is_file()) == [
        "0123/lam=0.25.history.csv", "0123/lam=0.25.json", "0123/lam=0.5.history.csv", "0123/lam=0.5.json",
        "kept.json"]
    # another code's or another machine class's fits are not put back; the same code's are, once
    assert rerun.restore_fits(archive, fresh, path, {"chain.M4N": "b" * 16}, "m1") == 0
    assert rerun.restore_fits(archive, fresh, path, fp, "m2") == 0
    assert not (fresh / "e/d/m/split0.fits").exists()
    assert rerun.restore_fits(archive, fresh, path, fp, "m1") == 2
    assert (fresh / "e/d/m/split0.fits/0123/lam=0.5.json").read_bytes() == (fits / "0123/lam=0.5.json").read_bytes()
    assert rerun.restore_fits(archive, fresh, path, fp, "m1") == 0
    # the finished job's kept fits leave the archive; its lambda jobs' records stay
    (kept / "lambda0.json").write_text("{}")
    rerun.drop_kept_fits(archive, path)
    assert sorted(p.name for p in kept.iterdir()) == ["lambda0.json"]


def test_a_stopped_rerun_resumes_on_a_fresh_checkout_from_the_fits_it_archived(tmp_path, monkeypatch):
    """The first rerun stops with one of the job's lambda fits finished; a rerun in another checkout
    finds it in its ``results/`` before Snakemake runs; when the job finishes, the kept fit leaves the archive."""
    archive, first, second = tmp_path / "runs", tmp_path / "first", tmp_path / "second"
    job = "m4n_table1/ocr/M4N/split0.csv"
    monkeypatch.setattr(rerun, "fingerprints", lambda paths: {p: "f" * 16 for p in paths})
    archive.mkdir()
    seen = []

    def stopped(command, project, deadline):     # Snakemake stopped at the deadline, one fit done
        _fit(project / "results/m4n_table1/ocr/M4N/split0.fits", "abcd", 0.5)
        return None, True

    def finishes(command, project, deadline):
        seen.append(sorted(p.name for p in (project / "results/m4n_table1/ocr/M4N/split0.fits/abcd").iterdir()))
        write_job(project / "results", "m4n_table1", "ocr", "M4N", 0, record=rec({}))
        return None, False

    select = {"datasets": ["ocr"], "methods": ["M4N"], "splits": [0], "log": lambda line: None}
    monkeypatch.setattr(rerun, "_run_until", stopped)
    assert rerun.rerun(first, archive, "m4n_table1", CONFIG, **select) == (0, 1)
    assert (archive / "m4n_table1/ocr/M4N/split0.fits/abcd/lam=0.5.json").is_file()
    monkeypatch.setattr(rerun, "_run_until", finishes)
    assert rerun.rerun(second, archive, "m4n_table1", CONFIG, **select) == (1, 1)
    assert seen == [["lam=0.5.history.csv", "lam=0.5.json"]]
    assert (archive / job).is_file() and not (archive / "m4n_table1/ocr/M4N/split0.fits/abcd").exists()


def test_on_another_machine_class_a_rerun_redoes_what_is_not_fresh_on_the_archives_class(tmp_path, monkeypatch):
    """Not every job because the CPU differs: fingerprints cannot be computed there, so a job is
    fresh as recorded on the archive's class; unrecorded and not-reproduced jobs are pending."""
    from structpred.runs import staleness

    foreign = "x86_64 NeverSeenVendor neverseen | numpy AVX2 | openblas Haswell"
    monkeypatch.setattr(rerun, "machine_class", lambda: foreign)
    monkeypatch.setattr(staleness, "machine_class", lambda: foreign)
    write_job(tmp_path, "e", "d", "m", 0, record=rec({"a": "1"}, machine="archive-class"))
    write_job(tmp_path, "e", "d", "m", 1)
    write_job(tmp_path, "e", "d", "m", 2, record=rec({"a": "1"}, machine="archive-class", reproduced=False))
    assert rerun.fresh_jobs(tmp_path, {}, made_on="archive-class") == {"e/d/m/split0.csv"}
    write_job(tmp_path, "e", "d", "m", 3, record=rec({"a": "1"}, machine="archive-class"))
    (tmp_path / "e" / "reproduction.json").write_text(json.dumps({foreign: {"tier": "verdicts", "jobs": ["e/d/m/split3.csv"]}}))
    assert rerun.fresh_jobs(tmp_path, {}, made_on="archive-class") == {"e/d/m/split0.csv"}   # its verification failed here
    monkeypatch.setattr(staleness, "fingerprints", lambda names: {n: "1" for n in names})
    assert rerun.fresh_jobs(tmp_path, {}, made_on=None) == set()      # no committed class: this machine's
