"""Canonical arrays on disk: ``prepare`` a view into a compressed ``.npz``; ``load`` it back.

The ``.npz`` holds the view's arrays (no pickles: numbers and unicode only) plus a ``meta``
array: a json string with ``view``, ``source``, ``task``, ``parsed`` and ``paper`` (d, n, k),
``deviations`` and ``raw_sha256`` (file -> sha256 of the raw files of the source).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np

from structpred.data.acquire import verify_folder
from structpred.data.parsers import get_view, parse_view, validate
from structpred.data.registry import get_source
from structpred.errors import DataError
from structpred.io import atomic_open

log = logging.getLogger(__name__)


def raw_folder(view_name: str, raw_root: str | os.PathLike) -> Path:
    """The raw folder of a view: ``raw_root/<source>`` if it exists, else ``raw_root``."""
    view = get_view(view_name)
    root = Path(raw_root)
    return root / view.source if (root / view.source).is_dir() else root


def prepare(view_name: str, raw_root: str | os.PathLike, out: str | os.PathLike) -> dict:
    """Parse view ``view_name`` from ``raw_root`` and save it atomically to ``out`` (.npz).

    ``raw_root`` is either the folder holding ``<source>/`` folders or the source folder
    itself. Returns the meta dict written.
    """
    view = get_view(view_name)
    raw = raw_folder(view_name, raw_root)
    source = get_source(view.source)
    checksums = verify_folder(source, raw)   # the files as read now, not as once fetched
    arrays = parse_view(view_name, raw)
    if "meta" in arrays:
        raise DataError(f"view {view_name}: 'meta' is a reserved array name")
    meta = {
        "view": view.name,
        "source": view.source,
        "task": view.task,
        "parsed": list(validate(view, arrays)),
        "paper": list(view.paper_dnk) if view.paper_dnk else None,
        "deviations": view.deviations,
        "raw_sha256": checksums,
    }
    with atomic_open(out, "wb") as fh:
        np.savez_compressed(fh, meta=np.asarray(json.dumps(meta, sort_keys=True)), **arrays)
    log.info("prepared view %s -> %s (d, n, k = %s)", view_name, out, meta["parsed"])
    return meta


def load(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict]:
    """Read a prepared ``.npz``: ``(arrays, meta)`` (pickles disallowed)."""
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read prepared view {path}: {exc}") from None
    if "meta" not in arrays:
        raise DataError(f"{path}: no 'meta' entry (not written by structpred.data.store)")
    return arrays, json.loads(str(arrays.pop("meta")))


def _balance(task: str, a: dict[str, np.ndarray]) -> tuple[list, list[int]] | tuple[None, None]:
    if task in ("mc", "ord", "seq", "emotion", "digits"):
        labels, counts = np.unique(a["y"], return_counts=True)
    elif task == "ner":
        labels, counts = np.unique(a["tags"], return_counts=True)
    elif task == "ratings":
        labels, counts = np.unique(a["ratings"][:, 2], return_counts=True)
    elif task == "rnk":  # how often each label is ranked first
        labels, counts = np.unique(np.argmin(a["Y"], axis=1), return_counts=True)
    elif task == "voc":
        labels, counts = np.unique(a["obj_class"], return_counts=True)
    else:
        return None, None
    return [v.item() if hasattr(v, "item") else v for v in labels], [int(c) for c in counts]


def summary(arrays: dict[str, np.ndarray], meta: dict) -> dict:
    """Audit row: view, source, task, parsed and paper (d, n, k), class balance.

    ``labels``/``counts``: class label counts (mc, ord, seq, emotion, digits: ``y``; ner:
    tags; ratings: rating levels; rnk: the label ranked first; srl: None).
    """
    d, n, k = meta["parsed"]
    paper = meta.get("paper") or [None, None, None]
    labels, counts = _balance(meta["task"], arrays)
    return {
        "view": meta["view"], "source": meta["source"], "task": meta["task"],
        "d": d, "n": n, "k": k,
        "paper_d": paper[0], "paper_n": paper[1], "paper_k": paper[2],
        "labels": labels, "counts": counts,
        "deviations": meta.get("deviations", ""),
    }
