"""Numbers the papers report (config/references.yaml): the report's comparison column only."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from structpred.errors import ConfigError

KEY = ["task", "dataset", "method", "metric"]


def load_references(path: str | Path, experiment: str, key=KEY) -> pd.DataFrame:
    """Reference rows of one experiment as a DataFrame with columns ``key`` (the experiment's
    table key, by default :data:`KEY`) + ['reference']."""
    key = list(key)
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh) or {}
    rows = data.get(experiment, []) or []
    for row in rows:
        missing = [k for k in key + ["value"] if k not in row]
        if missing:
            raise ConfigError(f"{path}: a {experiment} reference lacks {missing}: {row}")
    frame = pd.DataFrame.from_records(rows, columns=key + ["value"])
    frame = frame.rename(columns={"value": "reference"})
    if frame.duplicated(key).any():
        raise ConfigError(f"{path}: duplicate references in {experiment}")
    return frame
