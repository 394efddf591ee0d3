"""Acquisition: cache, mirror, local-HTTP downloads, corruption, 404; never a partial file."""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import json
import shutil
import threading
import urllib.parse
import urllib.request

import pytest

from structpred.data import acquire
from structpred.data.acquire import fetch, sha256_file, status
from structpred.data.registry import SOURCES
from structpred.errors import DataError

IRIS_SHA = SOURCES["iris"].file("iris.data").sha256


@pytest.fixture(autouse=True)
def local_network_only(monkeypatch):
    """No test may reach any address but 127.0.0.1; no ambient mirror."""
    real = urllib.request.urlopen

    def guarded(req, *a, **kw):
        url = req.full_url if isinstance(req, urllib.request.Request) else req
        host = urllib.parse.urlparse(url).hostname
        if host != "127.0.0.1":
            raise AssertionError(f"test tried to reach {url}")
        return real(req, *a, **kw)

    monkeypatch.setattr(urllib.request, "urlopen", guarded)
    monkeypatch.delenv("STRUCTPRED_MIRROR", raising=False)


@pytest.fixture
def server(tmp_path):
    """A ThreadingHTTPServer on 127.0.0.1:<free port> serving ``tmp_path/www``."""
    root = tmp_path / "www"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}/data"
    httpd.shutdown()
    httpd.server_close()


def _files(folder):
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_mirror_copy_then_cache_hit(mirror, tmp_path, monkeypatch):
    dest = tmp_path / "iris"
    assert fetch("iris", dest, mirror) == dest
    assert _files(dest) == [".verified", "iris.data", "iris.names"]
    assert json.loads((dest / ".verified").read_text())["iris.data"] == IRIS_SHA
    # second fetch: cache hit, neither mirror nor network touched
    monkeypatch.setattr(acquire, "_from_mirror", lambda *a: pytest.fail("mirror used"))
    monkeypatch.setattr(acquire, "_download", lambda *a, **k: pytest.fail("network used"))
    fetch("iris", dest, tmp_path / "no-mirror")
    assert sha256_file(dest / "iris.data") == IRIS_SHA


def test_env_mirror(mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("STRUCTPRED_MIRROR", str(mirror))
    fetch("wine", tmp_path / "wine")
    assert _files(tmp_path / "wine") == [".verified", "wine.data", "wine.names"]


def corrupted_copy(mirror, tmp_path):
    bad = tmp_path / "badmirror"
    shutil.copytree(mirror / "iris", bad / "iris")
    p = bad / "iris" / "iris.data"
    p.chmod(0o644)
    data = bytearray(p.read_bytes())
    data[100] ^= 0x01
    p.write_bytes(bytes(data))
    return bad, hashlib.sha256(bytes(data)).hexdigest()


def test_corrupted_mirror_raises_and_leaves_nothing(mirror, tmp_path):
    bad, actual = corrupted_copy(mirror, tmp_path)
    dest = tmp_path / "dest"
    with pytest.raises(DataError) as exc:
        fetch("iris", dest, bad)
    msg = str(exc.value)
    assert IRIS_SHA in msg and actual in msg
    assert SOURCES["iris"].file("iris.data").url in msg and "iris.data" in msg
    assert not (dest / "iris.data").exists() and not (dest / ".verified").exists()
    assert [p for p in dest.iterdir() if p.name.endswith(".tmp")] == []


def test_stale_cache_file_is_replaced(mirror, tmp_path):
    dest = tmp_path / "iris"
    dest.mkdir()
    (dest / "iris.data").write_text("garbage")
    fetch("iris", dest, mirror)
    assert sha256_file(dest / "iris.data") == IRIS_SHA


def test_download_success(mirror, server, tmp_path):
    www, url = server
    (www / "data").mkdir()
    for name in ("iris.data", "iris.names"):
        shutil.copy(mirror / "iris" / name, www / "data" / name)
    dest = tmp_path / "dl"
    fetch("iris", dest, None, base_url=url)
    assert sha256_file(dest / "iris.data") == IRIS_SHA
    assert status("iris", dest, None)[0]["checksum"] == "ok"


def test_download_corrupted_payload(mirror, server, tmp_path):
    www, url = server
    (www / "data").mkdir()
    shutil.copy(mirror / "iris" / "iris.names", www / "data" / "iris.names")
    payload = (mirror / "iris" / "iris.data").read_bytes().replace(b"setosa", b"setosb", 1)
    (www / "data" / "iris.data").write_bytes(payload)
    dest = tmp_path / "dl"
    with pytest.raises(DataError) as exc:
        fetch("iris", dest, None, base_url=url, retries=1)
    msg = str(exc.value)
    assert "checksum mismatch for iris/iris.data" in msg
    assert IRIS_SHA in msg and hashlib.sha256(payload).hexdigest() in msg
    assert f"{url}/iris.data" in msg
    assert _files(dest) == []


def test_download_404(server, tmp_path):
    _, url = server
    dest = tmp_path / "dl"
    with pytest.raises(DataError) as exc:
        fetch("iris", dest, None, base_url=url, retries=2)
    msg = str(exc.value)
    assert "missing raw file iris/iris.data" in msg and "404" in msg
    assert f"{url}/iris.data" in msg and IRIS_SHA in msg
    assert _files(dest) == []


def test_download_no_server(tmp_path, monkeypatch):
    monkeypatch.setattr(acquire.time, "sleep", lambda s: None)
    with pytest.raises(DataError, match="missing raw file wine/wine.data.*expected sha256"):
        fetch("wine", tmp_path / "d", None, base_url="http://127.0.0.1:9", retries=2, timeout=2)


def test_failed_fetch_says_whether_a_mirror_was_set(tmp_path, monkeypatch):
    """With no mirror configured the error says so (not "the mirror lacks it"); with one, it names
    the file looked for there."""
    monkeypatch.setattr(acquire.time, "sleep", lambda s: None)
    monkeypatch.delenv("STRUCTPRED_MIRROR", raising=False)
    with pytest.raises(DataError) as exc:
        fetch("wine", tmp_path / "d", None, base_url="http://127.0.0.1:9", retries=1, timeout=2)
    assert "no mirror set (data.mirror or STRUCTPRED_MIRROR) and the download failed" in str(exc.value)
    empty = tmp_path / "mirror"
    empty.mkdir()
    with pytest.raises(DataError) as exc:
        fetch("wine", tmp_path / "d", empty, base_url="http://127.0.0.1:9", retries=1, timeout=2)
    assert f"not in the mirror ({empty / 'wine' / 'wine.data'}) and the download failed" in str(exc.value)


def test_conll2003_download_stored_gzipped(mirror, server, tmp_path):
    www, url = server
    (www / "data").mkdir()
    for rf in SOURCES["conll2003"].files:
        raw = gzip.decompress((mirror / "conll2003" / rf.path).read_bytes())
        (www / "data" / rf.path.removesuffix(".gz")).write_bytes(raw)
    dest = tmp_path / "conll"
    fetch("conll2003", dest, None, base_url=url)
    for rf in SOURCES["conll2003"].files:
        stored = (dest / rf.path).read_bytes()
        assert hashlib.sha256(gzip.decompress(stored)).hexdigest() == rf.decompressed_sha256
        if shutil.which("gzip"):  # GNU gzip -9 -n reproduces the mirror's .gz exactly
            assert hashlib.sha256(stored).hexdigest() == rf.sha256
    assert [r["checksum"] for r in status("conll2003", dest, None)] == ["ok"] * 3


def test_conll2003_corrupted_download(mirror, server, tmp_path):
    www, url = server
    (www / "data").mkdir()
    (www / "data" / "eng.testa").write_text("EU NNP I-NP I-ORG\n")
    rf = SOURCES["conll2003"].file("eng.testa.gz")
    with pytest.raises(DataError) as exc:
        fetch("conll2003", tmp_path / "c", None, base_url=url)
    assert rf.decompressed_sha256 in str(exc.value) and "eng.testa" in str(exc.value)
    assert not (tmp_path / "c" / "eng.testa.gz").exists()


def test_refusals(tmp_path, monkeypatch):
    from structpred.data import registry

    rf = registry.RawFile("VOCtrainval_06-Nov-2007.tar", "http://127.0.0.1:9/x.tar", None)
    monkeypatch.setitem(registry.SOURCES, "voc2007", registry.Source("voc2007", (rf,), "", "", ""))
    with pytest.raises(DataError, match="sha256 of VOCtrainval_06-Nov-2007.tar.*not pinned"):
        fetch("voc2007", tmp_path / "voc")
    with pytest.raises(DataError, match="put the prepared conll05st-release|Put the prepared"):
        fetch("conll2005", tmp_path / "srl")
    with pytest.raises(DataError, match="unknown dataset 'irs'; known: .*iris"):
        fetch("irs", tmp_path / "x")
    assert _files(tmp_path / "srl") == []


def test_alexnet_prefix_verification(server, tmp_path, monkeypatch):
    www, url = server
    (www / "data").mkdir()
    (www / "data" / "alexnet-owt-7be5be79.pth").write_bytes(b"not the weights")
    with pytest.raises(DataError, match="expected sha256 7be5be79, actual sha256"):
        fetch("alexnet", tmp_path / "a", None, base_url=url)
    # a payload whose sha256 starts with the prefix is accepted
    from structpred.data import registry
    payload = b"weights"
    prefix = hashlib.sha256(payload).hexdigest()[:8]
    rf = registry.RawFile("alexnet-owt-7be5be79.pth", registry.ALEXNET_URL, prefix)
    monkeypatch.setitem(registry.SOURCES, "alexnet",
                        registry.Source("alexnet", (rf,), "", "", ""))
    (www / "data" / "alexnet-owt-7be5be79.pth").write_bytes(payload)
    fetch("alexnet", tmp_path / "a", None, base_url=url)
    assert (tmp_path / "a" / "alexnet-owt-7be5be79.pth").read_bytes() == payload


def test_voc_tarballs_are_verified_by_their_published_md5(server, tmp_path, monkeypatch):
    www, url = server
    (www / "data").mkdir()
    # the real files are not here: the check itself, on the registry's entry with another MD5
    from structpred.data import registry

    payload = b"a VOC tarball"
    good = registry.RawFile("VOCtest_06-Nov-2007.tar", registry.VOC_BASE + "/VOCtest_06-Nov-2007.tar", None,
                            md5=hashlib.md5(payload).hexdigest())
    monkeypatch.setitem(registry.SOURCES, "voc2007", registry.Source("voc2007", (good,), "", "", ""))
    (www / "data" / "VOCtest_06-Nov-2007.tar").write_bytes(b"something else")
    with pytest.raises(DataError, match=f"expected md5 {good.md5}, actual md5 "):
        fetch("voc2007", tmp_path / "v", None, base_url=url)
    assert not (tmp_path / "v" / "VOCtest_06-Nov-2007.tar").exists()
    (www / "data" / "VOCtest_06-Nov-2007.tar").write_bytes(payload)
    fetch("voc2007", tmp_path / "v", None, base_url=url)
    stamp = json.loads((tmp_path / "v" / ".verified").read_text())
    assert stamp == {"VOCtest_06-Nov-2007.tar": hashlib.sha256(payload).hexdigest()}
    # and from a mirror
    mirror = tmp_path / "m" / "voc2007"
    mirror.mkdir(parents=True)
    (mirror / "VOCtest_06-Nov-2007.tar").write_bytes(payload)
    fetch("voc2007", tmp_path / "w", tmp_path / "m")
    assert status("voc2007", tmp_path / "w")[0]["checksum"] == "ok"


def test_status(mirror, tmp_path):
    rows = status("iris", tmp_path / "none", mirror)
    assert [(r["file"], r["where"], r["checksum"]) for r in rows] == [
        ("iris.data", "mirror", "ok"), ("iris.names", "mirror", "ok")]
    bad, _ = corrupted_copy(mirror, tmp_path)
    assert status("iris", None, bad)[0]["checksum"] == "MISMATCH"
    assert status("iris", None, None)[0]["where"] == "missing"
    assert [r["where"] for r in status("voc2007", tmp_path, mirror)] == ["missing", "missing"]


def test_conll2005_from_mirror_nested_paths(mirror, tmp_path):
    dest = tmp_path / "srl"
    fetch("conll2005", dest, mirror)
    stamp = json.loads((dest / ".verified").read_text())
    assert len(stamp) == 144
    assert (dest / "conll05st-release" / "train" / "props" / "train.21.props.gz").is_file()
