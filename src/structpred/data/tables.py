"""Low-level readers shared by the parsers: text lines with line numbers, numeric columns.

Every problem raises :class:`~structpred.errors.DataError` naming the file and the line.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Iterator

import numpy as np

from structpred.errors import DataError


def open_text(path: Path, encoding: str = "utf-8"):
    """Open ``path`` for reading text, transparently decompressing ``*.gz``."""
    if not path.is_file():
        raise DataError(f"raw file {path} is missing")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding=encoding, newline="")
    return open(path, encoding=encoding, newline="")


def lines(path: Path, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` (1-based, line endings incl. CR stripped)."""
    with open_text(path, encoding) as fh:
        for no, line in enumerate(fh, 1):
            yield no, line.rstrip("\r\n")


def rows(path: Path, ncols: int | None, sep: str | None = None, encoding: str = "utf-8",
         skip: int = 0) -> list[tuple[int, list[str]]]:
    """Non-blank lines of ``path`` split on ``sep`` (None = whitespace), with line numbers.

    ``skip`` leading lines are ignored. If ``ncols`` is given, a line with another number of
    fields raises DataError naming the file and the line.
    """
    out = []
    for no, line in lines(path, encoding):
        if no <= skip or not line.strip():
            continue
        fields = line.split(sep) if sep is None else [f.strip() for f in line.split(sep)]
        if ncols is not None and len(fields) != ncols:
            raise DataError(f"{path}: line {no}: expected {ncols} columns, got {len(fields)}")
        out.append((no, fields))
    if not out:
        raise DataError(f"{path}: no data rows")
    return out


def floats(path: Path, rows_: list[tuple[int, list[str]]], cols: slice | list[int]) -> np.ndarray:
    """The ``cols`` of ``rows_`` as a float64 matrix; a non-number names file and line."""
    out = []
    for no, fields in rows_:
        sel = fields[cols] if isinstance(cols, slice) else [fields[c] for c in cols]
        try:
            out.append([float(v) for v in sel])
        except ValueError as exc:
            raise DataError(f"{path}: line {no}: non-numeric value ({exc})") from None
    arr = np.asarray(out, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise DataError(f"{path}: NaN or infinite values")
    return arr


def codes(values, classes=None) -> tuple[np.ndarray, list]:
    """Map labels to int64 codes 0..k-1 in sorted order (or the order of ``classes``)."""
    classes = sorted(set(values)) if classes is None else list(classes)
    index = {c: i for i, c in enumerate(classes)}
    try:
        return np.asarray([index[v] for v in values], dtype=np.int64), classes
    except KeyError as exc:
        raise DataError(f"unexpected label {exc.args[0]!r}; expected one of {classes}") from None
