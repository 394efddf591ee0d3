"""Store round trip, audit summary, and the ``structpred data`` CLI (run as a subprocess)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from structpred.data.registry import SOURCES
from structpred.data.store import load, prepare, summary
from structpred.errors import DataError

IRIS_SHA = SOURCES["iris"].file("iris.data").sha256


def run_cli(*args, env_extra=None, cwd=None):
    env = {k: v for k, v in os.environ.items() if k != "STRUCTPRED_MIRROR"}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "structpred.cli", *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def test_prepare_load_summary(mirror, tmp_path):
    out = tmp_path / "auto.npz"
    meta = prepare("auto", mirror, out)
    arrays, meta2 = load(out)
    assert meta2 == meta
    assert meta["parsed"] == [7, 392, 10] and meta["paper"] == [7, 391, 10]
    assert meta["raw_sha256"] == {"auto-mpg.data": SOURCES["auto"].files[0].sha256}
    assert "'?' horsepower" in meta["deviations"]
    assert set(arrays) == {"X", "y", "target"}
    assert arrays["X"].dtype == np.float64 and arrays["y"].dtype == np.int64
    s = summary(arrays, meta)
    assert (s["d"], s["n"], s["k"]) == (7, 392, 10)
    assert (s["paper_d"], s["paper_n"], s["paper_k"]) == (7, 391, 10)
    assert s["counts"] == [33, 41, 50, 36, 36, 40, 38, 39, 40, 39]
    assert [p.name for p in tmp_path.iterdir()] == ["auto.npz"]  # no temp file left


def test_prepare_from_source_folder_and_strings(mirror, tmp_path):
    meta = prepare("conll2003", mirror / "conll2003", tmp_path / "ner.npz")
    arrays, _ = load(tmp_path / "ner.npz")  # loads with allow_pickle=False
    assert arrays["words"].dtype.kind == "U"
    s = summary(arrays, meta)
    assert s["labels"][-1] == "O" and s["counts"][-1] == 250660 and s["n"] == 20744


def test_a_raw_file_changed_after_its_fetch_is_refused_where_it_is_read(mirror, tmp_path):
    """The .verified stamp is not trusted: prepare checks each file's sha256 as it reads it."""
    shutil.copytree(mirror / "iris", tmp_path / "iris")
    (tmp_path / "iris" / "iris.data").chmod(0o644)
    assert prepare("iris", tmp_path, tmp_path / "ok.npz")["raw_sha256"]["iris.data"] == IRIS_SHA
    data = tmp_path / "iris" / "iris.data"
    data.write_text(data.read_text().replace("5.1,3.5", "5.2,3.5", 1))
    with pytest.raises(DataError, match=rf"^checksum mismatch for iris/iris.data \(from .*changed since it was "
                                        rf"verified\): expected sha256 {IRIS_SHA}, actual sha256 [0-9a-f]{{64}}; URL "):
        prepare("iris", tmp_path, tmp_path / "bad.npz")
    assert not (tmp_path / "bad.npz").exists()


def test_load_rejects_foreign_file(tmp_path):
    np.savez(tmp_path / "x.npz", a=np.zeros(2))
    with pytest.raises(DataError, match="no 'meta'"):
        load(tmp_path / "x.npz")
    with pytest.raises(DataError, match="cannot read"):
        load(tmp_path / "missing.npz")


def test_cli_fetch_corrupted_mirror_fails_with_sha256s(mirror, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(mirror / "iris", bad / "iris")
    p = bad / "iris" / "iris.data"
    p.chmod(0o644)
    data = bytearray(p.read_bytes())
    data[0] ^= 0xFF
    p.write_bytes(bytes(data))
    import hashlib
    actual = hashlib.sha256(bytes(data)).hexdigest()
    r = run_cli("data", "fetch", "iris", "--dest", tmp_path / "d", "--mirror", bad)
    assert r.returncode == 2
    assert IRIS_SHA in r.stderr and actual in r.stderr
    assert not (tmp_path / "d" / "iris.data").exists()
    # same through the environment variable and the default dest data/raw/NAME
    r = run_cli("data", "fetch", "iris", env_extra={"STRUCTPRED_MIRROR": str(bad)}, cwd=tmp_path)
    assert r.returncode == 2 and actual in r.stderr
    assert not (tmp_path / "data" / "raw" / "iris" / "iris.data").exists()


def test_cli_fetch_list_prepare_views(mirror, tmp_path):
    r = run_cli("data", "fetch", "iris", "--mirror", mirror, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "data" / "raw" / "iris" / ".verified").is_file()
    r = run_cli("data", "list", "--mirror", mirror, cwd=tmp_path)
    assert r.returncode == 0
    lines = {ln.split()[0]: ln for ln in r.stdout.splitlines() if not ln.startswith(" ")}
    assert lines["source"].split() == ["source", "status", "files", "where"]       # a header row
    assert lines["iris"].split()[1:] == ["ok", "2/2", "cache"]
    assert lines["voc2007"].split()[1] == "missing" and lines["conll2005"].split()[1] == "ok"
    assert f"    missing: put VOCtrainval_06-Nov-2007.tar in {mirror}/voc2007/" in r.stdout.splitlines()
    r = run_cli("data", "prepare", "iris", "--raw", tmp_path / "data" / "raw",
                "--out", tmp_path / "iris.npz")
    assert r.returncode == 0 and "(4, 150, 3)" in r.stdout
    r = run_cli("data", "views")
    assert r.returncode == 0 and "rnk_glass" in r.stdout
    r = run_cli("data", "prepare", "nope", "--raw", tmp_path, "--out", tmp_path / "x.npz")
    assert r.returncode == 2 and "unknown view 'nope'" in r.stderr
