"""Registry: every pinned sha256 equals the mirror's file; coverage of the mirror."""

from __future__ import annotations

import gzip
import hashlib

import pytest

from structpred.data.acquire import sha256_file
from structpred.data.parsers import VIEWS, expected_dnk
from structpred.data.registry import SOURCES, get_source
from structpred.errors import DataError


def test_sources_cover_mirror_folders(mirror):
    folders = {p.name for p in mirror.iterdir() if p.is_dir()}
    assert set(SOURCES) == folders | {"alexnet"}
    assert len(SOURCES) == 21


@pytest.mark.parametrize("name", sorted(set(SOURCES) - {"voc2007", "alexnet"}))
def test_every_registry_sha256_matches_mirror(mirror, name):
    src = SOURCES[name]
    on_disk = sorted(str(p.relative_to(mirror / name)) for p in (mirror / name).rglob("*")
                     if p.is_file() and p.name != "SOURCE.md")
    assert sorted(f.path for f in src.files) == on_disk
    for rf in src.files:
        assert len(rf.sha256) == 64
        assert sha256_file(mirror / name / rf.path) == rf.sha256, rf.path
        assert rf.url.startswith(("http://", "https://"))


def test_registry_sha256_also_listed_in_source_md(mirror):
    for name, src in SOURCES.items():
        if name in ("voc2007", "alexnet"):
            continue
        text = (mirror / name / "SOURCE.md").read_text()
        for rf in src.files:
            assert rf.sha256 in text, (name, rf.path)


def test_conll2003_records_both_checksums(mirror):
    src = SOURCES["conll2003"]
    assert len(src.files) == 3
    for rf in src.files:
        data = gzip.decompress((mirror / "conll2003" / rf.path).read_bytes())
        assert hashlib.sha256(data).hexdigest() == rf.decompressed_sha256
        assert not rf.url.endswith(".gz")  # URL serves the uncompressed file
    assert src.file("eng.train.gz").decompressed_sha256 == (
        "bed631399cb0e859c4b446438ce57dfe0208792ca6106ef11620877355494c3a")


def test_special_sources():
    assert len(SOURCES["conll2005"].files) == 144
    assert SOURCES["conll2005"].manual
    assert all(f.sha256 is None and f.pinned for f in SOURCES["voc2007"].files)   # torchvision's MD5s
    assert [f.md5 for f in SOURCES["voc2007"].files] == ["c52e279531787c972589f7e41ab4ae64",
                                                         "b6e924de25625d8de591ea690078ad9f"]
    assert [f.path for f in SOURCES["voc2007"].files] == [
        "VOCtrainval_06-Nov-2007.tar", "VOCtest_06-Nov-2007.tar"]
    (alex,) = SOURCES["alexnet"].files
    assert alex.sha256 == "7be5be79" and alex.is_prefix
    assert alex.url == "https://download.pytorch.org/models/alexnet-owt-7be5be79.pth"


def test_unknown_source_lists_known_names():
    with pytest.raises(DataError, match="known: abalone, alexnet"):
        get_source("nope")


def test_deviation_documented_wherever_parsed_differs_from_paper():
    for v in VIEWS.values():
        if v.paper_dnk is not None and expected_dnk(v) != v.paper_dnk:
            assert v.deviations, v.name
        assert v.source in SOURCES
