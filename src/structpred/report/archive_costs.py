"""The run archive's job files and the cost each recorded: the readers the report and the run
commands share (``runs/<experiment>/<dataset>/<method>/split<k>.csv`` with its numerics record
``split<k>.numerics.json`` beside it, :mod:`structpred.runs.numerics`)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd

from structpred.errors import ConfigError


def record_path(job_file) -> Path:
    """The numerics record beside a job file."""
    return Path(str(job_file).removesuffix(".csv") + ".numerics.json")


def job_files(archive, experiment: str = "*") -> list[Path]:
    """Every job file of the archive (``<experiment>/<dataset>/<method>/split<k>.csv``), or of one
    ``experiment``'s."""
    root = Path(archive)
    if not root.is_dir():
        raise ConfigError(f"no run archive at {root}")
    return sorted(p for p in root.glob(f"{experiment}/*/*/split*.csv") if not p.name.endswith(".history.csv"))


def _job_record(job_file) -> dict:
    """A job's numerics record (``{}`` where it has none)."""
    path = record_path(job_file)
    rec = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    return rec if isinstance(rec, dict) else {}


def job_cpu_seconds(job_file) -> float:
    """The CPU seconds a job's numerics record keeps (:mod:`structpred.runs.job_cpu`); NaN where it
    keeps none, or only part of them (a job that resumed a stopped run)."""
    rec = _job_record(job_file)
    cpu = None if rec.get("cpu_partial") else rec.get("cpu_seconds")
    return float("nan") if cpu is None else float(cpu)


def job_fit_threads(job_file) -> int:
    """The threads each of a job's fits ran on, from its numerics record (``fit_threads``; 1 where
    it keeps none: its fits ran on one thread, or side by side)."""
    return int(_job_record(job_file).get("fit_threads", 1))


def _seconds_rows(job_file) -> tuple[list[float], list[str]]:
    """The values of a job file's ``seconds`` rows and the CPU models (``detail``) they name, read
    with the csv module: every snakemake run in the project reads all of the archive's job files
    (its plan, from their recorded seconds); :func:`job_costs` over the 5511 of 2026-12-01 took 4.4
    CPU-s with pandas, 1.5 with this (AMD EPYC Zen 4)."""
    with open(job_file, newline="", encoding="utf-8") as fh:
        timed = [row for row in csv.DictReader(fh) if row.get("metric") == "seconds"]
    return [float(row["value"]) for row in timed], sorted({row["detail"] for row in timed if row.get("detail")})


def job_costs(archive, experiment: str = "*") -> pd.DataFrame:
    """One row per job (of ``experiment``'s, or of all): experiment, dataset, method, split, its cost in ``seconds`` (NaN: untimed),
    what they measure (``measure``: ``cpu``, the job's CPU seconds from its numerics record, else
    ``wall``, its summed ``seconds`` rows, wall time that a busy machine inflates) and the CPU models
    its seconds rows name."""
    records = []
    for path in job_files(archive, experiment):
        name, dataset, method = path.parts[-4:-1]
        values, cpus = _seconds_rows(path)
        cpu = job_cpu_seconds(path)
        wall = float(np.sum(values)) if values else float("nan")
        records.append({"experiment": name, "dataset": dataset, "method": method,
                        "split": path.stem.removeprefix("split"),
                        "seconds": wall if np.isnan(cpu) else cpu,
                        "measure": "" if np.isnan(cpu) and np.isnan(wall) else ("wall" if np.isnan(cpu) else "cpu"),
                        "cpu": "; ".join(cpus)})
    return pd.DataFrame.from_records(records, columns=["experiment", "dataset", "method", "split", "seconds",
                                                      "measure", "cpu"])
