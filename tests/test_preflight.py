"""Before the first job: the raw files a run needs and cannot get (structpred.data.preflight)."""

from __future__ import annotations

import shutil

from structpred.data.preflight import message, unavailable
from structpred.data.registry import get_source


def test_a_file_is_had_from_the_raw_folder_the_mirror_or_a_pinned_download(tmp_path, mirror, monkeypatch):
    shutil.copytree(mirror / "iris", tmp_path / "mirror" / "iris")
    raw = tmp_path / "raw"
    (raw / "wine").mkdir(parents=True)
    for rf in get_source("wine").files:
        shutil.copy(mirror / "wine" / rf.path, raw / "wine" / rf.path)
    # offline (a mirror set): iris from the mirror, wine from the raw folder, auto missing
    rows = unavailable(["iris", "wine", "auto"], raw, tmp_path / "mirror")
    assert {r["source"] for r in rows} == {"auto"}
    assert rows[0]["put"] == str(tmp_path / "mirror" / "auto" / rows[0]["file"])
    assert rows[0]["expected"] == f"sha256 {get_source('auto').files[0].sha256}"
    # online (no mirror): pinned files are downloaded and verified (VOC by its md5)
    monkeypatch.delenv("STRUCTPRED_MIRROR", raising=False)
    assert unavailable(["auto", "voc2007"], raw, None) == []
    offline = unavailable(["voc2007"], raw, tmp_path / "mirror")
    assert [r["expected"][:4] for r in offline] == ["md5 ", "md5 "]
    text = message(unavailable(["auto"], raw, tmp_path / "mirror"))
    assert text.splitlines()[0] == "1 raw file(s) this run needs cannot be had (no job was started):"
    assert "skip_missing: true" in text
