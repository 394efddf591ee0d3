"""Acquisition of raw files: local cache -> mirror folder -> download, always verified.

For every file of a :class:`~structpred.data.registry.Source`, :func:`fetch` tries in order

a. ``dest/<path>`` already present with the right sha256: kept;
b. ``<mirror>/<source>/<path>`` (mirror = argument, else env ``STRUCTPRED_MIRROR``): copied;
c. download of ``RawFile.url`` with :mod:`urllib.request` (retries with exponential
   backoff, chunked, tqdm progress bar on stderr).

Whatever the origin, the bytes are written to a temporary file beside the destination,
verified, and only then renamed into place (:func:`structpred.io.atomic_path`): a checksum
mismatch or a failed download leaves no file behind and raises
:class:`~structpred.errors.DataError` naming the file, the expected and actual sha256 and
the URL. A file present in ``dest`` with a wrong checksum is treated as stale and replaced.
On success a stamp ``dest/.verified`` (json ``{path: sha256}``) is written atomically so a
workflow rule can declare it as output.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tqdm import tqdm

from structpred.data.registry import RawFile, Source, get_source
from structpred.errors import DataError
from structpred.io import atomic_path, write_text

log = logging.getLogger(__name__)

MIRROR_ENV = "STRUCTPRED_MIRROR"
STAMP = ".verified"
CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    """Hex sha256 of the file at ``path`` (read in 1 MiB chunks)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _md5_file(path: Path) -> str:
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def check_file(path: Path, rf: RawFile) -> tuple[bool, str]:
    """Verify a stored file against ``rf``; return ``(ok, actual_sha256)``.

    ``rf.sha256`` shorter than 64 hex digits is compared as a prefix; without a sha256 the
    file's MD5 is compared with ``rf.md5`` (unpinned: never ok). A gzip file whose bytes
    differ from ``rf.sha256`` is still accepted when ``rf.decompressed_sha256`` is set and its
    decompressed content matches (a ``.gz`` written by another gzip implementation).
    """
    actual = sha256_file(path)
    if rf.sha256 is None:
        return rf.md5 is not None and _md5_file(path) == rf.md5, actual
    if actual.startswith(rf.sha256) if rf.is_prefix else actual == rf.sha256:
        return True, actual
    if rf.decompressed_sha256 is not None:
        try:
            content = hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest()
        except (OSError, EOFError, gzip.BadGzipFile):
            return False, actual
        if content == rf.decompressed_sha256:
            log.info("%s: .gz bytes differ but decompressed content verified", path)
            return True, actual
    return False, actual


def verify_folder(source: Source, folder: Path) -> dict[str, str]:
    """``{path: sha256}`` of the source's files present in ``folder``, each checked against the
    registry where it pins a checksum: a raw file changed after its fetch is the fetch's one-line
    checksum error, where it is read, not a result computed from it."""
    out = {}
    for rf in source.files:
        path = Path(folder) / rf.path
        if not path.is_file():
            continue
        if rf.sha256 is None and rf.md5 is None:
            out[rf.path] = sha256_file(path)
            continue
        ok, actual = check_file(path, rf)
        if not ok:
            raise _mismatch(source, rf, rf.sha256 or "", actual, f"{path}, changed since it was verified", path)
        out[rf.path] = actual
    return out


def resolve_mirror(mirror: str | os.PathLike | None) -> Path | None:
    """The mirror root: ``mirror`` if given, else ``$STRUCTPRED_MIRROR``, else None."""
    if mirror is not None:
        return Path(mirror)
    env = os.environ.get(MIRROR_ENV)
    return Path(env) if env else None


def _mismatch(source: Source, rf: RawFile, expected: str, actual: str, origin: str,
              path: Path | None = None) -> DataError:
    if rf.sha256 is None and rf.md5 is not None and path is not None:
        expected, actual = f"md5 {rf.md5}", f"md5 {_md5_file(path)}"
    else:
        expected, actual = f"sha256 {expected}", f"sha256 {actual}"
    return DataError(
        f"checksum mismatch for {source.name}/{rf.path} (from {origin}): "
        f"expected {expected}, actual {actual}; URL {rf.url}"
    )


def _missing(source: Source, rf: RawFile, url: str, why: str) -> DataError:
    return DataError(
        f"missing raw file {source.name}/{rf.path}: {why}; URL {url}; "
        f"expected {rf.expected}"
    )


def _download(url: str, target: Path, *, retries: int, timeout: float) -> None:
    """Download ``url`` to ``target`` (chunked, progress bar); retry transient failures.

    HTTP 4xx errors are not retried. Raises ``OSError`` subclasses on final failure.
    """
    last: Exception | None = None
    for attempt in range(1, max(1, retries) + 1):
        try:
            req = urllib.request.Request(url, headers={"User-Agent": "structpred"})
            with urllib.request.urlopen(req, timeout=timeout) as resp, open(target, "wb") as out:
                total = resp.headers.get("Content-Length")
                with tqdm(
                    total=int(total) if total else None,
                    unit="B",
                    unit_scale=True,
                    desc=Path(url).name,
                    file=sys.stderr,
                    disable=None,
                    leave=False,
                ) as bar:
                    for block in iter(lambda: resp.read(CHUNK), b""):
                        out.write(block)
                        bar.update(len(block))
            return
        except urllib.error.HTTPError as exc:
            if 400 <= exc.code < 500:
                raise
            last = exc
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            last = exc
        if attempt < retries:
            delay = 0.5 * 2 ** (attempt - 1)
            log.warning("download of %s failed (%s); retry %d in %.1fs", url, last, attempt, delay)
            time.sleep(delay)
    assert last is not None
    raise last


def _gzip_file(src: Path, dst: Path) -> None:
    """Compress ``src`` into ``dst`` like ``gzip -9 -n`` (GNU gzip if on PATH, else zlib)."""
    exe = shutil.which("gzip")
    if exe:
        with open(src, "rb") as fin, open(dst, "wb") as fout:
            subprocess.run([exe, "-9", "-n", "-c"], stdin=fin, stdout=fout, check=True)
    else:
        dst.write_bytes(gzip.compress(src.read_bytes(), compresslevel=9, mtime=0))


def _from_url(source: Source, rf: RawFile, target: Path, url: str, retries: int, timeout: float,
              mirror_file: Path | None) -> None:
    """Download ``rf`` into ``target`` atomically after verifying it; ``mirror_file`` is where the
    mirror was looked up (None: no mirror configured), for the error message."""
    if source.manual:
        raise _missing(source, rf, url, source.manual)
    if not rf.pinned:
        raise DataError(
            f"refusing to download {source.name}/{rf.path} from {url}: its sha256 is not "
            "pinned in the registry, so the download could not be verified; place a trusted "
            "copy in the mirror and pin its checksum in structpred/data/registry.py"
        )
    with atomic_path(target) as tmp:
        try:
            _download(url, tmp, retries=retries, timeout=timeout)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            tried = (f"not in the mirror ({mirror_file})" if mirror_file is not None
                     else "no mirror set (data.mirror or STRUCTPRED_MIRROR)")
            raise _missing(source, rf, url, f"{tried} and the download failed ({exc})") from exc
        if rf.decompressed_sha256 is not None:
            # URL serves the uncompressed content: verify it, then store it gzipped.
            actual = sha256_file(tmp)
            if actual != rf.decompressed_sha256:
                raise _mismatch(source, rf, rf.decompressed_sha256, actual, f"download {url}, decompressed")
            plain = tmp.with_name(tmp.name + ".plain")
            os.replace(tmp, plain)
            try:
                _gzip_file(plain, tmp)
            finally:
                plain.unlink(missing_ok=True)
            gz = sha256_file(tmp)
            if gz != rf.sha256:
                log.info("%s: content verified; .gz sha256 %s differs from the mirror's %s "
                         "(different gzip implementation)", rf.path, gz, rf.sha256)
        else:
            ok, actual = check_file(tmp, rf)
            if not ok:
                raise _mismatch(source, rf, rf.sha256, actual, f"download {url}", tmp)
    log.info("downloaded %s/%s from %s", source.name, rf.path, url)


def _from_mirror(source: Source, rf: RawFile, mfile: Path, target: Path) -> None:
    """Copy ``mfile`` into ``target`` atomically after verifying the copy."""
    if not rf.pinned:
        raise DataError(f"{source.name}/{rf.path}: no checksum pinned in the registry; cannot verify {mfile}")
    with atomic_path(target) as tmp:
        shutil.copyfile(mfile, tmp)
        ok, actual = check_file(tmp, rf)
        if not ok:
            raise _mismatch(source, rf, rf.sha256, actual, f"mirror {mfile}", tmp)
    log.info("copied %s/%s from mirror %s", source.name, rf.path, mfile)


def _url_for(rf: RawFile, base_url: str | None) -> str:
    if base_url is None:
        return rf.url
    return base_url.rstrip("/") + "/" + rf.url.rsplit("/", 1)[-1]


def fetch(
    source_name: str,
    dest: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    *,
    retries: int = 3,
    timeout: float = 60,
    base_url: str | None = None,
) -> Path:
    """Make every raw file of ``source_name`` present and verified in ``dest``; return ``dest``.

    ``base_url`` replaces the directory part of every registry URL (for tests against a local
    server and for institutional mirrors served over HTTP). Raises DataError on an unknown
    source, a checksum mismatch (naming expected/actual sha256 and URL) or a missing file.
    """
    source = get_source(source_name)
    dest = Path(dest)
    root = resolve_mirror(mirror)
    if not all(rf.pinned for rf in source.files):
        raise DataError(
            f"cannot fetch {source.name}: the sha256 of "
            + ", ".join(rf.path for rf in source.files if not rf.pinned)
            + f" is not pinned in the registry, so no copy could be verified (URL "
            f"{source.files[0].url}); download it by hand and pin its checksum first"
        )
    stamp: dict[str, str] = {}
    for rf in source.files:
        target = dest / rf.path
        if target.is_file():
            ok, actual = check_file(target, rf)
            if ok:
                log.debug("cache hit %s", target)
                stamp[rf.path] = actual
                continue
            log.warning("%s has sha256 %s, expected %s: replacing it", target, actual, rf.expected)
        mfile = root / source.name / rf.path if root is not None else None
        if mfile is not None and mfile.is_file():
            _from_mirror(source, rf, mfile, target)
        else:
            _from_url(source, rf, target, _url_for(rf, base_url), retries, timeout, mfile)
        stamp[rf.path] = sha256_file(target)
    write_text(dest / STAMP, json.dumps(stamp, indent=1, sort_keys=True) + "\n")
    log.info("%s: %d files verified in %s", source.name, len(stamp), dest)
    return dest


def status(
    source_name: str,
    dest: str | os.PathLike | None = None,
    mirror: str | os.PathLike | None = None,
) -> list[dict]:
    """Per file of ``source_name``: where it is and whether its checksum holds.

    Each dict has ``file``, ``where`` ("cache" = in ``dest``, "mirror", "missing"),
    ``checksum`` ("ok", "MISMATCH", "unpinned" or None when missing), ``expected``,
    ``actual`` and ``url``.
    """
    source = get_source(source_name)
    root = resolve_mirror(mirror)
    rows = []
    for rf in source.files:
        row = {"file": rf.path, "where": "missing", "checksum": None,
               "expected": rf.sha256 if rf.sha256 is not None else rf.md5, "actual": None, "url": rf.url}
        cands = []
        if dest is not None:
            cands.append(("cache", Path(dest) / rf.path))
        if root is not None:
            cands.append(("mirror", root / source.name / rf.path))
        for where, path in cands:
            if path.is_file():
                ok, actual = check_file(path, rf)
                row.update(where=where, actual=actual,
                           checksum="unpinned" if not rf.pinned else ("ok" if ok else "MISMATCH"))
                break
        rows.append(row)
    return rows
