"""Parsers of the UCI-style tables of M4N Table 1: multi-class ("mc") and ordinal ("ord").

Each parser takes the verified raw folder of its source and returns ``X`` (n, d) float64
and ``y`` (n,) int64 in 0..k-1; ordinal parsers also return ``target`` (n,) float64, the raw
regression target that :func:`~structpred.data.discretize.equal_frequency_bins` cuts into
the paper's k bins.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from structpred.data.discretize import equal_frequency_bins
from structpred.data.tables import codes, floats, rows
from structpred.errors import DataError

log = logging.getLogger(__name__)


def _label_last(path: Path, ncols: int, sep: str | None = None, classes=None) -> dict:
    r = rows(path, ncols, sep)
    y, _ = codes([f[-1] for _, f in r], classes)
    return {"X": floats(path, r, slice(0, ncols - 1)), "y": y}


def parse_iris(raw: Path) -> dict[str, np.ndarray]:
    """iris.data: 4 features + species name; classes in sorted name order."""
    return _label_last(raw / "iris.data", 5, ",")


def parse_wine(raw: Path) -> dict[str, np.ndarray]:
    """wine.data: class 1..3 first, then 13 features."""
    path = raw / "wine.data"
    r = rows(path, 14, ",")
    y, _ = codes([f[0] for _, f in r], ["1", "2", "3"])
    return {"X": floats(path, r, slice(1, 14)), "y": y}


def parse_segment(raw: Path) -> dict[str, np.ndarray]:
    """segment.dat: 19 features + class 1..7 (brickface, sky, foliage, cement, window, path, grass)."""
    return _label_last(raw / "segment.dat", 20, None, [str(c) for c in range(1, 8)])


def parse_vehicle(raw: Path) -> dict[str, np.ndarray]:
    """xaa.dat..xai.dat concatenated (CRLF, trailing spaces): 18 features + bus/opel/saab/van."""
    Xs, labels = [], []
    for name in [f"xa{c}.dat" for c in "abcdefghi"]:
        path = raw / name
        r = rows(path, 19, None)
        Xs.append(floats(path, r, slice(0, 18)))
        labels += [f[18] for _, f in r]
    y, _ = codes(labels, ["bus", "opel", "saab", "van"])
    return {"X": np.vstack(Xs), "y": y}


def parse_satimage(raw: Path) -> dict[str, np.ndarray]:
    """sat.trn only (the paper's 4435 rows): 36 features; classes 1,2,3,4,5,7 -> 0..5."""
    return _label_last(raw / "sat.trn", 37, None, ["1", "2", "3", "4", "5", "7"])


def parse_letter(raw: Path) -> dict[str, np.ndarray]:
    """letter-recognition.data: letter A..Z first, then 16 integer features (all 20000 rows)."""
    path = raw / "letter-recognition.data"
    r = rows(path, 17, ",")
    y, _ = codes([f[0] for _, f in r], [chr(c) for c in range(65, 91)])
    return {"X": floats(path, r, slice(1, 17)), "y": y}


def parse_mfeat(raw: Path) -> dict[str, np.ndarray]:
    """mfeat-fac.txt: label 1..10 first (digit = label - 1), then the 216 fac features."""
    path = raw / "mfeat-fac.txt"
    r = rows(path, 217, None)
    y, _ = codes([f[0] for _, f in r], [str(c) for c in range(1, 11)])
    return {"X": floats(path, r, slice(1, 217)), "y": y}


# --------------------------------------------------------------------------- ordinal

def _ordinal(X: np.ndarray, target: np.ndarray, k: int) -> dict[str, np.ndarray]:
    return {"X": X, "y": equal_frequency_bins(target, k), "target": target.astype(np.float64)}


def _drop_missing(path: Path, r: list, cols: slice | list[int]) -> list:
    """Rows of ``r`` without '?' in ``cols`` (logged)."""
    keep = []
    for no, f in r:
        sel = f[cols] if isinstance(cols, slice) else [f[c] for c in cols]
        if "?" in sel:
            log.info("%s: line %d dropped ('?' value)", path, no)
        else:
            keep.append((no, f))
    return keep


def parse_wisconsin(raw: Path) -> dict[str, np.ndarray]:
    """wpbc.data: id, outcome, time (target), 30 features, tumour size, lymph status.

    The 4 rows with '?' lymph status are dropped; id and outcome are not features.
    5 equal-frequency bins of ``time``.
    """
    path = raw / "wpbc.data"
    r = _drop_missing(path, rows(path, 35, ","), slice(2, 35))
    return _ordinal(floats(path, r, slice(3, 35)), floats(path, r, [2])[:, 0], 5)


def parse_stocks(raw: Path) -> dict[str, np.ndarray]:
    """stocks.data: target FIRST, then 9 features; 5 equal-frequency bins."""
    path = raw / "stocks.data"
    r = rows(path, 10, ",")
    return _ordinal(floats(path, r, slice(1, 10)), floats(path, r, [0])[:, 0], 5)


def parse_machine(raw: Path) -> dict[str, np.ndarray]:
    """machine.data: vendor, model, MYCT..CHMAX (6 features), PRP (target), ERP (excluded)."""
    path = raw / "machine.data"
    r = rows(path, 10, ",")
    return _ordinal(floats(path, r, slice(2, 8)), floats(path, r, [8])[:, 0], 10)


ABALONE_SEX = ("M", "F", "I")


def parse_abalone(raw: Path) -> dict[str, np.ndarray]:
    """abalone.data: sex one-hot (columns M, F, I) + 7 measurements = 10 features; rings."""
    path = raw / "abalone.data"
    r = rows(path, 9, ",")
    sex, _ = codes([f[0] for _, f in r], ABALONE_SEX)
    X = np.hstack([np.eye(3)[sex], floats(path, r, slice(1, 8))])
    return _ordinal(X, floats(path, r, [8])[:, 0], 10)


def parse_auto(raw: Path) -> dict[str, np.ndarray]:
    """auto-mpg.data: mpg (target), cylinders..origin (7 features), TAB, quoted car name.

    The 6 rows with horsepower '?' are dropped; the car name is not a feature.
    """
    path = raw / "auto-mpg.data"
    r = []
    for no, f in rows(path, 2, "\t"):
        nums = f[0].split()
        if len(nums) != 8:
            raise DataError(f"{path}: line {no}: expected 8 numeric columns, got {len(nums)}")
        r.append((no, nums))
    r = _drop_missing(path, r, slice(0, 8))
    return _ordinal(floats(path, r, slice(1, 8)), floats(path, r, [0])[:, 0], 10)
