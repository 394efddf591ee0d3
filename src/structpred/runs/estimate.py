"""A table's CPU before it runs: ``structpred runs estimate --experiment E``.

Each (dataset, method) group of the experiment's configured jobs is priced one way:

* **recorded**: some of its jobs are archived with their CPU seconds
  (:func:`structpred.report.archive_costs.job_costs`): their mean, times the group's jobs;
* **measured**: none is, and the job's inputs are split features: the experiment's
  :meth:`~structpred.papers.registry.Experiment.time_job` hook times one short fit on split 0
  and extrapolates it to the job (the matrix: ``splits x |grid| x n_passes x`` the CPU of a pass),
  after the workflow builds the features (``--omit-from run_job select_model``);
* **borrowed**: the cell is read from another table's runs (the matrix's M3N, CRF and M4N cells on
  M4N Table 1's tasks): nothing to fit here; the jobs it reads are that table's to run, and their
  recorded CPU is shown beside it (``source_cpu_hours``: NaN where one of them is not archived);
* **unpriced**: neither (a job of a protocol with its own inputs and nothing archived yet).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from structpred.errors import ConfigError
from structpred.papers.registry import get
from structpred.report.archive_costs import job_costs
from structpred.runs.archive import job_path, verify_commands

COLUMNS = ["dataset", "method", "jobs", "archived", "how", "seconds_per_job", "cpu_hours", "left_cpu_hours",
           "source_cpu_hours"]


def _features(project: Path, experiment: str, dataset: str, method: str) -> Path:
    """Split 0's feature file of the group's jobs, built by the workflow if missing."""
    path = project / "data" / "features" / experiment / dataset / "split0.npz"
    if not path.is_file():
        prepare = verify_commands([f"results/{job_path(experiment, dataset, method, 0)}"])[0]
        proc = subprocess.run(prepare, cwd=project, capture_output=True, text=True)
        if proc.returncode != 0 or not path.is_file():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise ConfigError(f"{experiment}: could not build {path}: {tail[0]}")
    return path


def estimate(project, archive, experiment: str, config: dict, *, datasets=None, methods=None,
             passes: int = 2, log=print) -> pd.DataFrame:
    """One row per (dataset, method) group of ``experiment``'s configured jobs (:data:`COLUMNS`):
    its jobs, how it is priced (module docstring), the CPU seconds of one job and the group's
    CPU-hours.  ``datasets``, ``methods``: only these groups; ``passes``: of each timed fit."""
    project, exp = Path(project).resolve(), get(experiment)
    groups: dict[tuple[str, str], list] = {}
    for d, m, k in exp.jobs(config):
        if (not datasets or d in datasets) and (not methods or m in methods):
            groups.setdefault((d, m), []).append(k)
    if not groups:
        raise ConfigError(f"{experiment}: no configured jobs on those datasets and methods")
    recorded = job_costs(archive) if Path(archive).is_dir() else pd.DataFrame(
        columns=["experiment", "dataset", "method", "split", "seconds"])
    mine = recorded[recorded["experiment"] == experiment].groupby(["dataset", "method"])["seconds"]
    means, archived = mine.mean(), mine.size()
    every = recorded.set_index(["experiment", "dataset", "method", "split"])["seconds"]
    rows = []
    for (d, m), splits in groups.items():
        n, source = len(splits), np.nan
        seconds, how = means.get((d, m), np.nan), "recorded"
        if "runs" in exp.job_needs(config, d, m):
            how, seconds = "borrowed", 0.0
            name = exp.runs_source(config, d, m)
            source = sum(every.get((name, dd, mm, str(k if kk is None else kk)), np.nan)
                         for k in splits for dd, mm, kk in exp.run_inputs(config, d, m)) / 3600
        elif np.isnan(seconds) and tuple(exp.job_needs(config, d, m)) == ("features",):
            features = _features(project, experiment, d, m)
            try:
                seconds = exp.time_job({"features": str(features)}, exp.settings(config, d, m), seed=config["seed"],
                                       dataset=d, method=m, passes=passes)
                how = "measured"
            except ConfigError as err:
                how = f"unpriced: {err}"
        elif np.isnan(seconds):
            how = "unpriced"
        done = int(archived.get((d, m), 0))
        log(f"{experiment}: {d} {m}: {n} jobs, {how}" + ("" if np.isnan(seconds) else f", {seconds:.1f} CPU-s a job"))
        rows.append({"dataset": d, "method": m, "jobs": n, "archived": done, "how": how, "seconds_per_job": seconds,
                     "cpu_hours": n * seconds / 3600, "left_cpu_hours": max(n - done, 0) * seconds / 3600,
                     "source_cpu_hours": source})
    return pd.DataFrame(rows, columns=COLUMNS)
