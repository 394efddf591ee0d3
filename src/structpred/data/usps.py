"""Parser of the USPS digits (ESL zip.train.gz / zip.test.gz; QS Table 2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from structpred.data.tables import floats, rows
from structpred.errors import DataError


def parse_usps(raw: Path) -> dict[str, np.ndarray]:
    """``X`` (9298, 256) float64 in [-1, 1] (16x16 row-major), ``y`` int64 0..9,
    ``part`` (9298,) unicode: 7291 "train" then 2007 "test"."""
    Xs, ys, parts = [], [], []
    for name in ("train", "test"):
        path = raw / f"zip.{name}.gz"
        r = rows(path, 257, None)
        a = floats(path, r, slice(0, 257))
        if np.any(a[:, 0] != np.rint(a[:, 0])) or a[:, 0].min() < 0 or a[:, 0].max() > 9:
            raise DataError(f"{path}: digit labels outside 0..9")
        if a[:, 1:].min() < -1 or a[:, 1:].max() > 1:
            raise DataError(f"{path}: pixel values outside [-1, 1]")
        Xs.append(a[:, 1:])
        ys.append(a[:, 0].astype(np.int64))
        parts += [name] * len(a)
    return {"X": np.vstack(Xs), "y": np.concatenate(ys), "part": np.asarray(parts, dtype=str)}
