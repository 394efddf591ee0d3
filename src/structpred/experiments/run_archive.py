"""The run archive (``runs/<experiment>/<dataset>/<method>/split<k>.csv``): what the committed
tables were computed from, and what they cost.

Every job file holds its tidy rows; its ``seconds`` rows are the fitting time it recorded (one
per lambda for the M4N tables, one per repetition for QS's robust regression, one per job
elsewhere), and since 2026-11-27 their ``detail`` names the CPU they ran on (:func:`cpu_model`).
:func:`cost_table` sums them: ``structpred runs cost`` prints it, and the README's costs come
from it.  A job without a ``seconds`` row (the AGM emotion tables) counts as untimed, never as 0.
"""

from __future__ import annotations

import platform
from pathlib import Path

import pandas as pd

from structpred.errors import ConfigError

LEVELS = ("experiment", "method", "dataset")


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def job_files(archive) -> list[Path]:
    """Every job file of the archive (``<experiment>/<dataset>/<method>/split<k>.csv``)."""
    root = Path(archive)
    if not root.is_dir():
        raise ConfigError(f"no run archive at {root}")
    return sorted(p for p in root.glob("*/*/*/split*.csv") if not p.name.endswith(".history.csv"))


def job_costs(archive) -> pd.DataFrame:
    """One row per job: experiment, dataset, method, split, its summed ``seconds`` (NaN: untimed)
    and the CPU models its seconds rows name."""
    records = []
    for path in job_files(archive):
        experiment, dataset, method = path.parts[-4:-1]
        rows = pd.read_csv(path, usecols=lambda c: c in ("metric", "value", "detail"), keep_default_na=False)
        timed = rows[rows["metric"] == "seconds"]
        cpus = sorted({str(d) for d in timed.get("detail", []) if str(d)})
        records.append({"experiment": experiment, "dataset": dataset, "method": method,
                        "split": path.stem.removeprefix("split"),
                        "seconds": float(pd.to_numeric(timed["value"]).sum()) if len(timed) else float("nan"),
                        "cpu": "; ".join(cpus)})
    return pd.DataFrame.from_records(records, columns=["experiment", "dataset", "method", "split", "seconds", "cpu"])


def cost_table(archive, by: str = "experiment") -> pd.DataFrame:
    """CPU cost per group (``by``: experiment, method = experiment and method, dataset = experiment,
    method and dataset): jobs, timed jobs, CPU-hours of the timed ones, and the CPU models recorded."""
    if by not in LEVELS:
        raise ConfigError(f"unknown grouping {by!r}; known: {', '.join(LEVELS)}")
    jobs = job_costs(archive)
    keys = list(LEVELS[: LEVELS.index(by) + 1])
    grouped = jobs.groupby(keys, sort=True)
    out = grouped.agg(jobs=("split", "size"), timed_jobs=("seconds", "count"),
                      cpu_hours=("seconds", lambda s: round(float(s.sum()) / 3600, 2) if s.notna().any()
                                 else float("nan")),
                      cpu=("cpu", lambda c: "; ".join(sorted({x for v in c for x in v.split("; ") if x}))))
    return out.reset_index()
