"""Before the first job: which raw files a run needs and cannot get.

A file is available when it is in the raw folder (``<raw_dir>/<source>/<file>``) or in the mirror
(``<mirror>/<source>/<file>``), or, with no mirror set, when the registry pins its checksum so it
can be downloaded and verified.  With a mirror set the run is offline: a file the mirror lacks is
missing.  The workflow lists every missing file of the run in one message before any job starts
(``onstart``), and ``data.skip_missing: true`` drops the experiments that need one instead;
``structpred run --plan`` and a dry run print the same list without running anything
(:func:`structpred.run_cli.plan`), and ``structpred experiments`` each experiment's
:func:`source_origins`.
"""

from __future__ import annotations

from pathlib import Path

from structpred.data.acquire import resolve_mirror
from structpred.data.registry import get_source


#: where a run gets a raw file from, best first (:func:`origin`)
ORIGINS = ("present", "mirror", "downloadable", "missing")


def origin(name: str, rf, raw_dir, root: Path | None) -> str:
    """Where a run gets one raw file ``rf`` of source ``name``: ``present`` (in the raw folder),
    ``mirror`` (copied from the mirror ``root``), ``downloadable`` (no mirror set and its checksum
    pinned: downloaded and verified by its fetch) or ``missing`` (none of these).  Nothing is read
    or hashed: the fetch verifies."""
    if (Path(raw_dir) / name / rf.path).is_file():
        return "present"
    if root is not None:
        return "mirror" if (root / name / rf.path).is_file() else "missing"
    return "downloadable" if rf.pinned else "missing"


def source_origins(sources, raw_dir, mirror=None) -> dict[str, str]:
    """Per source of ``sources``: the worst :func:`origin` of its files (``present`` only when
    every file is in the raw folder, ``missing`` when one cannot be had)."""
    root = resolve_mirror(mirror)
    return {name: max((origin(name, rf, raw_dir, root) for rf in get_source(name).files),
                      key=ORIGINS.index, default="present") for name in sources}


def unavailable(sources, raw_dir, mirror=None) -> list[dict]:
    """One row per file of ``sources`` the run cannot get: source, file, url, expected checksum
    (or None when unpinned) and where to put it."""
    root = resolve_mirror(mirror)
    rows = []
    for name in sources:
        source = get_source(name)
        for rf in source.files:
            if origin(name, rf, raw_dir, root) != "missing":
                continue
            rows.append({"source": name, "file": rf.path, "url": rf.url,
                         "expected": f"sha256 {rf.sha256}" if rf.sha256 is not None else
                         (f"md5 {rf.md5}" if rf.md5 is not None else "no checksum pinned"),
                         "put": str((root if root is not None else Path(raw_dir)) / name / rf.path)})
    return rows


def message(rows) -> str:
    """The one message naming every missing file: where to get it, its checksum, where to put it."""
    lines = [f"{len(rows)} raw file(s) this run needs cannot be had (no job was started):"]
    for r in rows:
        lines.append(f"  {r['source']}/{r['file']}: put it at {r['put']} (from {r['url']}; {r['expected']})")
    lines.append("Or build everything else: set skip_missing: true under data: in the config (a --configfile "
                 "with that line will do); the report and the claims ledger then say 'cannot check' for the "
                 "experiments left out.")
    return "\n".join(lines)
