"""The per-split result file every training job writes (the workflow's path contract).

``results/{experiment}/{dataset}/{method}/split{k}.csv`` holds tidy rows with the columns
below; the report aggregates the rows with ``selected == True`` over splits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from structpred.io import atomic_open

COLUMNS = ["experiment", "task", "dataset", "method", "split", "lam", "selected",
           "metric", "value", "reference", "detail"]


def select_first_min(values) -> int:
    """Model selection shared by every experiment: the index of the lowest value (ties: the
    first, i.e. the first lambda of the grid)."""
    return int(np.argmin(np.asarray(values, dtype=float)))


def make_rows(records: list[dict]) -> pd.DataFrame:
    """DataFrame with :data:`COLUMNS` (missing optional fields empty), then any columns of an
    experiment's own key (``Experiment.key``) in the order the records give them."""
    frame = pd.DataFrame.from_records(records)
    for col in COLUMNS:
        if col not in frame:
            frame[col] = pd.NA
    return frame[COLUMNS + [c for c in frame.columns if c not in COLUMNS]]


def csv_text(frame: pd.DataFrame) -> str:
    """``frame`` as CSV text with a fixed float format, so equal runs give equal bytes."""
    return frame.to_csv(index=False, float_format="%.10g", lineterminator="\n")


def write_csv(frame: pd.DataFrame, path: str | Path) -> None:
    """Write :func:`csv_text` of ``frame`` atomically."""
    with atomic_open(path, "w", newline="") as fh:
        fh.write(csv_text(frame))


def read_results(paths) -> pd.DataFrame:
    """Concatenate per-split result files."""
    frames = [pd.read_csv(p, keep_default_na=True) for p in paths]
    return pd.concat(frames, ignore_index=True) if frames else make_rows([])
