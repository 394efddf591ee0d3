"""The report's figures as each experiment draws them (its registry hooks): the summary figure from
its tidy table, and for experiments of training curves, the curve table from every job's
per-epoch history and each curve figure from that table."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from structpred.papers.registry import get
from structpred.tables.results import write_csv

log = logging.getLogger(__name__)


def experiment_figure(experiment: str, table_path, path, config: dict | None = None) -> None:
    """The figure of ``experiment`` from its tidy table (the methods' settings from ``config``; the
    paired tests beside the table, ``<name>_tests.csv``, where the experiment's figure reads them)."""
    exp, table_path = get(experiment), Path(table_path)
    extra = {"tests": pd.read_csv(table_path.with_name(f"{table_path.stem}_tests.csv"))} if exp.figure_reads_tests else {}
    exp.figure(pd.read_csv(table_path), path, config or {}, **extra)
    log.info("wrote %s", path)


def write_curve_table(experiment: str, history_paths, path) -> pd.DataFrame:
    """Concatenate the histories (empty files skipped) and write the experiment's curve table."""
    frames = [pd.read_csv(p) for p in history_paths]
    frames = [f for f in frames if len(f)]
    histories = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    table = get(experiment).curve_table(histories)
    write_csv(table, path)
    log.info("%s: %d curve rows from %d histories", experiment, len(table), len(frames))
    return table


def write_curve_figure(experiment: str, panel: str, curves_path, path) -> None:
    get(experiment).curve_figure(panel, pd.read_csv(curves_path), path)
    log.info("wrote %s", path)
