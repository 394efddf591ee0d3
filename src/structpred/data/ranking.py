"""Parser of the label-ranking csv files (Cheng & Huellermeier benchmarks via scikit-lr).

Format: first line ``n,d,k``; then n lines of d features followed by k integers, the rank
position of label j (1 = top). Returned ``Y[i, j]`` is that position 0-based, so each row
is a permutation of 0..k-1 (validated).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from structpred.data.tables import floats, lines, rows
from structpred.errors import DataError


def parse_label_ranking(path: Path) -> dict[str, np.ndarray]:
    """``X`` (n, d) float64 and ``Y`` (n, k) int64 0-based rank positions."""
    first = next(iter(lines(path)), (1, ""))[1]
    try:
        n, d, k = (int(v) for v in first.split(","))
    except ValueError:
        raise DataError(f"{path}: line 1: expected header 'n,d,k', got {first!r}") from None
    r = rows(path, d + k, ",", skip=1)
    if len(r) != n:
        raise DataError(f"{path}: header announces {n} rows, found {len(r)}")
    X = floats(path, r, slice(0, d))
    Yf = floats(path, r, slice(d, d + k))
    Y = Yf.astype(np.int64) - 1
    ok = np.all(np.sort(Y, axis=1) == np.arange(k), axis=1) & np.all(Yf == Y + 1, axis=1)
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise DataError(f"{path}: line {r[bad][0]}: target is not a permutation of 1..{k}")
    return {"X": X, "Y": Y}


def ranking_parser(name: str):
    """A parse function reading ``<raw>/<name>.csv``."""

    def parse(raw: Path) -> dict[str, np.ndarray]:
        return parse_label_ranking(raw / f"{name}.csv")

    parse.__doc__ = f"label_ranking/{name}.csv -> X, Y (0-based rank positions)."
    return parse
